"""The OpenAI Batch API of the fake server (`moscopt.testing.fake_server` mounts it).

Routes, as the OpenAI SDK under litellm calls them:

- `POST /v1/files` (multipart: `purpose`, `file`): stores the upload, answers a file object;
- `POST /v1/batches` (`input_file_id`, `endpoint`, `completion_window`): creates a batch;
- `GET /v1/batches/{id}`: the batch; it stays `in_progress` for `polls` retrievals, then takes
  its outcome (`completed` by default; `script_batch("failed")` or `"expired"` for the next
  batches), computing its output file from the server's responder at that moment;
- `GET /v1/files/{id}/content`: a file's bytes (an upload, or a batch's output).

An expired batch answers the first half of its lines (as a real one answers what it finished);
a failed one answers none. `line_errors` names custom ids whose lines come back with a 500
error instead of an answer. Nothing here sends a chat completion: batches are counted apart
(`created`, `retrievals`) from the server's chat log.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from moscopt.testing.fake_http import completion_body, error_body, send_json, send_raw

BATCH_OUTCOMES = frozenset({"completed", "failed", "expired"})


@dataclass
class FakeBatch:
    """One batch as the fake server holds it."""

    id: str
    input_file_id: str
    lines: list[dict[str, Any]]
    outcome: str
    polls_left: int
    status: str = "validating"
    output_file_id: str | None = None
    retrievals: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        done = self.status in ("completed", "expired", "failed")
        answered = len(self.lines) if self.status == "completed" else 0
        if self.status == "expired":
            answered = len(self.lines) // 2
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": None,
            "created_at": 0,
            "completed_at": 0 if done else None,
            "request_counts": {
                "total": len(self.lines),
                "completed": answered,
                "failed": len(self.lines) - answered if done else 0,
            },
            "metadata": self.metadata or None,
        }


class FakeBatches:
    """The batch endpoints' state; `respond(body) -> text` answers one line's chat body."""

    def __init__(self, respond: Callable[[dict[str, Any]], str], *, polls: int = 1) -> None:
        self.respond = respond
        self.polls = polls  # retrievals that still see `in_progress` before the outcome
        self.line_errors: set[str] = set()
        self._lock = threading.Lock()
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, FakeBatch] = {}
        self._script: deque[str] = deque()
        self._ids = itertools.count(1)
        self.uploads = 0

    def script_batch(self, *outcomes: str) -> None:
        """The outcomes of the next batches created, in order (then `completed`)."""
        unknown = set(outcomes) - BATCH_OUTCOMES
        if unknown:
            raise ValueError(f"unknown batch outcome(s): {sorted(unknown)}")
        with self._lock:
            self._script.extend(outcomes)

    @property
    def created(self) -> list[FakeBatch]:
        with self._lock:
            return list(self._batches.values())

    def handles(self, path: str) -> bool:
        return path.startswith("/v1/files") or path.startswith("/v1/batches")

    # -- routes ----------------------------------------------------------------------------------

    def post(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        path = handler.path.split("?")[0].rstrip("/")
        if path == "/v1/files":
            self._upload(handler, raw)
        elif path == "/v1/batches":
            self._create(handler, raw)
        else:
            send_json(handler, 404, error_body("not found", "invalid_request_error"))

    def get(self, handler: BaseHTTPRequestHandler) -> None:
        parts = handler.path.split("?")[0].strip("/").split("/")
        if len(parts) == 3 and parts[:2] == ["v1", "batches"]:
            self._retrieve(handler, parts[2])
        elif len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content":
            with self._lock:
                data = self._files.get(parts[2])
            if data is None:
                send_json(handler, 404, error_body("no such file", "invalid_request_error"))
            else:
                send_raw(handler, 200, data, "application/octet-stream")
        else:
            send_json(handler, 404, error_body("not found", "invalid_request_error"))

    def _upload(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        fields = multipart_fields(handler.headers.get("Content-Type", ""), raw)
        if fields.get("purpose") != b"batch" or "file" not in fields:
            send_json(handler, 400, error_body("expected purpose=batch and a file", "bad_request"))
            return
        with self._lock:
            file_id = f"file-fake-{next(self._ids)}"
            self._files[file_id] = fields["file"]
            self.uploads += 1
        size = len(fields["file"])
        send_json(
            handler,
            200,
            {"id": file_id, "object": "file", "bytes": size, "created_at": 0,
             "filename": "input.jsonl", "purpose": "batch", "status": "processed"},
        )  # fmt: skip

    def _create(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        try:
            body = json.loads(raw)
            with self._lock:
                data = self._files[body["input_file_id"]]
            lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        except (ValueError, KeyError, TypeError):
            send_json(handler, 400, error_body("no such input file", "invalid_request_error"))
            return
        with self._lock:
            outcome = self._script.popleft() if self._script else "completed"
            batch = FakeBatch(
                id=f"batch_fake_{next(self._ids)}",
                input_file_id=body["input_file_id"],
                lines=lines,
                outcome=outcome,
                polls_left=self.polls,
                metadata=dict(body.get("metadata") or {}),
            )
            self._batches[batch.id] = batch
        send_json(handler, 200, batch.as_json())

    def _retrieve(self, handler: BaseHTTPRequestHandler, batch_id: str) -> None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is not None:
                batch.retrievals += 1
                if batch.status in ("validating", "in_progress"):
                    if batch.polls_left > 0:
                        batch.polls_left -= 1
                        batch.status = "in_progress"
                    else:
                        self._finish(batch)
        if batch is None:
            send_json(handler, 404, error_body("no such batch", "invalid_request_error"))
            return
        send_json(handler, 200, batch.as_json())

    def _finish(self, batch: FakeBatch) -> None:
        """Give `batch` its outcome and output file (the lock is held)."""
        batch.status = batch.outcome
        if batch.outcome == "failed":
            return
        half = len(batch.lines) // 2
        answered = batch.lines if batch.outcome == "completed" else batch.lines[:half]
        out = []
        for i, line in enumerate(answered):
            custom_id = line.get("custom_id")
            if custom_id in self.line_errors:
                error = error_body("the server had an error", "server_error")["error"]
                response = {"status_code": 500, "request_id": f"req_{i}", "body": {"error": error}}
            else:
                body = line.get("body") or {}
                reply = completion_body(body, self.respond(body), i)
                response = {"status_code": 200, "request_id": f"req_{i}", "body": reply}
            out.append({"id": f"batch_req_{i}", "custom_id": custom_id, "response": response,
                        "error": None})  # fmt: skip
        file_id = f"file-fake-{next(self._ids)}"
        self._files[file_id] = "".join(json.dumps(o) + "\n" for o in out).encode()
        batch.output_file_id = file_id


def multipart_fields(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The named parts of a `multipart/form-data` body."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    out: dict[str, bytes] = {}
    if not message.is_multipart():
        return out
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            out[name] = payload
    return out
