"""The seam between litellm's Router and moscopt's own transports: the Router chooses, moscopt
sends.

litellm's Router (from 1.110: a core that owns selection, retries, fallbacks, cooldowns and the
rpm/tpm counters) runs every attempt through its *host*: `PythonHost.invoke("acompletion")` is
the function it calls with the request for the one deployment it picked, and whatever that
function returns or raises is the attempt's outcome, which the core records itself (usage,
allowed-fails counters, cooldowns) before it retries elsewhere or falls back. `routed_router`
builds the Router over a host whose `acompletion` is moscopt's `Send`: the deployments of an
OpenAI-compatible endpoint go over the direct HTTP/1.1 transport (`moscopt.lm.transport`),
without litellm's per-call work (its logging object, the OpenAI SDK's request, its response
objects: 3 to 11 ms of CPU a call against under 1 ms); the others through `litellm.acompletion`.

`litellm_error` turns the direct transport's `Fault` into the litellm exception of the same
status, which is what the core classifies (by `status_code` and class) to rest a deployment and
retry elsewhere; the `Fault` is its `__cause__` (`fault_of` finds it again).

Everything that depends on litellm's internals is in `routed_router` (checked by
tests/lm/test_lm_router_host.py): a litellm without the seam gets None, and the caller uses a
plain `Router` (every attempt through litellm, as before).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from moscopt.lm.errors import cause_of
from moscopt.lm.retry import Fault
from moscopt.lm.wire import RawAnswer

# The attempt's endpoint (litellm.acompletion) and its keyword arguments -> the response.
Endpoint = Callable[..., Any]
Send = Callable[[Endpoint, dict[str, Any]], Awaitable[Any]]


def routed_router(module: Any, arguments: dict[str, Any], send: Send) -> Any | None:
    """litellm's `Router(**arguments)`, each `acompletion` attempt run by `send`; None when this
    litellm has no host to run attempts through (before 1.110).

    Written against litellm 1.110.2: `Router.from_config(config, host)` with the config of
    `build_router_config(router_arguments(**arguments))` (what `Router(**arguments)` builds), and
    a `litellm.router_python_host.PythonHost` whose `invoke(op)` returns the endpoint `op`."""
    try:
        from litellm.router import Router, router_arguments
        from litellm.router_config import build_router_config
        from litellm.router_python_host import PythonHost
    except ImportError:
        return None
    if not hasattr(Router, "from_config"):
        return None

    class Host(PythonHost):
        __slots__ = ("_send",)

        def __init__(self) -> None:
            self._send = send

        def invoke(self, op: str) -> Callable[..., Any]:
            endpoint = super().invoke(op)
            if op != "acompletion":
                return endpoint

            def attempt(**kwargs: Any) -> Awaitable[Any]:
                return self._send(endpoint, kwargs)

            return attempt

    config = build_router_config(router_arguments(**arguments))
    return Router.from_config(config, Host())


def deployment_of(kwargs: dict[str, Any]) -> str | None:
    """The id (moscopt's label) of the deployment an attempt's arguments are for."""
    info = kwargs.get("model_info")
    if not isinstance(info, dict):
        metadata = kwargs.get("metadata")
        info = metadata.get("model_info") if isinstance(metadata, dict) else None
    found = info.get("id") if isinstance(info, dict) else None
    return str(found) if found is not None else None


def litellm_error(module: Any, fault: Fault, model: str) -> Exception:
    """The litellm exception the Router reads as `fault` (its status, its kind), `fault` its cause.

    A timeout is litellm's `Timeout` (408), a failure without a status its `APIConnectionError`:
    both rest the deployment and retry elsewhere, as a 429 or a 5xx does; a 4xx does not."""
    exceptions = module.exceptions
    message, status = fault.message, fault.status
    provider = model.partition("/")[0]
    named: dict[int, Any] = {
        400: exceptions.BadRequestError,
        401: exceptions.AuthenticationError,
        403: exceptions.PermissionDeniedError,
        404: exceptions.NotFoundError,
        408: exceptions.Timeout,
        422: exceptions.UnprocessableEntityError,
        429: exceptions.RateLimitError,
        503: exceptions.ServiceUnavailableError,
    }
    error: Exception
    if status is None and fault.kind == "transient" and message.startswith("timed out"):
        error = exceptions.Timeout(message=message, model=model, llm_provider=provider)
    elif status is None and fault.kind == "transient":
        error = exceptions.APIConnectionError(message=message, llm_provider=provider, model=model)
    elif status is None:  # a request the server's answer showed to be wrong (empty, too large)
        error = exceptions.BadRequestError(message=message, model=model, llm_provider=provider)
    elif status in named:
        error = named[status](message=message, model=model, llm_provider=provider)
    elif status >= 500:
        error = exceptions.InternalServerError(message=message, llm_provider=provider, model=model)
    else:
        error = exceptions.BadRequestError(message=message, model=model, llm_provider=provider)
    error.__cause__ = fault
    return error


def fault_of(error: BaseException) -> Fault | None:
    """The direct transport's `Fault` under a litellm exception that `litellm_error` made
    (never through `__context__`: an error raised while handling ours is not ours)."""
    return cause_of(error, Fault, context=False)


def model_response(module: Any, raw: RawAnswer, model: str) -> Any:
    """A litellm response for what the direct transport read: the Router counts its tokens
    (tpm) and stamps the deployment on it; moscopt keeps `raw` itself."""
    tokens = raw.prompt_tokens + raw.completion_tokens
    return module.ModelResponse(
        model=model,
        choices=[
            {
                "index": 0,
                "message": {"role": "assistant", "content": raw.text},
                "finish_reason": raw.finish_reason or "stop",
            }
        ],
        usage=module.Usage(
            prompt_tokens=raw.prompt_tokens,
            completion_tokens=raw.completion_tokens,
            total_tokens=tokens,
        ),
    )
