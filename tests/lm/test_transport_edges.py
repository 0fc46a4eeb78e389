"""The direct transport's edges: a proxy it cannot dial, an https proxy, OpenAI's reasoning
models' token bound."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from moscopt.errors import UserError
from moscopt.lm import http11
from moscopt.lm.http11 import Pool
from moscopt.lm.reasoning import tokens_field
from moscopt.lm.transport import HTTPTransport


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy"])
def test_a_socks_proxy_in_the_environment_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "socks5://user:secret@127.0.0.1:1080")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(UserError, match=r"scheme 'socks5'.*http:// and https:// proxies") as e:
        HTTPTransport("openai/m", "http://models.internal:8000/v1", timeout=5, max_connections=1)
    assert "secret" not in str(e.value)
    monkeypatch.setenv("NO_PROXY", "models.internal")
    HTTPTransport("openai/m", "http://models.internal:8000/v1", timeout=5, max_connections=1)


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ("openai/gpt-4.1-mini", "max_tokens"),
        ("openai/gpt-5-mini", "max_completion_tokens"),
        ("openai/gpt-5.2", "max_completion_tokens"),
        ("openai/gpt-5-chat-latest", "max_tokens"),
        ("openai/o3-mini", "max_completion_tokens"),
        ("openai/o1", "max_completion_tokens"),
        ("openai/o9-my-finetune", "max_tokens"),  # looks like one; litellm's catalog says no
        ("openai/qwen3-8b", "max_tokens"),
        ("hosted_vllm/gpt-5-mini", "max_tokens"),
    ],
)
def test_the_token_bound_field_follows_litellms_rule(model: str, field: str) -> None:
    pytest.importorskip("litellm")
    assert tokens_field(model) == field


def test_a_reasoning_model_is_sent_max_completion_tokens() -> None:
    from moscopt.lm.base import LMRequest
    from moscopt.testing import FakeServer

    with FakeServer() as server:
        cases = (("openai/gpt-5-mini", "max_completion_tokens"), ("openai/m", "max_tokens"))
        for model, sent in cases:
            transport = HTTPTransport(model, server.url, timeout=10, max_connections=1)
            message = {"role": "user", "content": "hi"}
            request = LMRequest(model, (message,), temperature=1.0, top_p=1.0, max_tokens=77)
            asyncio.run(transport.asend(request))
            body = server.log[-1].body
            assert body[sent] == 77
            assert {"max_tokens", "max_completion_tokens"} - {sent} & set(body) == set()


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), and its key."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def test_an_https_proxy_is_dialled_with_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An http origin through an https:// proxy: the proxy's side is TLS, and it sees the
    request in absolute form with its credentials."""
    cert, key = make_certificate(tmp_path)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    client_side = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(http11, "_tls", client_side)
    heads: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nvia proxy")
        await writer.drain()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(proxy, "127.0.0.1", 0, ssl=server_side)
        port = server.sockets[0].getsockname()[1]
        target = "http://models.internal:8000/v1/chat/completions"
        pool = Pool(target, limit=1, proxy=f"https://u:p@127.0.0.1:{port}")
        response = await pool.post(target, [], b"{}", timeout=10)
        assert response.content == b"via proxy"
        server.close()

    asyncio.run(asyncio.wait_for(main(), 30))
    (head,) = heads
    assert head.startswith(b"POST http://models.internal:8000/v1/chat/completions HTTP/1.1")
    assert b"Proxy-Authorization: Basic dTpw" in head


def test_an_https_origin_through_an_https_proxy_runs_tls_inside_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONNECT over the proxy's TLS, then the origin's TLS inside the tunnel."""
    cert, key = make_certificate(tmp_path)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    monkeypatch.setattr(http11, "_tls", ssl.create_default_context(cafile=str(cert)))
    tunnels: list[bytes] = []

    async def origin(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\norigin")
        await writer.drain()
        writer.close()

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
        dst.close()

    async def main() -> None:
        target_server = await asyncio.start_server(origin, "127.0.0.1", 0, ssl=server_side)
        target_port = target_server.sockets[0].getsockname()[1]

        async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            tunnels.append(await reader.readuntil(b"\r\n\r\n"))
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        proxy_server = await asyncio.start_server(proxy, "127.0.0.1", 0, ssl=server_side)
        proxy_port = proxy_server.sockets[0].getsockname()[1]
        target = f"https://127.0.0.1:{target_port}/v1/chat/completions"
        pool = Pool(target, limit=1, proxy=f"https://127.0.0.1:{proxy_port}")
        response = await pool.post(target, [], b"{}", timeout=10)
        assert response.content == b"origin"
        pool.close()
        proxy_server.close()
        target_server.close()

    asyncio.run(asyncio.wait_for(main(), 30))
    assert tunnels[0].startswith(b"CONNECT 127.0.0.1:")
