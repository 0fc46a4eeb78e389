"""The `LM` seam: the one interface through which moscopt talks to language models.

Everything outside `moscopt.lm` receives an `LM` and never imports litellm. Tests drive the
seam with `moscopt.testing.FakeLM`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from moscopt.run.fsio import canonical_json

# Bump when the meaning of a cached entry changes: old entries then simply stop matching.
# 2: the endpoint's address is no longer part of the key (a restarted server keeps its hits).
CACHE_FORMAT = 2

Role = Literal["system", "user", "assistant"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant"})


class Message(TypedDict):
    role: Role
    content: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the provider read from its prompt cache

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class LMRequest:
    """Everything that determines an answer; its canonical JSON hash is the cache key.

    `model` is the model's identity (the litellm model string, or the name of a router's model
    group), not where it is served: the endpoint's address is not part of a request, so the
    same model behind a restarted server, another port or another replica shares its answers.
    `seed` is the base seed; the provider is sent `seed + sample` so that distinct samples of
    one prompt differ where the provider honours seeds. Secrets are never part of a request.
    """

    model: str
    messages: tuple[Message, ...]
    temperature: float
    top_p: float
    max_tokens: int
    seed: int | None = None
    schema: Mapping[str, Any] | None = None
    sample: int = 0

    @property
    def provider_seed(self) -> int | None:
        return None if self.seed is None else self.seed + self.sample

    def key_fields(self) -> dict[str, Any]:
        """The fields hashed into the cache key: all of them."""
        return {
            "v": CACHE_FORMAT,
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "schema": self.schema,
            "sample": self.sample,
        }

    def key(self) -> str:
        return self._key

    @cached_property
    def _key(self) -> str:  # computed once: a call looks it up and then stores under it
        text = canonical_json(self.key_fields())
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ToolRequest(LMRequest):
    """A request that also offers native tools (OpenAI function definitions). Its key is the
    plain request's fields plus `tools`, so a request without tools keys as it always has."""

    tools: tuple[Mapping[str, Any], ...] = ()

    def key_fields(self) -> dict[str, Any]:
        return {**super().key_fields(), "tools": [dict(t) for t in self.tools]}


@dataclass(frozen=True)
class ToolCall:
    """One native tool call in an answer: the tool's name and its arguments as JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    """One answer. `cost` is in USD (0 for cache hits and unpriced models); `deployment` names
    the endpoint that answered when a router chose among several."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    cache_hit: bool = False
    sample: int = 0
    latency: float = 0.0  # seconds spent getting it, retries and waits included
    retries: int = 0
    finish_reason: str | None = None
    data: Any = None  # the parsed JSON of a structured call; None otherwise
    deployment: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()  # native tool calls (requests with `tools` only)


@runtime_checkable
class LM(Protocol):
    """A chat model behind retries, a cache, budgets and accounting.

    `complete` (sync) and `acomplete` (async) take the same arguments:

    - `messages`: system/user/assistant messages, each `{"role": ..., "content": str}`.
    - `schema`: a JSON schema; the answer must be a JSON document matching it. Give strings a
      `maxLength`, arrays a `maxItems` and objects `additionalProperties: false` so that
      constrained generation terminates. `Completion.data` holds the parsed value.
    - `sample`: index of this sample of the same request (0, 1, 2, ...). Part of the cache key,
      so asking for sample 3 twice is one call; distinct indices are distinct calls.
    - `purpose`: a short label recorded with the call in the event log ("gate", "reflect").
    - `temperature`, `top_p`, `max_tokens`: override the configured sampling for this call.

    Cached: a successful answer (its raw text) under the hash of the full request
    (`LMRequest.key`); with a `schema`, only an answer that parsed, so a failed one is asked
    again rather than replayed. A hit makes no call, costs 0 and is counted.
    Retried (with exponential backoff and jitter, honouring Retry-After, up to `max_retries`):
    429, 5xx, timeouts, dropped connections, unparseable response bodies: a named set (see
    `moscopt.lm.transport`); any other exception is a bug and propagates at once, unretried.
    Model text has lone UTF-16 surrogates replaced by U+FFFD (`moscopt.lm.wire.clean_text`).
    Raises: `BudgetExceeded` before a call that would pass a budget; `LMAuthError`,
    `LMNotFoundError` (fail fast, never retried) and `LMUnavailableError` (retries exhausted) —
    all `LMFatalError`, on which the caller saves state and stops; `LMRequestError` (this request
    cannot be answered) and `LMOutputError` (structured output invalid), which the caller
    handles by its own policy. `ValueError` for malformed `messages` (a programming error).
    """

    @property
    def model(self) -> str: ...

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
    ) -> Completion: ...

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
    ) -> Completion: ...


@runtime_checkable
class ToolCallingLM(Protocol):
    """An `LM` that can also offer tools natively (`LiteLLMClient`).

    `supports_tools()` says whether the model takes native tool definitions (litellm's
    `supports_function_calling`; never for the embedded model). `acomplete(..., tools=...)`
    sends `tools` (OpenAI function definitions) with the request; the answer's calls are in
    `Completion.tool_calls`. Callers that get False, or an `LM` without these, use a text
    protocol instead.
    """

    async def supports_tools(self) -> bool: ...

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
    ) -> Completion: ...


def check_messages(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Validate and freeze `messages`; a malformed list is a programming error (ValueError)."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValueError("messages must be a list of {'role', 'content'} mappings")
    if not messages:
        raise ValueError("messages must not be empty")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or set(m) != {"role", "content"}:
            raise ValueError(f"messages[{i}] must have exactly the keys 'role' and 'content'")
        role, content = m["role"], m["content"]
        if role not in ROLES:
            raise ValueError(f"messages[{i}].role must be one of {sorted(ROLES)}, not {role!r}")
        if not isinstance(content, str):
            raise ValueError(f"messages[{i}].content must be a string")
        out.append({"role": role, "content": content})
    return tuple(out)


def public_url(url: str | None) -> str | None:
    """`url` without user info, query or fragment: the part that is safe to hash and record."""
    if url is None:
        return None
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))
