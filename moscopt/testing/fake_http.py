"""The wire shapes of the fake server: OpenAI-style chat completions and errors, sent over a
`BaseHTTPRequestHandler` (see `moscopt.testing.fake_server`)."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threaded loopback server for fakes. A client that hung up (as a cancelled or timed-out
    request does) is normal here, not an error: socketserver would print a traceback to stderr,
    which a test capturing the CLI's output would read as the command's own."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def completion_body(
    body: Any, text: str, index: int, cached_tokens: int | None = None
) -> dict[str, Any]:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    prompt_tokens = sum(
        len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict)
    )
    completion_tokens = len(text.split())
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": f"chatcmpl-fake-{index}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake") if isinstance(body, dict) else "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}}


def send_json(
    handler: BaseHTTPRequestHandler,
    status: int,
    obj: Any,
    headers: dict[str, str] | None = None,
) -> None:
    send_raw(handler, status, json.dumps(obj).encode(), "application/json", headers)


def send_raw(
    handler: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    content_type: str,
    headers: dict[str, str] | None = None,
) -> None:
    """One write of the status line, the headers and `data` (two would reach the client as two
    segments, and wake it twice)."""
    wire, head = handler.wfile, io.BytesIO()
    handler.wfile = head
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        message = head.getvalue() + data
    finally:
        handler.wfile = wire
    wire.write(message)
    wire.flush()


@dataclass
class ServerRequest:
    """One request as the server saw it."""

    index: int
    path: str
    body: Any
    outcome: str
    authorized: bool
    seconds: float = 0.0  # time spent in the handler, latency included
    arrived: float = 0.0  # wall-clock time (time.time()) the request arrived, for other processes


def echo(body: dict[str, Any]) -> str:
    """The default responder: echo the last user message."""
    messages = body.get("messages") or []
    users = [
        m.get("content", "") for m in messages if isinstance(m, dict) and m.get("role") == "user"
    ]
    last = users[-1] if users else ""
    return f"echo: {last if isinstance(last, str) else json.dumps(last)}"
