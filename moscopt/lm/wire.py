"""The one wire format of a chat call: the body every transport sends, and the answer it gets.

`chat_body` turns an `LMRequest` into the OpenAI chat body (the direct HTTP transport posts it;
the litellm, router and embedded transports pass the same fields). `raw_answer` turns an OpenAI
chat completion (a dict, or litellm's response object) into a `RawAnswer`, and is the boundary
where model text is sanitized: lone UTF-16 surrogates (which a JSON body may carry as `\\ud800`
escapes, and which no UTF-8 file, SQLite row or terminal accepts) become U+FFFD; terminal
control characters (escape sequences: OSC 52 clipboard writes, OSC 8 links, cursor movement,
screen clears; every C0/C1 control but newline and tab) are removed (`model_text`); the value
of the endpoint's key and of secret environment variables, in their simple encodings, is masked
(`moscopt.lm.redact.scrub_secrets`); and token counts that are not plausible (negative,
fractional, past `MAX_TOKENS`) are flagged, not believed (`RawAnswer.usage_valid`).

JSON is read by `moscopt.core.jsonio.loads` (orjson, leniently `json` for a body orjson refuses):
a document nested deeper than its bound is a `ValueError` like any other that is not JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from moscopt.lm.base import LMRequest, Message, ToolCall, ToolRequest
from moscopt.lm.redact import scrub_secrets
from moscopt.run.fsio import strip_controls

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
MAX_TOKENS = 10**9  # a token count past this (in one call) is not believed
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
    usage_valid: bool = True  # False: the server's token counts were missing or implausible
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


def model_text(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """Model-written `text` made safe to store and show: no lone surrogates (`clean_text`), no
    terminal controls (`strip_controls`), no secret (`scrub_secrets`, with `secrets`)."""
    return scrub_secrets(strip_controls(clean_text(text)), secrets)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON; strings with lone surrogates are sent with U+FFFD in their place."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return orjson.dumps(_clean_tree(obj))  # still failing: not JSON at all, a bug: raise


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


def tokens(value: Any) -> int | None:
    """A token count as reported: an int in [0, MAX_TOKENS], else None (absent or not
    believable: negative, fractional, boolean, huge)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS:
        return value
    return None


def _int(value: Any) -> int:
    return tokens(value) or 0


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


def raw_answer(
    data: Any,
    *,
    cost: float | None = None,
    deployment: str | None = None,
    secrets: tuple[str | None, ...] = (),
) -> RawAnswer:
    """A `RawAnswer` from an OpenAI-shaped chat completion (dict or object); `NotAnAnswer`.
    Its text is `model_text` (with `secrets`, the endpoint's keys, masked too)."""
    choices = _get(data, "choices")
    if choices is None:
        raise NotAnAnswer("response is not a chat completion (no 'choices')")
    if not isinstance(choices, list) or not choices:
        raise NotAnAnswer("the response has an empty choice list", empty=True)
    choice = choices[0]
    message = _get(choice, "message")
    text = _get(message, "content") if message is not None else None
    if not isinstance(text, str):
        text = "" if text is None else _json_text(text)
    usage = _get(data, "usage")
    finish = _get(choice, "finish_reason")
    prompt = tokens(_get(usage, "prompt_tokens"))
    completion = tokens(_get(usage, "completion_tokens"))
    valid = prompt is not None and completion is not None
    if cost is not None and not 0.0 <= cost < float("inf"):
        cost, valid = None, False  # a negative or infinite price is not believed either
    return RawAnswer(
        text=model_text(text, secrets),
        prompt_tokens=prompt or 0,
        completion_tokens=completion or 0,
        cached_tokens=cached_prompt_tokens(usage) if valid else 0,
        finish_reason=strip_controls(finish) if isinstance(finish, str) else None,
        cost=cost,
        deployment=deployment,
        tool_calls=tool_calls_of(message, secrets),
        usage_valid=valid,
    )


def _json_text(value: Any) -> str:
    """`value` (from a parsed answer) as JSON text; `NotAnAnswer` if it cannot be (too deep)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError):
        raise NotAnAnswer(
            "the answer holds a value that is not JSON text (nested too deeply?)"
        ) from None


def tool_calls_of(message: Any, secrets: tuple[str | None, ...] = ()) -> tuple[ToolCall, ...]:
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
            arguments = _json_text(arguments if arguments is not None else {})
        call_id = _get(call, "id")
        out.append(
            ToolCall(
                id=call_id if isinstance(call_id, str) else f"call_{i}",
                name=model_text(name, secrets),
                arguments=model_text(arguments, secrets),
            )
        )
    return tuple(out)
