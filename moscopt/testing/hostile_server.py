"""A hostile OpenAI-compatible endpoint on loopback: it answers each request with whatever bytes
`reply(body)` yields (a body too large, an endless chunked stream, JSON nested 100,000 deep, a
usage block with negative counts, the request's own Authorization header echoed back).

Runs in a thread (stdlib `socketserver`), one thread per connection; `stop()` closes it.
"""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

Reply = Callable[[dict[str, Any], dict[str, str]], Iterable[bytes]]


def response(body: bytes, *, status: int = 200, extra: str = "") -> Iterator[bytes]:
    yield (
        f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def completion(text: str, usage: dict[str, Any] | None = None) -> bytes:
    data = {
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": usage if usage is not None else {"prompt_tokens": 10, "completion_tokens": 5},
    }
    return json.dumps(data).encode()


def endless_chunks(chunk: bytes = b"x" * 65536) -> Iterator[bytes]:
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    while True:
        yield b"%x\r\n%s\r\n" % (len(chunk), chunk)


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        while True:
            line = self.rfile.readline()
            if not line:
                return
            headers: dict[str, str] = {}
            while (header := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            raw = self.rfile.read(int(headers.get("content-length", "0")))
            body = json.loads(raw) if raw else {}
            self.server.requests.append(headers)
            try:
                for part in self.server.reply(body, headers):
                    self.wfile.write(part)
                self.wfile.flush()
            except OSError:  # the client hung up (as it should on a body past its bound)
                return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    reply: Reply
    requests: list[dict[str, str]]


class HostileServer:
    """`with HostileServer(reply) as server:` then use `server.url` as the api_base."""

    def __init__(self, reply: Reply) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.reply = reply
        self._server.requests = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, str]]:
        return self._server.requests

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
