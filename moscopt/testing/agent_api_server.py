"""A loopback server speaking the two APIs real coding agents call, for recording their
transcripts on this machine (`scripts/record_sessions.py`): nothing leaves 127.0.0.1.

- `POST /v1/messages` (Anthropic Messages, what Claude Code calls with `ANTHROPIC_BASE_URL`):
  a JSON message, or with `"stream": true` the server-sent events `message_start`,
  `content_block_start`, `content_block_delta` (`text_delta`), `content_block_stop`,
  `message_delta` (stop reason, usage), `message_stop`. `POST /v1/messages/count_tokens`
  answers `{"input_tokens": N}`.
- `POST /v1/responses` (OpenAI Responses, what Codex calls through a custom model provider):
  with `"stream": true` the events `response.created`, `response.output_item.added`,
  `response.output_text.delta`, `response.output_item.done`, `response.completed`; without,
  the response object.
- `POST /v1/chat/completions` (OpenAI chat) for completeness.

Answers only text (never a tool call): `responder(last_user_text) -> str` (default: echo), or
`body_responder(body) -> str` when the answer depends on more of the request (the skills an
agent lists in its instructions, its working folder).
Every request is logged (`requests`: path and parsed body); `secrets_seen(values)` says which
of `values` appeared in any request body (the check that nothing secret went out).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from moscopt.testing.fake_http import LoopbackHTTPServer

Responder = Callable[[str], str]


def _text_of(content: Any) -> str:
    """The text of a message's content, without the blocks a CLI inserts (`<...>` tags)."""
    if isinstance(content, str):
        return "" if content.lstrip().startswith("<") else content
    if isinstance(content, list):
        return "\n".join(_text_of(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a Messages, Responses or chat request."""
    items = body.get("messages")
    if items is None:
        items = body.get("input")
    if isinstance(items, str):
        return items
    for item in reversed(items if isinstance(items, list) else []):
        if isinstance(item, dict) and item.get("role") == "user":
            text = _text_of(item.get("content")).strip()
            if text:
                return text
    return ""


def _words(text: str) -> int:
    return max(1, len(text.split()))


class AgentAPIServer:
    """See the module docstring. A context manager; `url` is `http://127.0.0.1:<port>`."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        body_responder: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.responder = responder or (lambda text: f"echo: {text}")
        self.body_responder = body_responder
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.raw: list[bytes] = []
        self._lock = threading.Lock()
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> AgentAPIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def secrets_seen(self, values: Iterable[str]) -> list[str]:
        with self._lock:
            blob = b"".join(self.raw)
        return [v for v in values if v.encode() in blob]

    def answer(self, path: str, body: dict[str, Any]) -> str:
        with self._lock:
            self.requests.append((path, body))
        if self.body_responder is not None:
            return self.body_responder(body)
        return self.responder(last_user_text(body))


def _sse(handler: BaseHTTPRequestHandler, events: list[tuple[str | None, dict[str, Any]]]) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        handler.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
    handler.wfile.flush()
    handler.close_connection = True


def _json(handler: BaseHTTPRequestHandler, data: dict[str, Any], status: int = 200) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def messages_events(body: dict[str, Any], text: str) -> list[tuple[str | None, dict[str, Any]]]:
    mid = f"msg_{uuid.uuid4().hex[:20]}"
    model = str(body.get("model", "loopback"))
    usage = {"input_tokens": _words(json.dumps(body)), "output_tokens": 0}
    message: dict[str, Any] = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": _words(text)},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def responses_events(body: dict[str, Any], text: str) -> list[tuple[str | None, dict[str, Any]]]:
    rid, iid = f"resp_{uuid.uuid4().hex[:20]}", f"msg_{uuid.uuid4().hex[:20]}"
    item = {
        "type": "message",
        "id": iid,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {
        "input_tokens": _words(json.dumps(body)),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": _words(text),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": _words(json.dumps(body)) + _words(text),
    }
    response = {"id": rid, "object": "response", "status": "completed", "output": [item]}
    started = {**response, "status": "in_progress", "output": []}
    return [
        ("response.created", {"type": "response.created", "response": started}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": []},
            },
        ),
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": iid,
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        (
            "response.completed",
            {"type": "response.completed", "response": {**response, "usage": usage}},
        ),
    ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        _json(self, {"object": "list", "data": [{"id": "loopback", "object": "model"}]})

    def do_POST(self) -> None:
        owner: AgentAPIServer = self.server.owner  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with owner._lock:
            owner.raw.append(raw)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            _json(self, {"error": {"message": "bad JSON"}}, 400)
            return
        path = self.path.split("?", 1)[0]
        if path.endswith("/messages/count_tokens"):
            _json(self, {"input_tokens": _words(raw.decode(errors="replace"))})
            return
        text = owner.answer(path, body)
        if path.endswith("/messages"):
            events = messages_events(body, text)
            if body.get("stream"):
                _sse(self, events)
            else:
                message: dict[str, Any] = {
                    **events[0][1]["message"],
                    "content": [{"type": "text", "text": text}],
                }
                _json(self, {**message, "stop_reason": "end_turn"})
        elif path.endswith("/responses"):
            events = responses_events(body, text)
            if body.get("stream", True):
                _sse(self, events)
            else:
                _json(self, events[-1][1]["response"])
        elif path.endswith("/chat/completions"):
            from moscopt.testing.fake_http import completion_body

            _json(self, completion_body(body, text, 0))
        else:
            _json(self, {"error": {"message": f"no route {path}"}}, 404)


# Proxies at a closed loopback port: a client that tried any address but the server's would fail
CLOSED_PROXIES = {
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


def codex_environment(codex_home: Path, url: str) -> dict[str, str]:
    """The variables that point `codex` at the server at `url`: a model provider of its own in
    `codex_home/config.toml` (written here), speaking the Responses API, a placeholder key."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "loopback-model"\nmodel_provider = "loopback"\n'
        "[model_providers.loopback]\n"
        f'name = "loopback"\nbase_url = "{url}/v1"\nenv_key = "LOOPBACK_API_KEY"\n'
        'wire_api = "responses"\n'
    )
    return {"CODEX_HOME": str(codex_home), "LOOPBACK_API_KEY": "loopback-key"}


def claude_environment(url: str) -> dict[str, str]:
    """The variables that point `claude` at the server at `url`, with its telemetry, error
    reports and updates off."""
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "loopback-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def cli_version(binary: str | Path) -> str:
    """What `binary --version` prints."""
    import subprocess

    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    return done.stdout.strip()
