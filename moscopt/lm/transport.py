"""Transports: one attempt at one request; a recognised failure becomes a classified `Fault`.

Every transport sends the body of `moscopt.lm.wire.chat_body` and returns a `RawAnswer`:

- `HTTPTransport` (here) posts it to `{api_base}/chat/completions` over keep-alive HTTP/1.1
  (`moscopt.lm.http11`: asyncio streams and h11), for `openai/...` and `hosted_vllm/...` models
  at an `api_base` (vLLM, llama.cpp, Ollama's OpenAI API, a LiteLLM proxy): litellm's own
  per-call work (5-7 ms of CPU) would dominate a fast local endpoint, httpx's connection pool
  costs several ms per call at 64 in flight, and aiohttp's import takes a third of a second.
- `LiteLLMTransport` and `DeploymentsTransport` (`moscopt.lm.litellm_transport`): every other
  provider, and several deployments behind litellm's Router (whose attempts on OpenAI-compatible
  deployments come back here: `moscopt.lm.router_host`).
- `LocalTransport` (`moscopt.lm.local`): the embedded model, in process.

Only a named set of failures is a `Fault`: HTTP statuses, the network and protocol failures
`moscopt.lm.http11` raises as `HTTPError`, timeouts and bodies that are not chat completions.
Anything else (a `TypeError` in our code, say) is a bug and propagates at once, with its
traceback. Transports never retry (the client does, so that retries are counted once) and never
log.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any, Protocol
from urllib.parse import urlsplit

from moscopt.core.jsonio import loads
from moscopt.errors import UserError
from moscopt.lm.base import LMRequest
from moscopt.lm.http11 import BodyTooLarge, HTTPError, Origin, Pool
from moscopt.lm.redact import redact
from moscopt.lm.retry import Fault, fault_for_status, parse_retry_after
from moscopt.lm.sync import until_loop_end
from moscopt.lm.wire import NotAnAnswer, RawAnswer, chat_body, dumps, raw_answer

# Providers whose wire format at an api_base is plain OpenAI chat, and their key variables.
DIRECT_PROVIDERS = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}


class Transport(Protocol):
    """One attempt at one request (see the module docstring for what raises what)."""

    async def asend(self, request: LMRequest) -> RawAnswer: ...

    async def aclose(self) -> None:
        """Release what this transport holds for the running loop."""
        ...

    def close(self) -> None:
        """Release what can be released without a loop (the rest goes with its loop)."""
        ...


def uses_direct_transport(model: str, api_base: str | None) -> bool:
    provider = model.partition("/")[0]
    return api_base is not None and provider in DIRECT_PROVIDERS and "/" in model


class HTTPTransport:
    """POST the chat body to `{api_base}/chat/completions`; one connection pool per loop."""

    def __init__(
        self,
        model: str,
        api_base: str,
        *,
        timeout: float,
        max_connections: int,
        api_key: str | None = None,
        max_response_bytes: int | None = None,
    ) -> None:
        provider, _, name = model.partition("/")
        self._max_body = max_response_bytes
        self._wire_model = name
        self._url = api_base.rstrip("/") + "/chat/completions"
        self._timeout = timeout
        self._max_connections = max(1, max_connections)
        key = api_key or os.environ.get(DIRECT_PROVIDERS.get(provider, ""), "")
        self._headers = [("Content-Type", "application/json")]
        if key:
            self._headers.append(("Authorization", f"Bearer {key}"))
        self._key = key
        # per loop: its pool and the generator that closes it with the loop (`until_loop_end`)
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Pool, Any]]
        self._pools = weakref.WeakKeyDictionary()
        self._proxy = env_proxy(self._url)
        try:
            Origin.of(self._url)
        except ValueError:
            raise UserError(
                f"api_base must be an http:// or https:// URL, not {api_base!r}", field="api_base"
            ) from None

    def __repr__(self) -> str:  # never show the key
        return f"HTTPTransport({self._url!r})"

    async def _pool(self) -> Pool:
        loop = asyncio.get_running_loop()
        entry = self._pools.get(loop)
        if entry is not None:
            return entry[0]
        pool = Pool(
            self._url, limit=self._max_connections, proxy=self._proxy, max_body=self._max_body
        )
        keeper = until_loop_end(pool.close)
        self._pools[loop] = (pool, keeper)
        await keeper.__anext__()
        return pool

    async def asend(self, request: LMRequest) -> RawAnswer:
        pool = await self._pool()
        payload = dumps(chat_body(request, self._wire_model))
        try:
            response = await pool.post(self._url, self._headers, payload, timeout=self._timeout)
        except TimeoutError:
            raise Fault("transient", f"timed out after {self._timeout:g}s") from None
        except BodyTooLarge as e:
            raise Fault("request", too_large(e.limit)) from None
        except HTTPError as e:
            raise Fault("transient", self._redact(f"connection failed: {e}")) from None
        retry_after = response.headers.get("retry-after")
        return self._answer(response.status, response.content, retry_after)

    def _redact(self, text: str) -> str:
        return redact(text, [self._key])

    def _answer(self, status: int, content: bytes, retry_after: str | None) -> RawAnswer:
        if not 200 <= status < 300:
            message = f"HTTP {status}: {error_message(content)}"
            raise fault_for_status(status, self._redact(message), parse_retry_after(retry_after))
        try:
            data = loads(content)
        except ValueError:
            snippet = content[:80].decode("utf-8", "replace")
            raise Fault("transient", self._redact(f"response is not JSON: {snippet!r}")) from None
        try:
            return raw_answer(data, secrets=(self._key,))
        except NotAnAnswer as e:
            raise Fault("request" if e.empty else "transient", str(e)) from None

    async def aclose(self) -> None:
        entry = self._pools.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()

    def close(self) -> None:
        # Pools of loops that ended were closed by their loop; a running loop's pool closes
        # with it (or with `aclose`).
        for loop in [lp for lp in self._pools if lp.is_closed()]:
            del self._pools[loop]


def too_large(limit: int) -> str:
    """The message of a response past `llm.max_response_bytes` (names the key to raise)."""
    return (
        f"the response is larger than {limit} bytes, the bound set by llm.max_response_bytes "
        "(raise it in moscopt.yaml if such answers are expected)"
    )


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (`HTTPS_PROXY`, `NO_PROXY`, ...), or None."""
    import urllib.request

    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def error_message(content: bytes) -> str:
    """The message of an error body (OpenAI's `{"error": {"message": ...}}` or any text)."""
    try:
        data = loads(content)
    except ValueError:
        return content[:200].decode("utf-8", "replace")
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:500]
        return str(error)[:500]
    return str(data)[:500]
