"""Opening connections against a small listen backlog (`Pool._dial`): an attempt that hangs
(its SYN dropped) or is refused while others to the same origin succeed is made again at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from moscopt.lm import http11
from moscopt.lm.http11 import CONNECT_RETRIES, HTTPError, Pool


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()


def scripted_dialer(monkeypatch: pytest.MonkeyPatch, script: list[str]) -> list[str]:
    """`asyncio.open_connection` as http11 calls it: the n-th attempt does `script[n]` (`ok`,
    `hang`: never completes, as an attempt whose SYN was dropped; `refuse`), then `ok`."""
    real = asyncio.open_connection
    attempts: list[str] = []

    async def dial(host: str, port: int, **kwargs: Any) -> Any:
        what = script[len(attempts)] if len(attempts) < len(script) else "ok"
        attempts.append(what)
        if what == "hang":
            await asyncio.sleep(3600)
        if what == "refuse":
            raise ConnectionRefusedError(111, "Connection refused")
        return await real(host, port, **kwargs)

    monkeypatch.setattr(http11.asyncio, "open_connection", dial)
    return attempts


def test_a_hanging_attempt_is_made_again_once_another_connection_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four requests at once: the first attempt connects, the next two hang; they are given up
    within the floor (0.05 s) after the first connection, not after TCP's second."""
    attempts = scripted_dialer(monkeypatch, ["ok", "hang", "hang", "ok"])

    async def main() -> float:
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"
        pool = Pool(url, limit=4)
        loop = asyncio.get_running_loop()
        start = loop.time()
        done = await asyncio.gather(*(pool.post(url, [], b"{}", timeout=10) for _ in range(4)))
        assert [r.content for r in done] == [b"ok"] * 4
        pool.close()
        server.close()
        return loop.time() - start

    span = asyncio.run(main())
    assert attempts.count("hang") == 2 and len(attempts) == 6  # two hung, two made again
    assert span < 0.9  # TCP would have sent the dropped attempts again after 1 s


def test_a_refused_attempt_is_made_again_only_where_the_server_has_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    attempts = scripted_dialer(monkeypatch, ["refuse"])

    async def refused_first() -> None:
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"
        with pytest.raises(HTTPError, match="cannot connect"):
            await Pool(url, limit=2).post(url, [], b"{}", timeout=10)
        server.close()

    asyncio.run(refused_first())  # nothing here ever answered: the server is not there
    assert attempts == ["refuse"]
    attempts = scripted_dialer(monkeypatch, ["ok", "refuse"])

    async def refused_later() -> None:
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"
        pool = Pool(url, limit=2)
        await pool.post(url, [], b"{}", timeout=10)
        first = pool._idle.pop()  # the next request needs a connection of its own
        await pool.post(url, [], b"{}", timeout=10)
        first.close()
        pool.close()
        server.close()

    asyncio.run(refused_later())
    assert attempts == ["ok", "refuse", "ok"]
    attempts = scripted_dialer(monkeypatch, ["ok", "refuse", "refuse"])

    async def refused_twice() -> None:  # the server went down: found down at once
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"
        pool = Pool(url, limit=2)
        await pool.post(url, [], b"{}", timeout=10)
        pool._idle.pop().close()
        with pytest.raises(HTTPError, match="cannot connect"):
            await pool.post(url, [], b"{}", timeout=10)
        server.close()

    asyncio.run(refused_twice())
    assert attempts == ["ok", "refuse", "refuse"]


def test_the_last_attempt_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attempts that all hang are given up CONNECT_RETRIES times; the last one waits until the
    request's own timeout."""
    attempts = scripted_dialer(monkeypatch, ["ok"] + ["hang"] * 20)

    async def main() -> None:
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"
        pool = Pool(url, limit=2)
        await pool.post(url, [], b"{}", timeout=10)
        for connection in pool._idle:
            connection.close()
        pool._idle.clear()
        with pytest.raises(TimeoutError):
            await pool.post(url, [], b"{}", timeout=1.5)
        server.close()

    asyncio.run(main())
    assert len(attempts) == 1 + CONNECT_RETRIES + 1
