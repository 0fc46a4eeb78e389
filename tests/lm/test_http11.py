"""The keep-alive HTTP/1.1 pool under the direct transport: framing (length, chunked), reuse,
a server that closes idle connections, answers cut short, the concurrency bound, proxies.

Each test runs a scripted asyncio server on loopback that answers raw bytes, so the cases a
well-behaved fake server never produces (a chunked body, a close mid-body) are exact."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from moscopt.lm.http11 import HTTPError, Origin, Pool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(the head, the body) of one request with a Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length)


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


async def serve(handler: Handler) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/chat/completions"


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 20))


def test_sequential_requests_share_one_connection_and_bodies_round_trip() -> None:
    connections: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while True:
            try:
                head, body = await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
            assert b"\r\nhost: 127.0.0.1:" in head.lower()
            writer.write(ok(body[::-1], b"Retry-After: 3\r\n"))
            await writer.drain()

    async def main() -> None:
        server, url = await serve(handler)
        pool = Pool(url, limit=4)
        for i in range(5):
            r = await pool.post(url, [("X-Test", "1")], b"abc%d" % i, timeout=5)
            assert (r.status, r.content, r.headers["retry-after"]) == (200, b"%dcba" % i, "3")
        pool.close()
        server.close()

    run(main())
    assert len(connections) == 1


def test_a_chunked_answer_is_read_whole() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        await writer.drain()

    async def main() -> None:
        server, url = await serve(handler)
        r = await Pool(url, limit=1).post(url, [], b"{}", timeout=5)
        assert r.content == b"hello world"
        server.close()

    run(main())


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    connections: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await read_request(reader)
        writer.write(ok(b"{}"))  # keep-alive by default, then the server drops it anyway
        await writer.drain()
        writer.close()

    async def main() -> None:
        server, url = await serve(handler)
        pool = Pool(url, limit=1)
        for _ in range(3):
            assert (await pool.post(url, [], b"{}", timeout=5)).content == b"{}"
            await asyncio.sleep(0.05)  # the close reaches the client
        server.close()

    run(main())
    assert len(connections) == 3


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",  # cut mid-body
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",  # cut mid-chunk
        b"NOT HTTP AT ALL\r\n\r\n",  # a malformed status line
        b"",  # closed without a word
    ],
)
def test_an_answer_cut_short_or_malformed_is_an_http_error(answer: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        writer.close()

    async def main() -> None:
        server, url = await serve(handler)
        with pytest.raises(HTTPError):
            await Pool(url, limit=1).post(url, [], b"{}", timeout=5)
        server.close()

    run(main())


def test_refused_and_timed_out() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(10)

    async def main() -> None:
        server, url = await serve(silent)
        with pytest.raises(TimeoutError):
            await Pool(url, limit=1).post(url, [], b"{}", timeout=0.2)
        server.close()
        await server.wait_closed()
        with pytest.raises(HTTPError, match="cannot connect"):
            await Pool(url, limit=1).post(url, [], b"{}", timeout=5)

    run(main())


def test_at_most_limit_requests_are_in_flight() -> None:
    active, peak = [0], [0]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            await asyncio.sleep(0.02)
            active[0] -= 1
            writer.write(ok(b"{}"))
            await writer.drain()

    async def main() -> None:
        server, url = await serve(handler)
        pool = Pool(url, limit=3)
        await asyncio.gather(*(pool.post(url, [], b"{}", timeout=5) for _ in range(12)))
        server.close()

    run(main())
    assert peak[0] == 3


def test_an_http_proxy_gets_the_absolute_url_and_its_credentials() -> None:
    heads: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await read_request(reader)
        heads.append(head)
        writer.write(ok(b"via proxy"))
        await writer.drain()

    async def main() -> None:
        server, proxy_url = await serve(proxy)
        proxy_root = proxy_url.replace("http://", "http://user:p%40ss@").split("/v1")[0]
        target = "http://models.internal:8000/v1/chat/completions"
        r = await Pool(target, limit=1, proxy=proxy_root).post(target, [], b"{}", timeout=5)
        assert r.content == b"via proxy"
        server.close()

    run(main())
    (head,) = heads
    assert head.startswith(b"POST http://models.internal:8000/v1/chat/completions HTTP/1.1")
    assert b"Proxy-Authorization: Basic dXNlcjpwQHNz" in head  # user:p@ss
    assert b"host: models.internal:8000" in head.lower()


def test_an_https_origin_through_a_proxy_asks_for_a_tunnel_and_a_refusal_is_an_error() -> None:
    heads: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async def main() -> None:
        server, proxy_url = await serve(proxy)
        target = "https://api.example.com/v1/chat/completions"
        pool = Pool(target, limit=1, proxy=proxy_url.split("/v1")[0])
        with pytest.raises(HTTPError, match="407"):
            await pool.post(target, [], b"{}", timeout=5)
        server.close()

    run(main())
    assert heads[0].startswith(b"CONNECT api.example.com:443 HTTP/1.1\r\n")


def test_origins() -> None:
    assert Origin.of("https://api.example.com/v1").authority == "api.example.com"
    assert Origin.of("http://[::1]:8000/v1").authority == "[::1]:8000"
    assert Origin.of("http://localhost/v1").port == 80
    with pytest.raises(ValueError):
        Origin.of("localhost:8000/v1")
