"""What the Agent Skills format allows in a skill's name, description and metadata, and the
helpers that make model-written text fit it (a pool must load in every Agent Skills reader and
be portable to every OS an agent runs on)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
# Device names Windows reserves in every folder (a folder `con` cannot be made or opened there):
# a pool must be portable to every OS an agent runs on.
RESERVED_NAMES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
)


def is_valid_name(name: str) -> bool:
    """A name the Agent Skills reference validator accepts: at most `NAME_MAX` characters,
    lowercase letters of any script (`café-helper`), digits and single hyphens between them, in
    NFKC form (so that the folder named after it is the same on every system); and not a name
    Windows reserves."""
    import unicodedata

    return (
        0 < len(name) <= NAME_MAX
        and unicodedata.normalize("NFKC", name) == name
        and name == name.lower()
        and all(c.isalnum() or c == "-" for c in name)
        and not name.startswith("-")
        and not name.endswith("-")
        and "--" not in name
        and name not in RESERVED_NAMES
    )


def clean_description(text: str, *, limit: int = DESCRIPTION_MAX) -> str:
    """A description every Agent Skills loader reads as written: one line (line breaks and
    whitespace runs become one space), no `---` (loaders that split front matter on it, as the
    reference validator does, would cut there), at most `limit` characters (cut at a word).
    For text a model wrote; an empty result is "A skill." (a description is required)."""
    text = re.sub(r"-{3,}", "--", " ".join(str(text).split()))
    if len(text) > limit:
        cut = text[: limit - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > limit // 2 else cut).rstrip(" -") + "…"
    return text or "A skill."


def string_metadata(metadata: Mapping[str, Any]) -> dict[str, str]:
    """`metadata` as the string -> string map the Agent Skills format specifies: strings kept,
    numbers and booleans as YAML writes them, anything else as compact JSON; one line each."""
    import json

    out = {}
    for key, value in metadata.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str | int | float):
            text = str(value)
        else:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        out[str(key)] = re.sub(r"-{3,}", "--", " ".join(text.split()))
    return out


def slugify(text: str, *, max_len: int = NAME_MAX) -> str:
    """A valid skill name derived from free text ('Math Expert!' -> 'math-expert')."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    slug = slug[:max_len].rstrip("-")
    if slug in RESERVED_NAMES:
        slug = f"{slug}-skill"
    return slug or "skill"
