"""The entries of the response cache (`moscopt.lm.cache`): JSON text holding only the answer
(text, token counts, finish reason, the model, tool calls), secrets scrubbed; an entry that cannot
be read is None (a miss), never an error."""

from __future__ import annotations

from typing import Any

from moscopt.core.jsonio import loads
from moscopt.lm.base import Completion, ToolCall, Usage
from moscopt.lm.redact import scrub_secrets
from moscopt.lm.wire import dumps, model_text, tokens


def encode_entry(completion: Completion) -> str:
    """The JSON text stored for `completion`: the answer only, secrets scrubbed."""
    entry: dict[str, Any] = {
        "text": scrub_secrets(completion.text),
        "model": completion.model,
        "prompt_tokens": completion.usage.prompt_tokens,
        "completion_tokens": completion.usage.completion_tokens,
        "cached_tokens": completion.usage.cached_tokens,
        "finish_reason": completion.finish_reason,
    }
    if completion.tool_calls:  # only then: entries without tool calls are as before
        entry["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": scrub_secrets(c.arguments)}
            for c in completion.tool_calls
        ]
    return dumps(entry).decode("utf-8")


def decode_entry(value: Any) -> Completion | None:
    """The completion stored in `value`, or None when it is not a readable entry (or None)."""
    if value is None:
        return None
    try:
        entry = loads(value if isinstance(value, bytes | str) else b"")
        finish = entry.get("finish_reason")
        return Completion(
            text=model_text(_str(entry["text"])),
            model=_str(entry["model"]),
            usage=Usage(
                _count(entry["prompt_tokens"]),
                _count(entry["completion_tokens"]),
                _count(entry.get("cached_tokens") or 0),
            ),
            finish_reason=model_text(_str(finish)) if finish is not None else None,
            tool_calls=tuple(
                ToolCall(
                    _str(c["id"]), model_text(_str(c["name"])), model_text(_str(c["arguments"]))
                )
                for c in entry.get("tool_calls") or ()
            ),
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
        return None  # a damaged entry is a miss, never a crash


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _count(value: Any) -> int:
    found = tokens(value)
    if found is None:
        raise ValueError("not a token count")
    return found
