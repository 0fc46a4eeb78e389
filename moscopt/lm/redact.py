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


# Environment variables whose values are secrets wherever they turn up in what moscopt writes.
_SECRET_ENV = re.compile(r"(_KEY|_TOKEN|_SECRET|_PASSWORD)$", re.IGNORECASE)


def env_secrets() -> list[str]:
    """Values of `*_API_KEY` (and `*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`) environment
    variables that look like real secrets, longest first.

    Only values of at least 12 characters with a letter and a digit and no space count: real
    keys always are, and the placeholders local servers accept (`EMPTY`, `not-needed`,
    `sk-no-key-required`) are not, so that masking them cannot mangle ordinary text.
    """
    values = {
        v
        for k, v in os.environ.items()
        if _SECRET_ENV.search(k)
        and len(v) >= 12
        and not any(c.isspace() for c in v)
        and any(c.isdigit() for c in v)
        and any(c.isalpha() for c in v)
    }
    return sorted(values, key=len, reverse=True)


def scrub_secrets(text: str) -> str:
    """`text` with the value of every secret environment variable (see `env_secrets`) masked.

    Applied to everything moscopt writes (events, evaluation results, state, skills, reports,
    exports): a task or a model reply that contains a key never puts it on disk.
    """
    for value in env_secrets():
        if value in text:
            text = text.replace(value, MASK)
    return text
