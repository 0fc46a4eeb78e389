"""The JSON in which an LLM writes a whole skill (an offspring, the distilled skill).

`draft_schema(compact=False)` asks for `{"name", "description", "body"}`. `compact=True` is for
grammar-constrained small models (the embedded one): the body comes as an array of 4 to 8 short
lines, so the grammar itself guarantees a body of several lines and a JSON document that ends
well within the token budget (`COMPACT_TOKENS`): a 135M model given room for a 5,000-character
string fills it with repetition until the budget cuts the JSON off. `draft_fields` reads either
shape into the three strings.
"""

from __future__ import annotations

from typing import Any

from moscopt.core import jsonio

COMPACT_LINES = (4, 8)  # fewest and most body lines
COMPACT_LINE_CHARS = 160
COMPACT_TOKENS = 1200  # above the longest compact answer (~1,700 characters), never reached


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
