"""JSON as moscopt reads it: the one bounded reader of files (run state, checkpoints, event
logs, exports, study records) and of model text (structured answers, proposals, tool-call
arguments, HTTP envelopes).

`loads` parses with orjson (several times faster than `json`); a document orjson refuses
(invalid UTF-8, lone-surrogate escapes, `NaN`, integers past 64 bits) is decoded leniently by
`json` instead. Whatever the text, the outcome is a value or a `json.JSONDecodeError` (a
`ValueError`): a document nested deeper than `MAX_DEPTH` levels (the YAML reader's bound too,
`moscopt.core.yamlio`) is one, never a `RecursionError`, and so is one that merely exhausts the
interpreter's stack. Callers name their file or purpose in the message they make of it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

MAX_DEPTH = 100  # levels of nested arrays and objects, in JSON and YAML alike (`yamlio`)
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"


# 19 or more digits: an integer orjson would read as a float (json reads it exactly)
_BIG_INT = re.compile(r"\d{19}")
_BIG_INT_BYTES = re.compile(rb"\d{19}")


def loads(data: bytes | str) -> Any:
    """The JSON value of `data`; `json.JSONDecodeError` for anything that is not one, or is
    nested deeper than `MAX_DEPTH`."""
    try:
        if (_BIG_INT if isinstance(data, str) else _BIG_INT_BYTES).search(data):  # type: ignore[arg-type]
            raise orjson.JSONDecodeError("an integer past 64 bits", "", 0)  # orjson: a float
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        try:
            value = json.loads(text)
        except RecursionError:  # orjson stops at 1,024 levels; json at the interpreter's limit
            raise json.JSONDecodeError(TOO_DEEP, text, 0) from None
    return checked(value, data)


def raw_decode(text: str, start: int = 0) -> tuple[Any, int]:
    """`json.JSONDecoder().raw_decode` (the first JSON value at `start` and where it ends),
    bounded as `loads` is."""
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text, start) from None
    return checked(value, text), end


def checked(value: Any, doc: bytes | str = "") -> Any:
    """`value` if it is nested at most `MAX_DEPTH` levels deep, else `json.JSONDecodeError`.
    Only a document with more than `MAX_DEPTH` brackets is walked (iteratively)."""
    if not isinstance(value, dict | list):
        return value
    if isinstance(doc, str | bytes) and doc:
        opening = ("[", "{") if isinstance(doc, str) else (b"[", b"{")
        if doc.count(opening[0]) + doc.count(opening[1]) <= MAX_DEPTH:  # type: ignore[arg-type]
            return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth >= MAX_DEPTH:
                    text = doc if isinstance(doc, str) else ""
                    raise json.JSONDecodeError(TOO_DEEP, text, 0)
                stack.append((child, depth + 1))
    return value


_DECODER = json.JSONDecoder()
