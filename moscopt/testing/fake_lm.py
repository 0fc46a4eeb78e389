"""`FakeLM`: an `LM` for unit tests, driven by a queue of answers or a responder.

    lm = FakeLM()
    lm.enqueue("ACTIVATE: a, b", '{"edits": []}')
    ... code under test calls lm.complete / lm.acomplete ...
    assert lm.history[0].messages[-1]["content"].startswith("Task:")

Each queued answer is a string (the reply text), an exception instance (raised by that call)
or a callable `(LMRequest) -> str`. With the queue empty, the call's `purpose` picks a responder
from `routes` (tests dispatch on what a call is for, never on prompt wording), else
`responder(request)` answers; with none of these, the call fails with `AssertionError` (a test
asked for more than it set up).
Structured calls parse and validate the reply exactly as the real client does, raising
`LMOutputError`. `history` records every request in call order; `stats` counts like the real
client (no cache: every call is a call).

Crash tests choose their kill point by progress: `FakeLM(crash_at=n)` raises `Crash` on its n-th
call, `crash_on_call(n, respond)` on the n-th call of one responder. `Crash` is a
`BaseException`, which nothing in moscopt catches: the run stops there as if killed.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from moscopt.lm.base import Completion, LMRequest, Message, Usage, check_messages
from moscopt.lm.budget import Budget, LMStats
from moscopt.lm.structured import with_data

Answer = str | BaseException | Callable[[LMRequest], str]


class Crash(BaseException):
    """A crash at a chosen point of progress (see the module docstring)."""


def crash_on_call(n: int, respond: Callable[[LMRequest], str]) -> Callable[[LMRequest], str]:
    """`respond`, except that its `n`-th call (from 1) raises `Crash`."""
    calls = 0
    lock = threading.Lock()

    def crashing(request: LMRequest) -> str:
        nonlocal calls
        with lock:
            calls += 1
            now = calls
        if now == n:
            raise Crash()
        return respond(request)

    return crashing


class FakeLM:
    """Scripted `LM`: see the module docstring."""

    def __init__(
        self,
        answers: Sequence[Answer] = (),
        *,
        responder: Callable[[LMRequest], str] | None = None,
        routes: Mapping[str, Callable[[LMRequest], str]] | None = None,
        model: str = "fake/model",
        cost_per_call: float = 0.0,
        budget: Budget | None = None,
        crash_at: int = 0,
    ) -> None:
        """`crash_at`: the call (from 1) that raises `Crash` (0: none)."""
        self._model = model
        self.crash_at = crash_at
        self.responder = responder
        self.routes = dict(routes or {})
        self.cost_per_call = cost_per_call
        self.budget = budget or Budget()
        self.history: list[LMRequest] = []
        self.purposes: list[str] = []
        self.stats = LMStats()
        self._queue: deque[Answer] = deque(answers)
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._model

    def enqueue(self, *answers: Answer) -> FakeLM:
        with self._lock:
            self._queue.extend(answers)
        return self

    @property
    def pending(self) -> int:
        """Queued answers not yet used."""
        return len(self._queue)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        sample: int = 0,
        purpose: str = "",
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        request = LMRequest(
            model=self._model,
            messages=check_messages(messages),
            temperature=0.0 if temperature is None else temperature,
            top_p=1.0 if top_p is None else top_p,
            max_tokens=1024 if max_tokens is None else max_tokens,
            schema=schema,
            sample=sample,
        )
        with self._lock:
            self.history.append(request)
            self.purposes.append(purpose)
            if len(self.history) == self.crash_at:
                raise Crash()
            answer: Answer | None = self._queue.popleft() if self._queue else None
        reservation = self.budget.reserve(self.cost_per_call)
        reservation.settle(self.cost_per_call)
        if answer is None:
            answer = self._route(purpose)
        if isinstance(answer, BaseException):
            with self._lock:
                self.stats.calls += 1
                self.stats.failures += 1
            raise answer
        text = answer if isinstance(answer, str) else answer(request)
        usage = Usage(sum(len(m["content"].split()) for m in request.messages), len(text.split()))
        with self._lock:
            self.stats.calls += 1
            self.stats.prompt_tokens += usage.prompt_tokens
            self.stats.completion_tokens += usage.completion_tokens
            self.stats.cost += self.cost_per_call
        completion = Completion(
            text=text, model=self._model, usage=usage, cost=self.cost_per_call, sample=sample
        )
        return with_data(completion, schema, self._model)

    def _route(self, purpose: str) -> Callable[[LMRequest], str]:
        """The responder for `purpose`: its route (exact, else the part before the first
        '-', so "reflect" serves "reflect-skill"), else the catch-all `responder`."""
        route = self.routes.get(purpose) or self.routes.get(purpose.split("-", 1)[0])
        if route is not None:
            return route
        if self.responder is None:
            raise AssertionError(
                f"FakeLM: nothing queued or routed for call #{len(self.history)} ({purpose!r})"
            )
        return self.responder

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        sample: int = 0,
        purpose: str = "",
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        return self.complete(
            messages,
            schema=schema,
            sample=sample,
            purpose=purpose,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
        )


class TurnTakingLM(FakeLM):
    """A `FakeLM` whose every answer takes a turn of the event loop, so that concurrent callers
    interleave; `seen` holds each call's purpose and how many calls were in flight with it (what
    tests of overlap read: no clock involved)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flying = 0
        self.seen: list[tuple[str, int]] = []

    async def acomplete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.flying += 1
        self.seen.append((kwargs.get("purpose", ""), self.flying))
        try:
            await asyncio.sleep(0)
            return await super().acomplete(messages, **kwargs)
        finally:
            self.flying -= 1
