"""A loopback OpenAI-compatible chat server for end-to-end, concurrency and fault tests.

`FakeServer` serves `POST /v1/chat/completions` on a random port of 127.0.0.1 from its own
thread (stdlib `http.server`, one thread per connection, HTTP/1.1 keep-alive). It can:

- answer a fixed `latency` (seconds) after the request line arrived (the server's own parsing and
  the answer's making fall within it), with a reply made by `responder(body) -> str` (default:
  `"echo: <last user message>"`), with OpenAI-shaped `usage` (whitespace word counts);
- inject faults at `fault_rate`, drawn with a seeded `random.Random` from `faults`;
- play a script of outcomes for the next requests (`script("401")`), before any random draw;
- play a prefix cache (`prompt_cache=True`): a system message seen before is reported as
  `usage.prompt_tokens_details.cached_tokens` (as OpenAI's and vLLM's prefix caches do).

Outcomes: `ok`; `429` (with `Retry-After`), `500`, `503`; `401`, `403`, `404` (model not found);
`timeout` (hold the request `hang` seconds, then close without answering); `drop` (close the
connection without answering); `garbage` (200 with a body that is not JSON); `empty` (200 with
an empty `choices` list).

Every request is logged as a `ServerRequest` (outcome, parsed body, whether an Authorization
header was present, never its value). `max_in_flight`: the most requests at once (each from its
arrival until its answer starts out or its client hangs up). A context manager; `stop()` frees
held requests and connections at once (`start()` reopens its port); `batches`: `fake_batch`.

To keep the server's CPU out of a client's measurements, run it in its own process
(`moscopt.testing.loopback.ServerProcess`, or `python -m moscopt.testing.loopback --latency 0.1`,
which prints its base URL on the first line of stdout and serves until stdin closes);
`GET /_fake/stats` and `POST /_fake/reset` control it.
"""

from __future__ import annotations

import contextlib
import json
import random
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any

from moscopt.testing.fake_batch import FakeBatches
from moscopt.testing.fake_http import (
    LoopbackHTTPServer,
    ServerRequest,
    completion_body,
    echo,
    error_body,
    send_json,
    send_raw,
)

OUTCOMES = frozenset(
    {"ok", "429", "500", "503", "401", "403", "404", "timeout", "drop", "garbage", "empty"}
)
TRANSIENT_FAULTS = ("429", "500", "timeout", "drop")
STATS_PATH = "/_fake/stats"  # GET: counts as JSON (not logged)
RESET_PATH = "/_fake/reset"  # POST: forget the log

Responder = Callable[[dict[str, Any]], str]


