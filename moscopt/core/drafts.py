"""The JSON in which an LLM writes a whole skill (an offspring, the distilled skill).

`draft_schema(compact=False)` asks for `{"name", "description", "body"}`. `compact=True` is for
grammar-constrained small models (the embedded one): the body comes as an array of 4 to 8 short
lines, so the grammar itself guarantees a body of several lines and a JSON document that ends
well within the token budget (`COMPACT_TOKENS`): a 135M model given room for a 5,000-character
string fills it with repetition until the budget cuts the JSON off. `draft_fields` reads either
shape into the three strings.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from moscopt.core import jsonio

COMPACT_LINES = (4, 8)  # fewest and most body lines
COMPACT_LINE_CHARS = 160
COMPACT_TOKENS = 1200  # above the longest compact answer (~1,700 characters), never reached
MOST_REPEATS = 2  # a sentence said more often than this makes a skill degenerate


def draft_schema(*, compact: bool, body_max: int, description_max: int) -> dict[str, Any]:
    """The schema of a skill draft; `compact`: the line-array body of the module docstring."""
    body: dict[str, Any] = {"type": "string", "maxLength": body_max}
    description: dict[str, Any] = {"type": "string", "maxLength": description_max}
    name: dict[str, Any] = {"type": "string", "maxLength": 60}
    if compact:
        least, most = COMPACT_LINES
        line = {"type": "string", "minLength": 8, "maxLength": COMPACT_LINE_CHARS}
        body = {"type": "array", "minItems": least, "maxItems": most, "items": line}
        description = {"type": "string", "minLength": 8, "maxLength": min(description_max, 200)}
        name = {"type": "string", "minLength": 3, "maxLength": 40}
    key = "lines" if compact else "body"
    return {
        "type": "object",
        "properties": {"name": name, "description": description, key: body},
        "required": ["name", "description", key],
        "additionalProperties": False,
    }


def draft_fields(data: Any) -> dict[str, Any]:
    """The answer as `{"name", "description", "body"}`: JSON text is parsed, a compact answer's
    `lines` joined into the body. Values are not checked here (the callers' parsers do);
    `ValueError` if the answer is not a JSON object."""
    if isinstance(data, str):
        data = jsonio.loads(data)  # json.JSONDecodeError is a ValueError
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    if "lines" in data and "body" not in data:
        lines = data["lines"]
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise ValueError("lines must be an array of strings")
        data = {k: v for k, v in data.items() if k != "lines"}
        data["body"] = "\n".join(line.strip() for line in lines if line.strip())
    return data


def repetition(body: str) -> str | None:
    """Why `body` is degenerate repetition (None: it is not): a sentence said more than
    `MOST_REPEATS` times, or fewer than half of its sentences distinct. Sentences are split at
    line ends and at `.`, `!` or `?` followed by a space, compared without case, punctuation or
    list markers; one-word fragments (headings, `- Steps:`) are not counted."""
    pieces = re.split(r"\n+|(?<=[.!?])\s+", body)
    sentences = []
    for piece in pieces:
        words = re.findall(r"[^\W_]+", piece.lower())
        if len(words) >= 2:
            sentences.append(" ".join(words))
    if not sentences:
        return None
    counts = Counter(sentences)
    top, n = counts.most_common(1)[0]
    if n > MOST_REPEATS:
        return f"the body repeats one sentence {n} times ('{top[:60]}')"
    if len(sentences) >= 4 and len(counts) * 2 < len(sentences):
        return f"the body repeats itself: {len(counts)} distinct sentences of {len(sentences)}"
    return None
