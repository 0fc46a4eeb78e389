"""Scale-out: several deployments of one model behind litellm's Router.

`llm.deployments` lists endpoints that serve `Config.model` (vLLM replicas, several providers
of one model, a LiteLLM proxy); the Router spreads calls over them by `llm.routing.strategy`,
honours each one's `rpm`/`tpm`, rests a failing one for `routing.cooldown` seconds after
`routing.allowed_fails` failures, retries a failed call on another deployment up to
`routing.retries` times, and turns to the `fallback: true` deployments when the others fail.

The client above is unchanged: the cache key names `Config.model` (the model's identity, not
an endpoint), so every deployment shares the cache; the budget reserves and settles each call
as for one endpoint, priced by the client; what fails past the Router is retried by the client
as any `Fault`. The deployment that answered is recorded in the call's event (`deployment`); a
deployment that goes down and comes back is a `deployment` event (`moscopt.lm.health`).

The Router chooses, moscopt sends (`moscopt.lm.router_host`): each attempt on a deployment of an
OpenAI-compatible endpoint (`openai/...`, `hosted_vllm/...` at an `api_base`) goes over the
direct HTTP/1.1 transport, as a single endpoint's calls do, and its outcome goes back to the
Router, which counts it (rpm/tpm, allowed fails, cooldowns) as it counts its own; the other
deployments' attempts go through `litellm.acompletion`.

litellm's import takes about 3 s of CPU. Where the Router would choose by simple-shuffle alone
(its default strategy, no rpm/tpm limit, every primary deployment sent to directly), the calls
made while it imports do not wait for it: each goes to a primary deployment drawn as
simple-shuffle draws (`shuffle_before_the_router`), and the Router takes over when it is loaded,
or at the first failure (that call included, with one retry fewer), with its cooldowns, retries
elsewhere and fallbacks. The import then starts with the first call, so that it runs in the
calls' waits for the servers rather than in the run's start-up.
"""

from __future__ import annotations

import asyncio
import os
import random
import weakref
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from moscopt.config import DeploymentConfig, LLMConfig, RoutingConfig
from moscopt.lm.base import LMRequest, public_url
from moscopt.lm.health import DeploymentHealth, Report
from moscopt.lm.litellm_env import alitellm, preload
from moscopt.lm.litellm_transport import answer_of, call_litellm, litellm_fields
from moscopt.lm.redact import redact
from moscopt.lm.retry import Fault
from moscopt.lm.router_host import (
    Endpoint,
    deployment_of,
    fault_of,
    litellm_error,
    model_response,
    routed_router,
)
from moscopt.lm.transport import DIRECT_PROVIDERS, HTTPTransport, uses_direct_transport
from moscopt.lm.wire import RawAnswer, marks_prompt_cache

FALLBACK_SUFFIX = ":fallback"


@dataclass
class _Call:
    """The request a Router call is for, and the answers its direct attempts read (by the
    response object given back to the Router)."""

    request: LMRequest
    answers: dict[int, RawAnswer] = field(default_factory=dict)


_CALL: ContextVar[_Call | None] = ContextVar("moscopt_router_call", default=None)


def deployment_label(deployment: DeploymentConfig) -> str:
    """How events name a deployment: its `name`, else `model@host` (no credentials)."""
    if deployment.name:
        return deployment.name
    where = public_url(deployment.api_base)
    return f"{deployment.model}@{where}" if where else deployment.model


