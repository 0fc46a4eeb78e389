"""`LiteLLMClient`: the `LM` that moscopt uses for every real model.

One async core (`acomplete`): validate the request, look it up in the cache, reserve budget,
take a concurrency slot, attempt it through the transport with bounded retries, then account,
report, (for structured calls) parse, and cache what parsed. `complete` is that core run on a
private loop thread (`moscopt.lm.sync`). The contract (what raises, what is retried, what is
cached) is on `moscopt.lm.base.LM`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import random
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from moscopt.config import LLMConfig, SamplingConfig
from moscopt.lm.base import Completion, LMRequest, Message, ToolRequest, Usage, check_messages
from moscopt.lm.batch import waits_in_batch
from moscopt.lm.budget import Budget, LMStats, Reservation, estimated_usage
from moscopt.lm.cache import ResponseCache
from moscopt.lm.endpoint import make_transport
from moscopt.lm.errors import LMError
from moscopt.lm.inflight import Hold, current_lane
from moscopt.lm.legacy import legacy_key
from moscopt.lm.local import PROVIDER as LOCAL_PROVIDER
from moscopt.lm.pricing import Pricing
from moscopt.lm.retry import Fault, RetryPolicy, final_error
from moscopt.lm.structured import check_schema, parses, with_data
from moscopt.lm.sync import LoopThread
from moscopt.lm.transport import Transport
from moscopt.lm.wire import RawAnswer

EventSink = Callable[[dict[str, Any]], None]


class LiteLLMClient:
    """An `LM` for any litellm model string (see `moscopt.lm.base.LM` for the contract).

    `stats` holds this client's totals; `budget` may be shared with other clients of the run.
    `events`, if given, receives one dict per call (model, purpose, sample, tokens, cached
    tokens, cost, saving, latency, cache_hit, retries, ok, error, deployment): never messages,
    keys or headers. `transport` defaults to the one `moscopt.lm.endpoint.make_transport` picks.
    """

    def __init__(
        self,
        model: str,
        *,
        sampling: SamplingConfig | None = None,
        llm: LLMConfig | None = None,
        seed: int | None = None,
        api_base: str | None = None,
        cache: ResponseCache | None = None,
        budget: Budget | None = None,
        events: EventSink | None = None,
        api_key: str | None = None,
        transport: Transport | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._model = model
        self.sampling = sampling or SamplingConfig()
        self.llm = llm or LLMConfig()
        self.seed = seed
        self.api_base = api_base
        self.cache = cache
        self.budget = budget or Budget(self.llm.max_calls, self.llm.max_cost)
        self.events = events
        self.stats = LMStats()
        self.retry = RetryPolicy(self.llm.max_retries, self.llm.backoff_base, self.llm.backoff_max)
        if transport is None:
            transport = make_transport(model, api_base, self.llm, api_key=api_key)
        self.transport = transport
        self._pricing = Pricing()
        if self._model.partition("/")[0] != LOCAL_PROVIDER:
            self._pricing.prefetch()  # read in a thread now; a call never waits on the import
        self._rng = rng or random.Random(seed)  # backoff jitter only: never affects answers
        self._lock = threading.Lock()
        self._sync = LoopThread()
        self._slots_by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()
        self._lane = current_lane()  # a study's shared cap on requests in flight, if any
        self._wire: set[concurrent.futures.Future[RawAnswer]] = set()  # its requests out

    def __repr__(self) -> str:
        return f"LiteLLMClient({self._model!r}, api_base={self.api_base!r})"

    @property
    def model(self) -> str:
        return self._model

    # -- the LM protocol -------------------------------------------------------------------------

    def request(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        sample: int = 0,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> LMRequest:
        """The full request these arguments make (what is hashed into the cache key)."""
        if sample < 0:
            raise ValueError("sample must be >= 0")
        if schema is not None:
            check_schema(schema)
        request = LMRequest(
            model=self._model,
            messages=check_messages(messages),
            temperature=self.sampling.temperature if temperature is None else temperature,
            top_p=self.sampling.top_p if top_p is None else top_p,
            max_tokens=self.sampling.max_tokens if max_tokens is None else max_tokens,
            seed=self.seed,
            schema=schema,
            sample=sample,
        )
        if tools:
            fields = {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}
            return ToolRequest(**fields, tools=tuple(tools))
        return request

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
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        """`acomplete`, run to its end on this client's loop thread (its answer committed to the
        cache before it returns: a caller off the loop does not wait for the loop's turn)."""
        completion = self._sync.run(
            self.acomplete(
                messages,
                schema=schema,
                sample=sample,
                purpose=purpose,
                temperature=temperature,
                top_p=top_p,
                max_tokens=max_tokens,
                tools=tools,
            )
        )
        if self.cache is not None:
            self.cache.commit()
        return completion

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
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        request = self.request(
            messages,
            schema=schema,
            sample=sample,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            tools=tools,
        )
        hit = self._cached(request, purpose)
        if hit is not None:
            return hit
        reservation = self._reserve(request)
        started = time.perf_counter()
        retries = 0
        try:
            # a call waiting in a provider batch holds no connection: it takes no slot
            waits = waits_in_batch(self.transport)
            async with contextlib.nullcontext() if waits else self._slots() as hold:
                while True:
                    try:
                        raw = await self._send(request, hold)
                        break
                    except Fault as fault:
                        if fault.kind != "transient" or retries >= self.retry.max_retries:
                            raise self._failed(request, fault, retries, started, purpose) from None
                        retries += 1
                        await asyncio.sleep(self.retry.delay(retries, fault, self._rng))
        except BaseException:  # including cancellation and bugs: the reservation must not leak
            reservation.settle(0.0)
            raise
        latency = time.perf_counter() - started
        try:
            # a request waiting for the slot this answer freed goes out before the work on the
            # answer, this call's bookkeeping and its caller's (`agent.evaluate.each_rollout`)
            await asyncio.sleep(0)
        finally:  # a call made is recorded, even when its caller is cancelled meanwhile
            completion = self._succeeded(request, raw, retries, latency, reservation, purpose)
        # parsed first, cached after: an answer that fails its schema raises and is not kept,
        # so asking again asks the model again instead of replaying the failure forever
        parsed = self._structured(completion, request)
        if self.cache is not None:
            self.cache.put(request.key(), completion)
        return parsed

    async def supports_tools(self) -> bool:
        """Whether the model takes native tool definitions (`tools=`): litellm's
        `supports_function_calling`, asked off the loop; never for the embedded model."""
        if self._model.partition("/")[0] == LOCAL_PROVIDER:
            return False
        from moscopt.lm.litellm_env import alitellm

        module = await alitellm()

        def ask() -> bool:
            try:
                return bool(module.supports_function_calling(model=self._model))
            except Exception:  # a model litellm does not know: no native tools
                return False

        return await asyncio.to_thread(ask)

    async def aclose(self) -> None:
        """Release what this client holds for the running loop (its HTTP session)."""
        await self.transport.aclose()

    def close(self) -> None:
        """Release connections, the loop thread and the cache handle (all reopen on use);
        first wait (at most their timeout) for requests still out under a study's cap."""
        with self._lock:
            wire = list(self._wire)
        if wire:
            concurrent.futures.wait(wire, timeout=self.llm.timeout)
        self._sync.close(self.transport.aclose)
        self.transport.close()
        if self.cache is not None:
            self.cache.close()

    # -- steps of a call -------------------------------------------------------------------------

    def _slots(self) -> contextlib.AbstractAsyncContextManager[Any]:
        if self._lane is not None:  # one cap for every LM of the study, on any thread
            return self._lane.slot()
        loop = asyncio.get_running_loop()
        slots = self._slots_by_loop.get(loop)
        if slots is None:
            slots = asyncio.Semaphore(self.llm.concurrency)
            self._slots_by_loop[loop] = slots
        return slots

    async def _send(self, request: LMRequest, hold: object) -> RawAnswer:
        if not isinstance(hold, Hold):
            return await self.transport.asend(request)
        # under a study's cap the request goes out on this client's loop thread and keeps its
        # slot until its answer (or its timeout), even when its caller gives up or its loop ends
        wire = self._sync.submit(self.transport.asend(request))
        hold.keep(wire)
        with self._lock:
            self._wire.add(wire)
        wire.add_done_callback(self._off_wire)
        return await asyncio.shield(asyncio.wrap_future(wire))

    def _off_wire(self, wire: concurrent.futures.Future[RawAnswer]) -> None:
        with self._lock:
            self._wire.discard(wire)

    def _cached(self, request: LMRequest, purpose: str) -> Completion | None:
        if self.cache is None:
            return None
        found = self.cache.get(request.key())
        if found is None and self.cache.legacy is not None:  # a run from before the shared cache
            found = self.cache.migrate(request.key(), legacy_key(request, self.api_base))
        if found is None:
            return None
        if request.schema is not None and not parses(found.text, request.schema):
            # kept by a version that cached unparsed answers: drop it and ask again
            self.cache.discard(request.key())
            return None
        completion = Completion(
            text=found.text,
            model=found.model,
            usage=found.usage,
            cost=0.0,
            cache_hit=True,
            sample=request.sample,
            finish_reason=found.finish_reason,
            tool_calls=found.tool_calls,
        )
        with self._lock:
            self.stats.cache_hits += 1
        self._report(completion, purpose, ok=True)
        return self._structured(completion, request)

    def _reserve(self, request: LMRequest) -> Reservation:
        bound = 0.0
        if self.budget.max_cost is not None:
            chars = sum(len(m["content"]) for m in request.messages)
            bound = self._pricing.bound(self._model, chars, request.max_tokens)
        return self.budget.reserve(bound)

    def _succeeded(
        self,
        request: LMRequest,
        raw: RawAnswer,
        retries: int,
        latency: float,
        reservation: Reservation,
        purpose: str,
    ) -> Completion:
        if not raw.usage_valid:  # missing or implausible counts: never cheaper than an estimate
            raw = estimated_usage(raw, request)
        cost = raw.cost
        if cost is None:
            cost = self._pricing.cost(
                self._model, raw.prompt_tokens, raw.completion_tokens, raw.cached_tokens
            )
        reservation.settle(cost)
        # what the provider's prompt cache saved (cost above is already at the cache-read price)
        saving = self._pricing.saving(self._model, raw.cached_tokens) if raw.cached_tokens else 0.0
        completion = Completion(
            text=raw.text,
            model=self._model,
            usage=Usage(raw.prompt_tokens, raw.completion_tokens, raw.cached_tokens),
            cost=cost,
            cache_hit=False,
            sample=request.sample,
            latency=latency,
            retries=retries,
            finish_reason=raw.finish_reason,
            deployment=raw.deployment,
            tool_calls=raw.tool_calls,
        )
        with self._lock:
            s = self.stats
            s.calls += 1
            s.retries += retries
            s.prompt_tokens += raw.prompt_tokens
            s.completion_tokens += raw.completion_tokens
            s.cached_tokens += raw.cached_tokens
            s.saving += saving
            s.cost += cost
            s.latency += latency
        self._report(completion, purpose, ok=True, saving=saving)
        return completion

    def _failed(
        self, request: LMRequest, fault: Fault, retries: int, started: float, purpose: str
    ) -> LMError:
        latency = time.perf_counter() - started
        with self._lock:
            self.stats.calls += 1
            self.stats.failures += 1
            self.stats.retries += retries
            self.stats.latency += latency
        error = final_error(fault, self._model, retries + 1)
        failed = Completion(
            text="", model=self._model, sample=request.sample, latency=latency, retries=retries
        )
        self._report(failed, purpose, ok=False, error=type(error).__name__, status=fault.status)
        return error

    def _structured(self, completion: Completion, request: LMRequest) -> Completion:
        return with_data(completion, request.schema, self._model)

    def _report(self, completion: Completion, purpose: str, *, ok: bool, **extra: Any) -> None:
        if self.events is None:
            return
        record: dict[str, Any] = {
            "model": completion.model,
            "purpose": purpose,
            "sample": completion.sample,
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
            "cached_tokens": completion.usage.cached_tokens,
            "cost": completion.cost,
            "latency": round(completion.latency, 6),
            "cache_hit": completion.cache_hit,
            "retries": completion.retries,
            "ok": ok,
        }
        if completion.deployment is not None:
            record["deployment"] = completion.deployment
        record.update(extra)
        self.events(record)
