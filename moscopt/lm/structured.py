"""Structured output: the answer of a schema call parsed strictly into JSON that fits its schema.

The only leniency: surrounding whitespace and one Markdown code fence around the document (what
models without native JSON mode add). Nothing else is rescued. The answer is untrusted: one
longer than `MAX_CHARS` or nested deeper than `moscopt.core.jsonio.MAX_DEPTH` is
`OutputInvalid`, never a crash.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from moscopt.core import jsonio

if TYPE_CHECKING:
    from moscopt.lm.base import Completion

FENCE = "```"
MAX_CHARS = 4 * 1024 * 1024  # a structured answer longer than this is not parsed


class OutputInvalid(ValueError):
    """The text is not a JSON document matching the schema; the message says why."""


def strip_fence(text: str) -> str:
    body = text.strip()
    if body.startswith(FENCE) and body.endswith(FENCE) and len(body) >= 2 * len(FENCE):
        inner = body[len(FENCE) : -len(FENCE)]
        first, newline, rest = inner.partition("\n")
        if newline and first.strip().lower() in ("", "json"):
            inner = rest
        return inner.strip()
    return body


def parse_structured(text: str, schema: Mapping[str, Any]) -> Any:
    """The JSON value in `text`, validated against `schema`; `OutputInvalid` otherwise."""
    body = strip_fence(text)
    if not body:
        raise OutputInvalid("the answer is empty")
    if len(body) > MAX_CHARS:
        raise OutputInvalid(f"the answer is longer than {MAX_CHARS} characters")
    try:
        value = jsonio.loads(body)
    except json.JSONDecodeError as e:
        raise OutputInvalid(
            f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
        ) from None
    jsonschema = _jsonschema()
    validator_cls = jsonschema.validators.validator_for(schema)
    errors = sorted(
        validator_cls(schema).iter_errors(value), key=lambda err: list(err.absolute_path)
    )
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise OutputInvalid(f"does not match the schema at {where}: {err.message[:200]}")
    return value


def with_data(completion: Completion, schema: Mapping[str, Any] | None, model: str) -> Completion:
    """`completion` with its text parsed under `schema` as `data` (unchanged without a schema);
    `LMOutputError` naming `model` and carrying the completion when the text does not fit."""
    if schema is None:
        return completion
    from moscopt.lm.errors import LMOutputError

    try:
        data = parse_structured(completion.text, schema)
    except OutputInvalid as e:
        raise LMOutputError(f"model '{model}': structured output {e}", completion) from None
    return dataclasses.replace(completion, data=data)


def check_schema(schema: Mapping[str, Any]) -> None:
    """Raise ValueError if `schema` itself is not a valid JSON schema (a programming error)."""
    jsonschema = _jsonschema()
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as e:
        raise ValueError(f"invalid JSON schema: {e.message}") from None


def _jsonschema() -> Any:
    # Imported on first use (only structured calls need it); jsonschema comes with litellm.
    return importlib.import_module("jsonschema")


def parses(text: str, schema: Mapping[str, Any]) -> bool:
    """Whether `text` is a valid structured answer for `schema`."""
    try:
        parse_structured(text, schema)
    except OutputInvalid:
        return False
    return True
