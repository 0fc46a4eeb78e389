"""Transports through litellm: one provider (`LiteLLMTransport`), or litellm's Router over
several deployments of one model (`DeploymentsTransport`, see `moscopt.lm.deployments`).

Both send the fields of `moscopt.lm.wire.chat_body` (with Anthropic's system message marked
for prompt caching), with litellm's and the provider SDK's own retries off: the client retries,
and counts. litellm is imported in a background thread when the transport is built and awaited
off the loop (`moscopt.lm.litellm_env`).

`litellm_fault` names what is a `Fault`: litellm's and the OpenAI SDK's API errors (by status,
or as connection errors), timeouts and missing keys. Anything else propagates unchanged, and so
does a bug that litellm wrapped into an `APIConnectionError` (its cause is re-raised): a
`TypeError` is never retried as if the network had failed.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

from moscopt.lm.base import LMRequest, Message
from moscopt.lm.litellm_env import alitellm, preload
from moscopt.lm.redact import redact
from moscopt.lm.retry import Fault, fault_for_status, parse_retry_after
from moscopt.lm.transport import DIRECT_PROVIDERS, too_large
from moscopt.lm.wire import (
    NotAnAnswer,
    RawAnswer,
    chat_body,
    clean_text,
    marks_prompt_cache,
    raw_answer,
    with_cache_marks,
)

SAFETY_MARGIN = 5.0  # seconds added to the request timeout for the outer wall-clock guard
_MISSING_KEY = re.compile(
    r"(?i)missing credentials|api_key\b.{0,40}\b(must be set|not set|missing)"
)
# Exceptions that are bugs (ours or a library's), never a network failure.
BUGS: tuple[type[BaseException], ...] = (
    TypeError,
    AttributeError,
    NameError,
    AssertionError,
    NotImplementedError,
    ImportError,
    RecursionError,
)


def litellm_fields(
    request: LMRequest, model: str, *, cache_marks: bool | None = None
) -> dict[str, Any]:
    """The chat body as litellm keyword arguments, provider retries off; the system message
    is marked for prompt caching where the model takes marks (`cache_marks`: decided)."""
    fields = chat_body(request, model)
    # fresh dicts (litellm may edit them), with no lone surrogate (its JSON encoder refuses them)
    messages: list[Message] = [
        {"role": m["role"], "content": clean_text(m["content"])} for m in request.messages
    ]
    if marks_prompt_cache(model) if cache_marks is None else cache_marks:
        fields["messages"] = with_cache_marks(messages)
    else:
        fields["messages"] = messages
    fields["num_retries"] = 0  # the client retries, and counts
    fields["max_retries"] = 0  # nor may the provider SDK retry behind our back
    fields["drop_params"] = True
    return fields


def answer_of(
    response: Any,
    deployment: str | None = None,
    *,
    secrets: list[str | None] | None = None,
    max_bytes: int | None = None,
) -> RawAnswer:
    """The `RawAnswer` of a litellm response (with litellm's own cost, if it priced it), the
    `secrets` masked in its text; a `Fault` naming `llm.max_response_bytes` when its text and
    tool calls are longer than `max_bytes`.

    litellm reads the body itself (through each provider's SDK), so on this path the bound is
    applied to the answer it parsed: nothing larger is cached, recorded or graded, but the
    memory litellm used to read it is not bounded (the direct HTTP transport's is)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    try:
        raw = raw_answer(
            response,
            cost=float(cost) if isinstance(cost, int | float) else None,
            deployment=deployment,
            secrets=tuple(secrets or ()),
        )
    except NotAnAnswer as e:
        raise Fault("request" if e.empty else "transient", str(e)) from None
    if max_bytes is not None:
        size = len(raw.text) + sum(len(c.arguments) + len(c.name) for c in raw.tool_calls)
        if size > max_bytes:
            raise Fault("request", too_large(max_bytes))
    return raw


def _wrapped_bug(e: BaseException) -> BaseException | None:
    """The bug under a litellm `APIConnectionError` made from it, if that is what it is."""
    seen: set[int] = set()
    cause = e.__cause__ or e.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, OSError | TimeoutError):
            return None  # the network did fail underneath
        if isinstance(cause, BUGS):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def litellm_fault(e: BaseException, secrets: list[str | None]) -> Fault | BaseException | None:
    """The `Fault` for a failure litellm raised; the bug to raise instead; or None (re-raise)."""
    import openai  # loaded with litellm

    message = " ".join(redact(f"{type(e).__name__}: {e}", secrets).split())[:500]
    if isinstance(e, TimeoutError | openai.APITimeoutError):
        return Fault("transient", message, 408)
    if not isinstance(e, openai.OpenAIError):
        return None  # not a provider failure: a bug or something unknown, raised as it is
    if _MISSING_KEY.search(message):
        return Fault("auth", message, 401)
    if type(e).__name__ == "ContextWindowExceededError":
        return Fault("request", message, 400)
    if isinstance(e, openai.APIConnectionError):
        bug = _wrapped_bug(e)
        if bug is not None:
            return bug
        return Fault("transient", message, getattr(e, "status_code", None))
    status = getattr(e, "status_code", None)
    if isinstance(status, int):
        return fault_for_status(status, message, _retry_after(e))
    if isinstance(e, openai.APIError):
        return Fault("transient", message)  # an API error without a status: the server's
    return None


async def call_litellm(call: Any, timeout: float, secrets: list[str | None]) -> Any:
    """Await a litellm call under a wall-clock guard, turning its failures into faults."""
    try:
        return await asyncio.wait_for(call, timeout + SAFETY_MARGIN)
    except TimeoutError:
        raise Fault("transient", f"timed out after {timeout:g}s") from None
    except Exception as e:
        found = litellm_fault(e, secrets)
        if found is None:
            raise
        if isinstance(found, Fault):
            raise found from None
        raise found from None  # the bug, with its own traceback


class LiteLLMTransport:
    """One `litellm.acompletion` per attempt."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None,
        timeout: float,
        api_key: str | None = None,
        max_response_bytes: int | None = None,
    ) -> None:
        self.model = model
        self._max_bytes = max_response_bytes
        provider = model.partition("/")[0]
        self._api_base = api_base
        self._timeout = timeout
        self._key = api_key
        if not api_key and api_base and provider in DIRECT_PROVIDERS:
            # An OpenAI-compatible server often needs no key, but the OpenAI SDK under litellm
            # refuses to send without one; a server that does check answers 401.
            self._key = os.environ.get(DIRECT_PROVIDERS[provider]) or "no-key"
        preload()  # litellm imports in the background, overlapped with the caller's start-up

    def __repr__(self) -> str:
        return f"LiteLLMTransport({self.model!r})"

    def _kwargs(self, request: LMRequest) -> dict[str, Any]:
        kwargs = litellm_fields(request, self.model)
        kwargs["timeout"] = self._timeout
        if self._api_base is not None:
            kwargs["api_base"] = self._api_base
        if self._key:
            kwargs["api_key"] = self._key
        return kwargs

    async def asend(self, request: LMRequest) -> RawAnswer:
        module = await alitellm()
        kwargs = self._kwargs(request)
        response = await call_litellm(module.acompletion(**kwargs), self._timeout, [self._key])
        return answer_of(response, secrets=[self._key], max_bytes=self._max_bytes)

    async def aclose(self) -> None:
        return None  # litellm owns its clients (and closes them at exit)

    def close(self) -> None:
        return None


def _retry_after(e: BaseException) -> float | None:
    for source in (getattr(e, "response", None), e):
        headers = getattr(source, "headers", None) or getattr(
            source, "litellm_response_headers", None
        )
        if headers is not None:
            try:
                value = headers.get("retry-after")
            except (AttributeError, TypeError, ValueError):
                continue
            if value is not None:
                return parse_retry_after(value if isinstance(value, str) else None)
    return None
