"""Provider batch mode (`llm.batch`, `--batch`): waves that can wait go through litellm's batch
API at the provider's batch price; everything else takes the normal path.

A caller marks a wave that can wait with `can_wait()` (evaluation, validation in training);
tasks started inside it inherit the mark. Through a `BatchTransport`, a request of such a wave
joins a queue instead of being sent. The queue is flushed as one batch when the wave is complete
(no new request for `QUIET` seconds) or holds `llm.batch_size` requests: its chat bodies are
written as a JSONL file with the requests' cache keys as `custom_id`s, uploaded
(`litellm.acreate_file`), submitted (`litellm.acreate_batch`), recorded in the run's
`BatchStore`, polled (`litellm.aretrieve_batch`, from `llm.batch_poll` seconds, growing to ten
times that) and downloaded (`litellm.afile_content`). Each answer goes back to the client that
asked, which accounts and caches it as any answer, so after collection nothing else differs.

Resume: a request whose key is in a recorded batch still pending waits for that batch (polled,
never submitted again); one in a batch already downloaded is answered from its saved output.

Failures: a request the batch does not answer (the batch `failed`, `expired` or was
`cancelled`, or its line carries an error) is sent once on the normal path, so it is answered, or
fails with the same error it would have had unbatched. A failure of the batch API itself (upload,
create, a poll failing `POLL_FAILURES` times in a row) is the `Fault` of each request in it, which
the client retries as usual (the retry joins a new batch). Requests outside a wave that can wait
never touch any of this. Budget: the client reserves every call before the transport sees it, so
a batched call is one call of `llm.max_calls`, reserved before submission.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import os
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from moscopt.config import LLMConfig
from moscopt.lm.base import LMRequest
from moscopt.lm.batch_lines import ENDPOINT, batch_cost, input_file, output_bodies
from moscopt.lm.batch_store import BatchRecord, BatchStore
from moscopt.lm.litellm_env import alitellm, close_dropped_clients_at_loop_end, preload
from moscopt.lm.retry import Fault
from moscopt.lm.transport import DIRECT_PROVIDERS, Transport
from moscopt.lm.wire import NotAnAnswer, RawAnswer, raw_answer

QUIET = 0.2  # seconds without a new request that close a wave
POLL_FAILURES = 5  # consecutive failed polls of one batch before its requests fail
BATCH_PROVIDERS = frozenset({"openai"})  # what litellm's SDK can create batches for

_CAN_WAIT: contextvars.ContextVar[bool] = contextvars.ContextVar("moscopt_can_wait", default=False)


@contextlib.contextmanager
def can_wait(on: bool = True) -> Iterator[None]:
    """Mark the calls made inside (and in the tasks started inside) as a wave that can wait."""
    token = _CAN_WAIT.set(on)
    try:
        yield
    finally:
        _CAN_WAIT.reset(token)


def waits_in_batch(transport: object) -> bool:
    """Whether a call through `transport` made now would wait in a batch (holding no
    connection, so it takes none of the client's concurrency slots)."""
    return _CAN_WAIT.get() and isinstance(transport, BatchTransport)


def wave_concurrency(llm: LLMConfig) -> int:
    """Tasks a wave that can wait runs at once: a batch's worth in batch mode."""
    return max(llm.concurrency, llm.batch_size) if llm.batch else llm.concurrency


def batch_refusal(model: str, api_base: str | None, llm: LLMConfig) -> str | None:
    """Why `model` cannot run with `--batch` (None: it can)."""
    provider, slash, _ = model.partition("/")
    if llm.deployments:
        return "--batch does not combine with llm.deployments (litellm's Router)"
    if not slash or provider not in BATCH_PROVIDERS:
        return (
            f"--batch needs an openai/ model (litellm's batch API), not '{model}': "
            "drop --batch for this model"
        )
    return None


@dataclass
class BatchStats:
    """What the batch layer did in this process."""

    batches: int = 0  # submitted
    batched: int = 0  # requests answered from a batch
    collected: int = 0  # batches of an earlier process polled and collected here
    fallbacks: int = 0  # requests a batch did not answer, sent on the normal path


class _Wave:
    """The state of batch mode on one event loop: the queue and the requests in flight."""

    def __init__(self, concurrency: int) -> None:
        self.queue: dict[str, LMRequest] = {}
        self.futures: dict[str, asyncio.Future[RawAnswer | None]] = {}
        self.timer: asyncio.TimerHandle | None = None
        self.collectors: dict[str, asyncio.Task[None]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.fallback_slots = asyncio.Semaphore(concurrency)

    def resolve(self, key: str, outcome: RawAnswer | BaseException | None) -> None:
        future = self.futures.pop(key, None)
        if future is None or future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


class BatchTransport:
    """`inner` for every call, except those of a wave that can wait (see the module docstring)."""

    def __init__(
        self,
        inner: Transport,
        model: str,
        store: BatchStore,
        llm: LLMConfig,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        quiet: float = QUIET,
    ) -> None:
        self.inner = inner
        self.model = model
        self.store = store
        self._wire_model = model.partition("/")[2]
        self._provider = model.partition("/")[0]
        self._size = llm.batch_size
        self._poll = llm.batch_poll
        self._timeout = llm.timeout
        self._concurrency = llm.concurrency
        self._quiet = quiet
        self._api_base = api_base
        self._key = api_key
        if not api_key and api_base and self._provider in DIRECT_PROVIDERS:
            self._key = os.environ.get(DIRECT_PROVIDERS[self._provider]) or "no-key"
        self.stats = BatchStats()
        self._waves: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Wave]
        self._waves = weakref.WeakKeyDictionary()
        self._pending: dict[str, BatchRecord] | None = None  # custom id -> its pending batch
        self._answers: dict[str, tuple[str, dict[str, Any]]] = {}  # custom id -> (batch, line)
        preload()

    def __repr__(self) -> str:
        return f"BatchTransport({self.inner!r})"

    # -- the Transport protocol ------------------------------------------------------------------

    async def asend(self, request: LMRequest) -> RawAnswer:
        if not _CAN_WAIT.get():
            return await self.inner.asend(request)
        wave = self._wave()
        answer = await self._batched(wave, request)
        if answer is not None:
            return answer
        self.stats.fallbacks += 1
        async with wave.fallback_slots:
            return await self.inner.asend(request)

    async def aclose(self) -> None:
        wave = self._waves.pop(asyncio.get_running_loop(), None)
        if wave is not None:
            for task in [*wave.tasks, *wave.collectors.values()]:
                task.cancel()  # the batches stay recorded: a later run collects them
        await self.inner.aclose()

    def close(self) -> None:
        self.inner.close()

    # -- queueing --------------------------------------------------------------------------------

    def _wave(self) -> _Wave:
        loop = asyncio.get_running_loop()
        wave = self._waves.get(loop)
        if wave is None:
            wave = self._waves[loop] = _Wave(self._concurrency)
        return wave

    def _load(self) -> dict[str, BatchRecord]:
        if self._pending is None:
            self._pending = {}
            for record in self.store.records():
                if record.model != self.model:
                    continue
                if record.pending:
                    self._pending.update(dict.fromkeys(record.custom_ids, record))
                else:
                    self._remember(record.batch_id, self.store.output(record.batch_id))
        return self._pending

    async def _batched(self, wave: _Wave, request: LMRequest) -> RawAnswer | None:
        """The batch's answer to `request`; None when the batch gave none (fall back)."""
        key = request.key()
        pending = self._load()
        found = self._answers.get(key)
        if found is not None:  # downloaded by an earlier process, never delivered
            return await self._answer(found[0], found[1])
        future = wave.futures.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            future.add_done_callback(_retrieved)
            wave.futures[key] = future
            record = pending.get(key)
            if record is not None:
                self._collect(wave, record, resumed=True)
            else:
                wave.queue[key] = request
                self._schedule(wave)
        return await asyncio.shield(future)

    def _schedule(self, wave: _Wave) -> None:
        if wave.timer is not None:
            wave.timer.cancel()
            wave.timer = None
        if len(wave.queue) >= self._size:
            self._flush(wave)
        else:
            loop = asyncio.get_running_loop()
            wave.timer = loop.call_later(self._quiet, self._flush, wave)

    def _flush(self, wave: _Wave) -> None:
        if wave.timer is not None:
            wave.timer.cancel()
            wave.timer = None
        if not wave.queue:
            return
        requests, wave.queue = list(wave.queue.values()), {}
        task = asyncio.get_running_loop().create_task(self._submit_and_collect(wave, requests))
        wave.tasks.add(task)
        task.add_done_callback(wave.tasks.discard)

    # -- the batch API ---------------------------------------------------------------------------

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"custom_llm_provider": self._provider, "timeout": self._timeout}
        if self._api_base is not None:
            kwargs["api_base"] = self._api_base
        if self._key:
            kwargs["api_key"] = self._key
        return kwargs

    async def _call(self, name: str, **kwargs: Any) -> Any:
        from moscopt.lm.litellm_transport import call_litellm

        module = await alitellm()
        await close_dropped_clients_at_loop_end()  # litellm's batch calls leak SDK clients
        call = getattr(module, name)(**kwargs, **self._kwargs())
        return await call_litellm(call, self._timeout, [self._key])

    async def _submit_and_collect(self, wave: _Wave, requests: list[LMRequest]) -> None:
        keys = [r.key() for r in requests]
        try:
            record = await self._submit(requests)
        except BaseException as e:  # a Fault is each request's to retry; a bug is raised there
            for key in keys:
                wave.resolve(key, e if isinstance(e, Exception) else Fault("transient", repr(e)))
            if not isinstance(e, Exception):
                raise
            return
        self.stats.batches += 1
        self._collect(wave, record, resumed=False)

    async def _submit(self, requests: list[LMRequest]) -> BatchRecord:
        data = input_file(requests, self._wire_model)
        upload = await self._call("acreate_file", file=("batch.jsonl", data), purpose="batch")
        batch = await self._call(
            "acreate_batch",
            completion_window="24h",
            endpoint=ENDPOINT,
            input_file_id=upload.id,
            metadata={"moscopt": "1"},
        )
        record = BatchRecord(
            batch_id=str(batch.id),
            input_file_id=str(upload.id),
            model=self.model,
            custom_ids=[r.key() for r in requests],
        )
        self.store.save(record)  # before anything waits on it: a killed run finds it
        self._load().update(dict.fromkeys(record.custom_ids, record))
        return record

    def _collect(self, wave: _Wave, record: BatchRecord, *, resumed: bool) -> None:
        if record.batch_id in wave.collectors:
            return
        task = asyncio.get_running_loop().create_task(self._poll_and_deliver(wave, record))
        wave.collectors[record.batch_id] = task
        if resumed:
            self.stats.collected += 1

        def done(t: asyncio.Task[None]) -> None:
            wave.collectors.pop(record.batch_id, None)

        task.add_done_callback(done)

    async def _poll_and_deliver(self, wave: _Wave, record: BatchRecord) -> None:
        try:
            status, output_file = await self._wait(record.batch_id)
            data = b""
            if output_file:
                content = await self._call("afile_content", file_id=output_file)
                data = bytes(content.content)
                self.store.save_output(record.batch_id, data)
        except Exception as e:  # the batch stays pending on disk; the client's retry polls again
            for key in record.custom_ids:
                wave.resolve(key, e)
            return
        record.status = status
        record.finished = time.time()
        self.store.save(record)
        pending = self._load()
        for key in record.custom_ids:
            pending.pop(key, None)
        self._remember(record.batch_id, data)
        for key in record.custom_ids:
            found = self._answers.pop(key, None)
            if key not in wave.futures:
                if found is not None:
                    self._answers[key] = found  # for a request not asked yet in this process
                continue
            try:
                answer = await self._answer(record.batch_id, found[1]) if found else None
            except Fault:
                answer = None  # an unusable line: the normal path answers it
            wave.resolve(key, answer)

    async def _wait(self, batch_id: str) -> tuple[str, str | None]:
        """Poll until the batch ends: its status and output file id."""
        delay, failures = self._poll, 0
        while True:
            try:
                batch = await self._call(
                    "aretrieve_batch",
                    batch_id=batch_id,
                    # not litellm's own cost tracking: it would download the output a second
                    # time, in a task of its own; the answers are priced here (`batch_cost`)
                    litellm_metadata={"batch_ignore_default_logging": True},
                )
                failures = 0
            except Fault as fault:
                failures += 1
                if fault.kind != "transient" or failures >= POLL_FAILURES:
                    raise
            else:
                status = str(getattr(batch, "status", ""))
                if status in ("completed", "expired", "failed", "cancelled"):
                    output = getattr(batch, "output_file_id", None)
                    return status, str(output) if output else None
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, self._poll * 10)

    # -- answers ---------------------------------------------------------------------------------

    def _remember(self, batch_id: str, data: bytes | None) -> None:
        """Index the answered lines of a downloaded output file by custom id."""
        for custom_id, body in output_bodies(data or b"").items():
            self._answers[custom_id] = (batch_id, body)

    async def _answer(self, batch_id: str, body: dict[str, Any]) -> RawAnswer:
        try:
            raw = raw_answer(body, deployment=f"batch:{batch_id}")
        except NotAnAnswer as e:
            raise Fault("request" if e.empty else "transient", str(e)) from None
        self.stats.batched += 1
        cost = await batch_cost(self.model, raw.prompt_tokens, raw.completion_tokens)
        if cost is None:
            return raw
        return dataclasses.replace(raw, cost=cost)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark an exception as seen: every waiter of a failed request may have been cancelled."""
    if not future.cancelled():
        future.exception()
