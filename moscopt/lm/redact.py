"""Keep secrets out of messages, events and logs.

Provider error messages sometimes echo part of a key or a header. Everything the LLM layer
puts in an exception message or an event goes through `redact` first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|AUTH)", re.IGNORECASE)
_PATTERNS = (
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{4,}"),
    re.compile(r"\b(sk|pk|rk|xai|gsk|hf)[-_][A-Za-z0-9_-]{6,}"),
    re.compile(r"(?i)(api[-_]?key|authorization|x-api-key)(['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"),
)
MASK = "***"


def secret_values(extra: Iterable[str | None] = ()) -> list[str]:
    """Values of secret-looking environment variables (and `extra`), longest first."""
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8}
    values.update(v for v in extra if v and len(v) >= 4)
    return sorted(values, key=len, reverse=True)


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with known secret values and key-shaped strings masked."""
    for value in secret_values(extra):
        text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        if pattern.groups >= 2:
            text = pattern.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text
