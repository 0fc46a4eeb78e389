"""Transports: one attempt at one request, every failure turned into a classified `Fault`.

`LiteLLMTransport` serves every litellm model string (and the embedded `local/` provider).
`OpenAICompatTransport` speaks the OpenAI chat API to a user-given `api_base` directly over
httpx; it is used only for `openai/...` and `hosted_vllm/...` models at an `api_base`, where it
sends the same request litellm would, because litellm's own per-call work (5-7 ms of CPU)
would dominate a fast local endpoint. `LLMConfig.transport = "litellm"` turns it off.

Transports never retry (the client does, so that retries are counted once) and never log.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

from moscopt.lm.base import LMRequest
from moscopt.lm.litellm_env import alitellm, litellm, preload
from moscopt.lm.local import PROVIDER as LOCAL_PROVIDER
from moscopt.lm.redact import redact
from moscopt.lm.retry import Fault, fault_for_status, parse_retry_after

# Providers whose wire format at an api_base is plain OpenAI chat, and their key variables.
DIRECT_PROVIDERS = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}
SAFETY_MARGIN = 5.0  # seconds added to the request timeout for the outer wall-clock guard
_MISSING_KEY = re.compile(
    r"(?i)missing credentials|api_key\b.{0,40}\b(must be set|not set|missing)"
)


@dataclass(frozen=True)
class RawAnswer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None
    cost: float | None = None  # when the transport knows it (litellm); else priced by the client


class Transport(Protocol):
    def send(self, request: LMRequest) -> RawAnswer: ...

    async def asend(self, request: LMRequest) -> RawAnswer: ...

    def close(self) -> None: ...


def response_format(schema: Any) -> dict[str, Any] | None:
    if schema is None:
        return None
    return {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": True},
    }


def uses_direct_transport(model: str, api_base: str | None) -> bool:
    provider = model.partition("/")[0]
    return api_base is not None and provider in DIRECT_PROVIDERS and "/" in model


# -- direct OpenAI-compatible HTTP ---------------------------------------------------------------


class OpenAICompatTransport:
    """POST `{api_base}/chat/completions` with httpx; pooled connections, one client per loop."""

    def __init__(
        self,
        model: str,
        api_base: str,
        *,
        timeout: float,
        max_connections: int,
        api_key: str | None = None,
    ) -> None:
        provider, _, name = model.partition("/")
        self._wire_model = name
        self._url = api_base.rstrip("/") + "/chat/completions"
        self._timeout = timeout
        self._max_connections = max_connections
        key = api_key or os.environ.get(DIRECT_PROVIDERS.get(provider, ""), "")
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._key = key
        self._sync: Any = None
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatTransport({self._url!r})"

    def _payload(self, request: LMRequest) -> bytes:
        body: dict[str, Any] = {
            "model": self._wire_model,
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
        }
        if request.provider_seed is not None:
            body["seed"] = request.provider_seed
        fmt = response_format(request.schema)
        if fmt is not None:
            body["response_format"] = fmt
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _limits(self) -> Any:
        import httpx

        n = max(1, self._max_connections)
        return httpx.Limits(max_connections=n, max_keepalive_connections=n)

    def _sync_client(self) -> Any:
        if self._sync is None:
            import httpx

            self._sync = httpx.Client(timeout=self._timeout, limits=self._limits())
        return self._sync

    def _async_client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is None:
            import httpx

            client = httpx.AsyncClient(timeout=self._timeout, limits=self._limits())
            self._async[loop] = client
        return client

    def send(self, request: LMRequest) -> RawAnswer:
        import httpx

        try:
            response = self._sync_client().post(
                self._url, content=self._payload(request), headers=self._headers
            )
        except httpx.TimeoutException:
            raise Fault("transient", f"timed out after {self._timeout:g}s") from None
        except httpx.HTTPError as e:
            raise Fault("transient", self._redact(f"connection failed: {e!r}")) from None
        return self._answer(response.status_code, response.content, response.headers)

    async def asend(self, request: LMRequest) -> RawAnswer:
        import httpx

        client = self._async_client()
        try:
            # httpx bounds connect, each read and each write by the timeout; no extra task here
            response = await client.post(
                self._url, content=self._payload(request), headers=self._headers
            )
        except (httpx.TimeoutException, TimeoutError):
            raise Fault("transient", f"timed out after {self._timeout:g}s") from None
        except httpx.HTTPError as e:
            raise Fault("transient", self._redact(f"connection failed: {e!r}")) from None
        return self._answer(response.status_code, response.content, response.headers)

    def _redact(self, text: str) -> str:
        return redact(text, [self._key])

    def _answer(self, status: int, content: bytes, headers: Any) -> RawAnswer:
        if status != 200:
            message = f"HTTP {status}: {_error_message(content)}"
            retry_after = parse_retry_after(headers.get("retry-after"))
            raise fault_for_status(status, self._redact(message), retry_after)
        try:
            data = json.loads(content)
        except ValueError:
            snippet = content[:80].decode("utf-8", "replace")
            raise Fault("transient", self._redact(f"response is not JSON: {snippet!r}")) from None
        return parse_openai_answer(data)

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None
        self._async.clear()  # async clients close with their loop's transports


def _error_message(content: bytes) -> str:
    try:
        data = json.loads(content)
    except ValueError:
        return content[:200].decode("utf-8", "replace")
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:500]
        return str(error)[:500]
    return str(data)[:500]


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_openai_answer(data: Any) -> RawAnswer:
    """A `RawAnswer` from an OpenAI chat completion body; `Fault` if it is not one."""
    if not isinstance(data, dict) or "choices" not in data:
        raise Fault("transient", "response is not a chat completion (no 'choices')")
    choices = data["choices"]
    if not isinstance(choices, list) or not choices:
        raise Fault("request", "the response has an empty choice list")
    choice: dict[str, Any] = choices[0] if isinstance(choices[0], dict) else {}
    message: dict[str, Any] = _as_dict(choice.get("message"))
    text = message.get("content") or ""
    usage: dict[str, Any] = _as_dict(data.get("usage"))
    return RawAnswer(
        text=text if isinstance(text, str) else json.dumps(text),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choice.get("finish_reason"),
    )


# -- litellm -------------------------------------------------------------------------------------


class LiteLLMTransport:
    """One `litellm.completion` / `acompletion` per attempt, with litellm's retries off."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None,
        timeout: float,
        api_key: str | None = None,
    ) -> None:
        self.model = model
        provider = model.partition("/")[0]
        self.local = provider == LOCAL_PROVIDER
        self._api_base = None if self.local else api_base
        self._timeout = timeout
        self._key = api_key
        if not api_key and api_base and provider in DIRECT_PROVIDERS:
            # An OpenAI-compatible server often needs no key, but the OpenAI SDK under litellm
            # refuses to send without one; a server that does check answers 401.
            self._key = os.environ.get(DIRECT_PROVIDERS[provider]) or "no-key"
        preload()  # litellm imports in the background, overlapped with the caller's start-up
        if self.local:
            from moscopt.lm.local import engine

            engine().preload()

    def __repr__(self) -> str:
        return f"LiteLLMTransport({self.model!r})"

    def _kwargs(self, request: LMRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "timeout": self._timeout,
            "num_retries": 0,  # the client retries, and counts
            "max_retries": 0,  # nor may the provider SDK retry behind our back
            "drop_params": True,
        }
        if request.provider_seed is not None:
            kwargs["seed"] = request.provider_seed
        fmt = response_format(request.schema)
        if fmt is not None:
            kwargs["response_format"] = fmt
        if self._api_base is not None:
            kwargs["api_base"] = self._api_base
        if self._key:
            kwargs["api_key"] = self._key
        return kwargs

    def send(self, request: LMRequest) -> RawAnswer:
        module = litellm()
        try:
            response = module.completion(**self._kwargs(request))
        except Exception as e:
            raise self._fault(e) from None
        return self._answer(response)

    async def asend(self, request: LMRequest) -> RawAnswer:
        module = await alitellm()
        call = module.acompletion(**self._kwargs(request))
        try:
            if self.local:
                # The embedded model queues callers; its generation is bounded by max_tokens,
                # so the wall-clock guard (which would count queueing time) does not apply.
                response = await call
            else:
                response = await asyncio.wait_for(call, self._timeout + SAFETY_MARGIN)
        except TimeoutError:
            raise Fault("transient", f"timed out after {self._timeout:g}s") from None
        except Exception as e:
            raise self._fault(e) from None
        return self._answer(response)

    def _answer(self, response: Any) -> RawAnswer:
        choices = getattr(response, "choices", None)
        if not choices:
            raise Fault("request", "the response has an empty choice list")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        usage = getattr(response, "usage", None)
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
        return RawAnswer(
            text=text if isinstance(text, str) else json.dumps(text),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=getattr(choice, "finish_reason", None),
            cost=float(cost) if isinstance(cost, int | float) else None,
        )

    def _fault(self, e: Exception) -> Fault:
        module = litellm()
        message = redact(f"{type(e).__name__}: {e}", [self._key])
        message = " ".join(message.split())[:500]
        if isinstance(e, module.Timeout | TimeoutError):
            return Fault("transient", message, 408)
        if isinstance(e, module.ContextWindowExceededError):
            return Fault("request", message, 400)
        if isinstance(e, module.APIConnectionError):
            return Fault("transient", message, getattr(e, "status_code", None))
        if _MISSING_KEY.search(message):
            return Fault("auth", message, 401)
        status = getattr(e, "status_code", None)
        if isinstance(status, int):
            return fault_for_status(status, message, _retry_after(e))
        return Fault("transient", message)

    def close(self) -> None:
        return None


def _retry_after(e: Exception) -> float | None:
    for source in (getattr(e, "response", None), e):
        headers = getattr(source, "headers", None) or getattr(
            source, "litellm_response_headers", None
        )
        if headers is not None:
            try:
                value = headers.get("retry-after")
            except AttributeError:
                continue
            if value is not None:
                return parse_retry_after(str(value))
    return None