class FakeServer:
    """Loopback OpenAI-compatible server; see the module docstring."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        faults: Iterable[str] = TRANSIENT_FAULTS,
        seed: int = 0,
        hang: float = 2.0,
        retry_after: str | None = "0",
        responder: Responder | None = None,
        prompt_cache: bool = False,
        batch_polls: int = 1,
    ) -> None:
        self.faults = tuple(faults)
        unknown = set(self.faults) - OUTCOMES
        if unknown:
            raise ValueError(f"unknown fault(s): {sorted(unknown)}")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError("fault_rate must be within [0, 1]")
        self.latency = latency
        self.fault_rate = fault_rate
        self.hang = hang
        self.retry_after = retry_after
        self.responder: Responder = responder or echo
        self.prompt_cache = prompt_cache
        self.batches = FakeBatches(lambda body: self.responder(body), polls=batch_polls)
        self._prefixes: set[str] = set()  # system messages seen (the simulated prefix cache)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._script: deque[str] = deque()
        self._log: list[ServerRequest] = []
        self._count = 0
        self._in_flight = 0
        self.max_in_flight = 0
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._last_port = 0
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> FakeServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self._last_port), _Handler)  # a restart: same port
        self._last_port = httpd.server_address[1]
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL to pass as `api_base` (ends in `/v1`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- control and inspection ------------------------------------------------------------------

    def script(self, *outcomes: str) -> None:
        """Force the outcomes of the next requests, in order."""
        unknown = set(outcomes) - OUTCOMES
        if unknown:
            raise ValueError(f"unknown outcome(s): {sorted(unknown)}")
        with self._lock:
            self._script.extend(outcomes)

    @property
    def log(self) -> list[ServerRequest]:
        """Requests in arrival order."""
        with self._lock:
            return sorted(self._log, key=lambda r: r.index)

    def count(self, outcome: str | None = None) -> int:
        """Requests seen (with the given outcome, if any)."""
        with self._lock:
            if outcome is None:
                return len(self._log)
            return sum(1 for r in self._log if r.outcome == outcome)

    def stats(self) -> dict[str, Any]:
        """Counts for a client in another process (also served at `GET /_fake/stats`)."""
        with self._lock:
            outcomes: dict[str, int] = {}
            for r in self._log:
                outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
            seconds = sorted(r.seconds for r in self._log)
            return {
                "requests": len(self._log),
                "outcomes": outcomes,
                "in_flight": self._in_flight,
                "max_in_flight": self.max_in_flight,
                "median_seconds": seconds[len(seconds) // 2] if seconds else None,
                # first arrival and last answer (time.time()): a client's busy span, as seen here
                "first_arrival": min((r.arrived for r in self._log), default=None),
                "last_done": max((r.arrived + r.seconds for r in self._log), default=None),
            }

    def reset(self) -> None:
        """Forget the log, the script and the in-flight maximum."""
        with self._lock:
            self._log.clear()
            self._script.clear()
            self._prefixes.clear()
            self.max_in_flight = self._in_flight

    # -- request handling (called from handler threads) ------------------------------------------

    def _next_outcome(self) -> tuple[int, str]:
        with self._lock:
            index = self._count
            self._count += 1
            if self._script:
                outcome = self._script.popleft()
            elif self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                outcome = self._rng.choice(self.faults)
            else:
                outcome = "ok"
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return index, outcome

    def _handle(self, handler: _Handler, raw: bytes) -> None:
        # from the request line's arrival (its headers and body were parsed since): `latency` is
        # the server's whole time to answer, its own parsing and building of the answer included
        started, arrived = handler.received
        index, outcome = self._next_outcome()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if not handler.path.rstrip("/").endswith("/chat/completions"):
            outcome = "404"
        elif not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            outcome = "bad_request"
        # Logged on arrival, so a request held by a `timeout` fault is visible at once.
        record = ServerRequest(
            index=index,
            path=handler.path,
            body=body,
            outcome=outcome,
            authorized=handler.headers.get("Authorization") is not None,
            arrived=arrived,
        )
        with self._lock:
            self._log.append(record)
        answered = False
        try:
            # an answer is made before the wait and sent when it ends, so that it starts out
            # `latency` after its request arrived
            reply = self._answer(body, index) if outcome == "ok" else None
            if self.latency > 0 and not self._wait(handler, started + self.latency):
                handler.close_connection = True  # the client hung up: nobody to answer
                return
            if outcome != "timeout":  # no longer in flight once its answer starts out: a
                answered = self._answering()  # client that has it may send the next at once
            if reply is not None:
                send_raw(handler, 200, reply, "application/json")
            else:
                self._respond(handler, outcome, body, index)
        finally:
            with self._lock:
                self._in_flight -= 0 if answered else 1
                record.seconds = time.monotonic() - started

    def _answer(self, body: Any, index: int) -> bytes:
        """The bytes of an `ok` answer to `body`."""
        text = self.responder(body)
        return json.dumps(completion_body(body, text, index, self._cached_tokens(body))).encode()

    def _answering(self) -> bool:
        with self._lock:
            self._in_flight -= 1
        return True

    def _wait(self, handler: _Handler, deadline: float) -> bool:
        """Wait until `deadline` (`time.monotonic()`; less if the server stops); False if the
        client hung up meanwhile (a request its client gave up on is no longer in flight)."""
        sock = handler.connection
        while not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            readable, _, _ = select.select([sock], [], [], min(left, 0.05))
            if readable:
                try:
                    if sock.recv(1, socket.MSG_PEEK) == b"":
                        return False
                except OSError:
                    return False
                self._stopping.wait(max(0.0, deadline - time.monotonic()))  # more data: wait
                return True
        return True

    def _respond(self, handler: _Handler, outcome: str, body: Any, index: int) -> None:
        """Answer with any outcome but `ok` (see `_handle`)."""
        if outcome == "429":
            headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            send_json(handler, 429, error_body("rate limit reached", "rate_limit_error"), headers)
        elif outcome in ("500", "503"):
            send_json(handler, int(outcome), error_body("the server had an error", "server_error"))
        elif outcome == "401":
            send_json(handler, 401, error_body("invalid api key", "invalid_request_error"))
        elif outcome == "403":
            send_json(handler, 403, error_body("permission denied", "permission_error"))
        elif outcome == "404":
            model = body.get("model") if isinstance(body, dict) else None
            message = f"The model `{model}` does not exist"
            send_json(handler, 404, error_body(message, "invalid_request_error", "model_not_found"))
        elif outcome == "bad_request":
            send_json(handler, 400, error_body("request body is not a chat request", "bad_request"))
        elif outcome == "timeout":
            self._stopping.wait(self.hang)
            handler.close_connection = True
        elif outcome == "drop":
            handler.close_connection = True
        elif outcome == "garbage":
            send_raw(handler, 200, b"{this is not json", "application/json")
        elif outcome == "empty":
            reply = completion_body(body, "", index)
            reply["choices"] = []
            send_json(handler, 200, reply)

    def _cached_tokens(self, body: Any) -> int | None:
        """Tokens of a system message seen before (None without `prompt_cache`)."""
        if not self.prompt_cache:
            return None
        messages = body.get("messages") or [] if isinstance(body, dict) else []
        first = messages[0] if messages and isinstance(messages[0], dict) else {}
        if first.get("role") != "system":
            return 0
        content = str(first.get("content", ""))
        with self._lock:
            seen = content in self._prefixes
            self._prefixes.add(content)
        return len(content.split()) if seen else 0


class _HTTPServer(LoopbackHTTPServer):
    owner: FakeServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do
    disable_nagle_algorithm = True  # else headers and body wait out delayed ACKs (40 ms)
    timeout = 30  # an idle connection never holds a thread for long
    server: _HTTPServer
    received: tuple[float, float] = (0.0, 0.0)  # the request line's arrival: monotonic, wall

    def parse_request(self) -> bool:
        # called as soon as the request line is read, before its headers are parsed
        self.received = (time.monotonic(), time.time())
        return super().parse_request()

    def setup(self) -> None:
        super().setup()
        owner = self.server.owner
        with owner._lock:
            owner._connections.add(self.connection)

    def finish(self) -> None:
        owner = self.server.owner
        with owner._lock:
            owner._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if self.path == RESET_PATH:
            self.server.owner.reset()
            send_json(self, 200, {"ok": True})
            return
        if self.server.owner.batches.handles(self.path):
            self.server.owner.batches.post(self, raw)
            return
        self.server.owner._handle(self, raw)

    def do_GET(self) -> None:
        if self.path == STATS_PATH:
            send_json(self, 200, self.server.owner.stats())
            return
        if self.server.owner.batches.handles(self.path):
            self.server.owner.batches.get(self)
            return
        send_json(self, 404, error_body("not found", "invalid_request_error"))

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: tests read the request log instead