def model_list(
    group: str, deployments: list[DeploymentConfig], timeout: float, *, priced: bool = False
) -> list[Any]:
    """litellm's `model_list` for `deployments`: the primary group, then `<group>:fallback`.

    Unless litellm must know the prices (`priced`: cost-based routing), each deployment is
    declared free to litellm, so that its per-call pricing stops at once: on a model missing
    from its price map it otherwise searched the map on every call (a third of the Router's
    CPU per call). The client prices the answer itself, from the same map."""
    prices = {} if priced else {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
    out: list[dict[str, Any]] = []
    for d in deployments:
        params: dict[str, Any] = {"model": d.model, "timeout": timeout, "max_retries": 0}
        if d.api_base:
            params["api_base"] = d.api_base
        key = os.environ.get(d.api_key_env) if d.api_key_env else None
        provider = d.model.partition("/")[0]
        if not key and d.api_base and provider in DIRECT_PROVIDERS:
            key = os.environ.get(DIRECT_PROVIDERS[provider]) or "no-key"  # see LiteLLMTransport
        if key:
            params["api_key"] = key
        for name in ("rpm", "tpm", "weight"):
            value = getattr(d, name)
            if value is not None:
                params[name] = value
        out.append(
            {
                "model_name": group + FALLBACK_SUFFIX if d.fallback else group,
                "litellm_params": params,
                "model_info": {"id": deployment_label(d), **prices},
            }
        )
    return out


class DeploymentsTransport:
    """One `Router.acompletion` per attempt, over `deployments` serving `group`; the Router's
    attempts on OpenAI-compatible deployments sent over moscopt's direct transport (`direct`).

    `report` receives a record each time a deployment goes down or comes back
    (`moscopt.lm.health`): each attempt's failure as the attempt fails (`_attempt`; through
    litellm's callbacks, `_FailureWatch`, on a litellm without the Router's host), the answers
    through each response."""

    def __init__(
        self,
        group: str,
        deployments: list[DeploymentConfig],
        routing: RoutingConfig,
        *,
        timeout: float,
        max_response_bytes: int | None = None,
        report: Report | None = None,
        max_connections: int = 16,
        direct: bool = True,
    ) -> None:
        self.group = group
        self._max_bytes = max_response_bytes
        self._deployments = list(deployments)
        self._routing = routing
        self._timeout = timeout
        self._marks = any(marks_prompt_cache(d.model) for d in deployments)
        self._secrets = [os.environ.get(d.api_key_env) for d in deployments if d.api_key_env]
        self.health = DeploymentHealth(routing.allowed_fails, report)
        self.labels = frozenset(deployment_label(d) for d in deployments)
        self.direct: dict[str, HTTPTransport] = {}  # label -> its direct transport
        for d in deployments if direct else ():
            if d.api_base is not None and uses_direct_transport(d.model, d.api_base):
                self.direct[deployment_label(d)] = HTTPTransport(
                    d.model,
                    d.api_base,
                    timeout=timeout,
                    max_connections=max_connections,
                    api_key=os.environ.get(d.api_key_env) if d.api_key_env else None,
                    max_response_bytes=max_response_bytes,
                )
        self._module: Any = None
        self._routers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._routers = weakref.WeakKeyDictionary()  # litellm's clients belong to one loop
        self._shuffle = shuffle_before_the_router(self._deployments, routing, direct=direct)
        # litellm's import: beside the run's loading, or, where the first calls need no Router,
        # beside those calls (in their waits for the server, not in the run's start-up)
        self._loading: Future[Any] | None = None if self._shuffle else preload()

    def __repr__(self) -> str:
        return f"DeploymentsTransport({self.group!r}, {len(self._deployments)} deployments)"

    async def _router(self) -> Any:
        loop = asyncio.get_running_loop()
        router = self._routers.get(loop)
        if router is None:
            module = self._module = await alitellm()
            fallbacks = [{self.group: [self.group + FALLBACK_SUFFIX]}]
            has_fallback = any(d.fallback for d in self._deployments)
            priced = self._routing.strategy == "cost-based-routing"
            arguments: dict[str, Any] = dict(
                model_list=model_list(self.group, self._deployments, self._timeout, priced=priced),
                routing_strategy=self._routing.strategy,
                num_retries=self._routing.retries,
                allowed_fails=self._routing.allowed_fails,
                cooldown_time=self._routing.cooldown,
                retry_after=0,
                timeout=self._timeout,
                fallbacks=fallbacks if has_fallback else [],
            )
            router = routed_router(module, arguments, self._attempt)
            if router is None:  # a litellm without the Router's host: every attempt through it
                _FailureWatch.install(module).add(self)
                router = module.Router(**arguments)
            self._routers[loop] = router
        return router

    async def asend(self, request: LMRequest) -> RawAnswer:
        retries = self._routing.retries
        if self._loading is None:
            self._loading = preload()
        if self._shuffle is not None and not self._loading.done():
            answer = await self._before_the_router(request, *self._shuffle)
            if answer is not None:
                return answer
            # the failed attempt was the call's first (with no retry left, the Router still
            # makes its own attempt and turns to the fallbacks)
            retries = max(retries - 1, 0)
        router = await self._router()
        fields = litellm_fields(request, self.group, cache_marks=self._marks)
        fields.pop("max_retries")  # per deployment, in its litellm_params
        fields["num_retries"] = retries
        # the router retries within its deployments; the guard covers those attempts too
        budget = self._timeout * (self._routing.retries + 1)
        call = _Call(request)
        token = _CALL.set(call)
        try:
            response = await call_litellm(
                _routed(router, fields), budget, self._secrets, self._max_bytes
            )
        finally:
            _CALL.reset(token)
        hidden = getattr(response, "_hidden_params", None) or {}
        deployment = hidden.get("model_id") if isinstance(hidden, dict) else None
        if deployment is not None:
            self.health.answered(str(deployment))
        raw = call.answers.get(id(response))
        if raw is None:  # litellm's own attempt
            raw = answer_of(
                response,
                str(deployment) if deployment is not None else None,
                secrets=self._secrets,
                max_bytes=self._max_bytes,
            )
        return replace(raw, cost=None)  # the client prices it (see `model_list`)

    async def _before_the_router(
        self, request: LMRequest, labels: list[str], weights: list[int]
    ) -> RawAnswer | None:
        """One attempt while litellm is still importing, on a deployment drawn as the Router's
        simple-shuffle draws it; None when it failed: from then on the Router takes every call
        (this one with one retry fewer), with its cooldowns and retries elsewhere."""
        label = random.choices(labels, weights)[0]
        try:
            raw = await self.direct[label].asend(request)
        except Fault as fault:
            self.failed(label, fault)
            self._shuffle = None
            return None
        self.health.answered(label)
        return replace(raw, deployment=label, cost=None)

    async def _attempt(self, endpoint: Endpoint, kwargs: dict[str, Any]) -> Any:
        """One attempt of the Router's on the deployment it picked (`moscopt.lm.router_host`)."""
        label = deployment_of(kwargs)
        transport = self.direct.get(label) if label is not None else None
        call = _CALL.get()
        if transport is None or call is None:
            try:
                return await endpoint(**kwargs)
            except Exception as e:
                if label is not None:
                    self.failed(label, e)
                raise
        assert label is not None
        model = str(kwargs.get("model") or self.group)
        try:
            raw = await transport.asend(call.request)
        except Fault as fault:
            self.failed(label, fault)
            raise litellm_error(self._module, fault, model) from fault
        response = model_response(self._module, raw, model)
        call.answers[id(response)] = replace(raw, deployment=label)
        return response

    def failed(self, deployment: str, error: BaseException | None) -> None:
        """An attempt on `deployment` failed."""
        if deployment in self.labels:
            if isinstance(error, Fault):
                text = error.message  # redacted by its transport
            elif error is not None:
                text = redact(f"{type(error).__name__}: {error}", self._secrets)
            else:
                text = "failed"
            self.health.failed(deployment, " ".join(text.split())[:300])

    async def aclose(self) -> None:
        self._routers.pop(asyncio.get_running_loop(), None)
        for transport in self.direct.values():
            await transport.aclose()

    def close(self) -> None:
        for loop in [lp for lp in self._routers if lp.is_closed()]:
            del self._routers[loop]
        for transport in self.direct.values():
            transport.close()


def preload_router(llm: LLMConfig) -> None:
    """Start litellm's import now, unless the first calls over `llm.deployments` go out without
    it (`shuffle_before_the_router`): then it starts with them."""
    direct = llm.transport == "auto"
    if not shuffle_before_the_router(llm.deployments, llm.routing, direct=direct):
        preload()


def shuffle_before_the_router(
    deployments: list[DeploymentConfig], routing: RoutingConfig, *, direct: bool = True
) -> tuple[list[str], list[int]] | None:
    """The primary deployments and their weights, for the calls sent while litellm imports
    (about 3 s of CPU, which the first calls would otherwise wait for); None where only the
    Router can choose: another strategy than simple-shuffle, a deployment with an rpm or tpm
    limit (the Router counts them), or one that litellm itself sends to (not `direct`).

    Drawn as simple-shuffle draws (by `weight`, else evenly), these attempts are the Router's own
    choice made without it; the Router takes over at the first failure or when litellm is
    loaded."""
    primaries = [d for d in deployments if not d.fallback]
    if not direct or not primaries or routing.strategy != "simple-shuffle":
        return None
    for d in primaries:
        if d.rpm is not None or d.tpm is not None or not uses_direct_transport(d.model, d.api_base):
            return None
    weights = [d.weight or 0 for d in primaries]  # unweighted beside weighted ones: never
    if not any(weights):
        weights = [1] * len(primaries)
    return [deployment_label(d) for d in primaries], weights


async def _routed(router: Any, fields: dict[str, Any]) -> Any:
    """`router.acompletion(**fields)`; a direct attempt's last failure as its own `Fault`."""
    try:
        return await router.acompletion(**fields)
    except Exception as e:
        fault = fault_of(e)
        if fault is None:
            raise
        raise fault from None


class _FailureWatch:
    """On a litellm without the Router's host: litellm's failure callback, installed once per
    process, telling every live
    `DeploymentsTransport` which deployment an attempt failed on (weakly held: a dropped transport
    leaves it)."""

    _installed: Any = None

    @classmethod
    def install(cls, module: Any) -> weakref.WeakSet[DeploymentsTransport]:
        if cls._installed is None:
            from litellm.integrations.custom_logger import CustomLogger

            transports: weakref.WeakSet[DeploymentsTransport] = weakref.WeakSet()

            class Watch(CustomLogger):
                def __init__(self) -> None:
                    super().__init__()
                    self.transports = transports

                async def async_log_failure_event(
                    self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
                ) -> None:
                    params = kwargs.get("litellm_params") or {}
                    info = params.get("model_info") or {}
                    deployment = info.get("id") if isinstance(info, dict) else None
                    if deployment is not None:
                        for transport in list(transports):
                            transport.failed(str(deployment), kwargs.get("exception"))

            watch = Watch()
            module.callbacks.append(watch)
            cls._installed = watch
        found: weakref.WeakSet[DeploymentsTransport] = cls._installed.transports
        return found
