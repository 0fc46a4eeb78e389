"""Keep secrets out of messages, events and logs.

Provider error messages sometimes echo part of a key or a header. Everything the LLM layer
puts in an exception message or an event goes through `redact` first.
"""

from __future__ import annotations

import base64
import codecs
import functools
import os
import re
import unicodedata
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
    """`text` with known secret values (in their simple encodings, see `secret_forms`) and
    key-shaped strings masked."""
    text = mask_values(text, secret_values(extra))
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
    # Keyed by the whole environment (a changed variable is seen at the next call), read raw:
    # CPython's undecoded mapping costs 3 us to copy where decoding every item costs 50, and
    # this runs for every answer and every write.
    raw = getattr(os.environ, "_data", None)
    items = tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())
    return list(_env_secrets(items))


@functools.lru_cache(maxsize=4)
def _env_secrets(items: tuple[tuple[str | bytes, str | bytes], ...]) -> tuple[str, ...]:
    values = set()
    for k, v in items:
        name, value = os.fsdecode(k), os.fsdecode(v)
        if _SECRET_ENV.search(name) and looks_secret(value, 12):
            values.add(value)
    return tuple(sorted(values, key=len, reverse=True))


def looks_secret(value: str, min_len: int) -> bool:
    """Whether `value` can be a real key: `min_len`+ characters, a letter and a digit, no space
    (not a placeholder such as `EMPTY` or `not-needed`, whose masking would mangle text)."""
    return (
        len(value) >= min_len
        and not any(c.isspace() for c in value)
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


def scrub_secrets(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with the value of every secret environment variable (see `env_secrets`), and of
    each `extra` secret (an endpoint's key), masked in every form of `secret_forms`.

    Applied to everything moscopt writes (events, evaluation results, state, skills, reports,
    exports) and to every model answer before it is cached: a task or a model reply that
    contains a key, even base64-encoded, reversed or upper-cased, never puts it on disk.
    """
    values = env_secrets()
    values += [v for v in extra if v and looks_secret(v, MIN_EXTRA) and v not in values]
    return mask_values(text, values)


MIN_EXTRA = 8  # shortest explicit secret masked (shorter ones would mangle ordinary text)


def secret_forms(value: str) -> tuple[list[str], list[str]]:
    """The forms of `value` an echo may take: (matched ignoring case, matched exactly).

    Ignoring case: the value, reversed, and its hex. Exactly: its standard and URL-safe base64
    at each of the three byte alignments it can have inside a longer encoded string (only the
    characters that depend on the value alone, so `base64("Bearer " + key)` is caught too).
    """
    raw = value.encode("utf-8", "surrogatepass")
    folded = [value, value[::-1], raw.hex()]
    exact: list[str] = []
    for pad in range(3):
        data = b"\0" * pad + raw
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            enc = encode(data).decode("ascii").rstrip("=")
            start = 4 if pad else 0  # the first group mixes in the bytes before the value
            stop = len(enc) - (4 if len(data) % 3 else 0)  # the last, the bytes after it
            core = enc[start:stop]
            if len(core) >= MIN_EXTRA:
                exact.append(core)
    return folded, exact


@functools.lru_cache(maxsize=64)
def _pattern(values: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[str, ...], tuple[str, ...]]:
    """The masking pattern of `values`, and their forms (folded to lower case, exact) for the
    quick test that skips it: most texts hold no secret, and substring tests are far cheaper."""
    folded: set[str] = set()
    exact: set[str] = set()
    for value in values:
        f, e = secret_forms(value)
        folded.update(f)
        exact.update(e)
    parts = [f"(?i:{re.escape(v)})" for v in sorted(folded, key=len, reverse=True)]
    parts += [re.escape(v) for v in sorted(exact, key=len, reverse=True)]
    lower = tuple(v.lower() for v in folded)
    return re.compile("|".join(parts)), lower, tuple(exact)


def mask_values(text: str, values: Iterable[str]) -> str:
    """`text` with every form (`secret_forms`) of each of `values` replaced by `MASK`."""
    key = tuple(sorted(set(values)))
    if not key or not text:
        return text
    pattern, lower, exact = _pattern(key)
    folded = text.lower()
    if any(v in folded for v in lower) or any(v in text for v in exact):
        return pattern.sub(MASK, text)
    return text


# -- what masking cannot promise: a check by construction ----------------------------------------

DISTINCT = 12  # characters of a secret's normalized form that count as the secret
_NOT_ALNUM = re.compile(r"[\W_]+")
# (encoder, input bytes per group, output characters per group)
_ENCODINGS = (
    (base64.b64encode, 3, 4),
    (base64.b32encode, 5, 8),
    (base64.a85encode, 4, 5),
    (base64.b85encode, 4, 5),
)


def normalized(text: str) -> str:
    """`text` as the leak check reads it: NFKC (full-width and other compatibility forms become
    ASCII), every character that is not a letter or a digit removed (spaces, zero-width and
    other separators, punctuation, `%` and `:` between hex pairs), case-folded."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return _NOT_ALNUM.sub("", text).casefold()


def leaks(text: str, extra: Iterable[str | None] = ()) -> bool:
    """Whether `text` still holds a secret (those `scrub_secrets` masks) after masking: any
    `DISTINCT` consecutive characters of a normalized form of it (`leak_forms`) in the
    normalized text. What this guarantees and what it cannot: docs/security.md."""
    values = env_secrets()
    values += [v for v in extra if v and looks_secret(v, MIN_EXTRA) and v not in values]
    if not values or not text:
        return False
    folded = normalized(text)
    for size, windows in _leak_windows(tuple(sorted(values))):
        if any(folded[i : i + size] in windows for i in range(len(folded) - size + 1)):
            return True
    return False


def leak_forms(value: str) -> list[str]:
    """The normalized forms of `value` and of `value` reversed that the check looks for: the
    value itself (any case, any separators, any compatibility form: so percent-encoding and
    colon-separated hex of it too, through its hex), rot13, hex, and base64, base32, ascii85
    and base85 at every byte alignment (the characters that depend on the value alone)."""
    forms: list[str] = []
    for text in (value, value[::-1]):
        raw = text.encode("utf-8", "surrogatepass")
        forms += [text, codecs.encode(text, "rot13"), raw.hex()]
        for encode, group, chars in _ENCODINGS:
            for pad in range(group):
                data = b"\0" * pad + raw
                whole = data[: len(data) // group * group]  # groups that end inside the value
                forms.append(encode(whole).decode("ascii")[chars if pad else 0 :])
    return [f for f in (normalized(f) for f in forms) if len(f) >= MIN_EXTRA]


@functools.lru_cache(maxsize=16)
def _leak_windows(values: tuple[str, ...]) -> tuple[tuple[int, frozenset[str]], ...]:
    """Every `DISTINCT`-character window of every form (a shorter form whole), by length."""
    by_size: dict[int, set[str]] = {}
    for value in values:
        for form in leak_forms(value):
            size = min(DISTINCT, len(form))
            windows = by_size.setdefault(size, set())
            windows.update(form[i : i + size] for i in range(len(form) - size + 1))
    return tuple((size, frozenset(w)) for size, w in sorted(by_size.items()))
