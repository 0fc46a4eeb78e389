"""The one wire format of a chat call: the body every transport sends, and the answer it gets.

`chat_body` turns an `LMRequest` into the OpenAI chat body (the direct HTTP transport posts it;
the litellm, router and embedded transports pass the same fields). `raw_answer` turns an OpenAI
chat completion (a dict, or litellm's response object) into a `RawAnswer`, and is the boundary
where model text is sanitized: lone UTF-16 surrogates (which a JSON body may carry as `\\ud800`
escapes, and which no UTF-8 file, SQLite row or terminal accepts) become U+FFFD.

JSON goes through orjson (several times faster than `json` for these bodies); a body orjson
refuses (invalid UTF-8, lone surrogates) is decoded leniently by `json` instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from moscopt.lm.base import LMRequest, Message, ToolCall, ToolRequest

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
# Where cache_control is understood on a content block (litellm passes it to these providers).
PROMPT_CACHE_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai"})


@dataclass(frozen=True)
class RawAnswer:
    """One attempt's answer, before accounting. `cost` when the transport knows it (litellm)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0  # prompt tokens the provider served from its prompt cache
    finish_reason: str | None = None
    cost: float | None = None
    deployment: str | None = None  # which endpoint answered, when a router chose one
    tool_calls: tuple[ToolCall, ...] = ()  # native tool calls (requests with tools only)


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD (the common case costs one encode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON; strings with lone surrogates are sent with U+FFFD in their place."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return orjson.dumps(_clean_tree(obj))  # still failing: not JSON at all, a bug: raise


def loads(data: bytes | str) -> Any:
    """Parse JSON, tolerating invalid UTF-8 and lone-surrogate escapes (ValueError: not JSON)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        return json.loads(text)


def _clean_tree(obj: Any) -> Any:
    if isinstance(obj, str):
        return clean_text(obj)
    if isinstance(obj, dict):
        return {clean_text(str(k)): _clean_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean_tree(v) for v in obj]
    return obj


def response_format(schema: Any) -> dict[str, Any] | None:
    if schema is None:
        return None
    return {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": True},
    }


def chat_body(request: LMRequest, model: str) -> dict[str, Any]:
    """The OpenAI chat body for `request`, naming the model as the endpoint knows it."""
    body: dict[str, Any] = {
        "model": model,
        "messages": list(request.messages),
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_tokens": request.max_tokens,
    }
    if request.provider_seed is not None:
        body["seed"] = request.provider_seed
    fmt = response_format(request.schema)
    if fmt is not None:
        body["response_format"] = fmt
    if isinstance(request, ToolRequest) and request.tools:
        body["tools"] = [dict(t) for t in request.tools]
    return body


def marks_prompt_cache(model: str) -> bool:
    """Whether `model` takes `cache_control` marks (Anthropic's models, directly or hosted)."""
    provider, _, name = model.partition("/")
    return provider in PROMPT_CACHE_PROVIDERS and ("claude" in name or provider == "anthropic")


def with_cache_marks(messages: list[Message]) -> list[dict[str, Any]]:
    """`messages` with the system message (the stable skills block) marked as cacheable.

    The system message comes first and is the same for every task that activates the same
    skills, so the provider caches it once and reads it back at a fraction of the price.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "system" and not out:
            block = {"type": "text", "text": m["content"], "cache_control": {"type": "ephemeral"}}
            out.append({"role": "system", "content": [block]})
        else:
            out.append(dict(m))
    return out


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def cached_prompt_tokens(usage: Any) -> int:
    """Prompt tokens read from the provider's cache (OpenAI's and Anthropic's spellings)."""
    details = _get(usage, "prompt_tokens_details")
    found = _int(_get(details, "cached_tokens")) if details is not None else 0
    return found or _int(_get(usage, "cache_read_input_tokens"))


class NotAnAnswer(ValueError):
    """The body is not a chat completion; `empty` when it is one with no choices."""

    def __init__(self, message: str, *, empty: bool = False) -> None:
        super().__init__(message)
        self.empty = empty


def raw_answer(data: Any, *, cost: float | None = None, deployment: str | None = None) -> RawAnswer:
    """A `RawAnswer` from an OpenAI-shaped chat completion (dict or object); `NotAnAnswer`."""
    choices = _get(data, "choices")
    if choices is None:
        raise NotAnAnswer("response is not a chat completion (no 'choices')")
    if not isinstance(choices, list) or not choices:
        raise NotAnAnswer("the response has an empty choice list", empty=True)
    choice = choices[0]
    message = _get(choice, "message")
    text = _get(message, "content") if message is not None else None
    if not isinstance(text, str):
        text = "" if text is None else json.dumps(text)
    usage = _get(data, "usage")
    finish = _get(choice, "finish_reason")
    return RawAnswer(
        text=clean_text(text),
        prompt_tokens=_int(_get(usage, "prompt_tokens")),
        completion_tokens=_int(_get(usage, "completion_tokens")),
        cached_tokens=cached_prompt_tokens(usage),
        finish_reason=finish if isinstance(finish, str) else None,
        cost=cost,
        deployment=deployment,
        tool_calls=tool_calls_of(message),
    )


def tool_calls_of(message: Any) -> tuple[ToolCall, ...]:
    """The native tool calls of an answer's message (OpenAI's `tool_calls`); malformed
    entries are skipped."""
    calls = _get(message, "tool_calls") if message is not None else None
    if not isinstance(calls, list | tuple):
        return ()
    out = []
    for i, call in enumerate(calls):
        function = _get(call, "function")
        name = _get(function, "name") if function is not None else None
        if not isinstance(name, str) or not name:
            continue
        arguments = _get(function, "arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        call_id = _get(call, "id")
        out.append(
            ToolCall(
                id=call_id if isinstance(call_id, str) else f"call_{i}",
                name=clean_text(name),
                arguments=clean_text(arguments),
            )
        )
    return tuple(out)
