from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.lm.redact import MASK, redact, scrub_secrets


def test_env_secret_values_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "abcdefgh12345678")
    assert redact("bad key abcdefgh12345678 given") == f"bad key {MASK} given"


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer abc.def-123",
        "Incorrect API key provided: sk-proj-abcdef123456",
        "api_key='zzzzzzzzzz'",
        "x-api-key: qqqqqqqqqqqq",
    ],
)
def test_key_shaped_strings_are_masked(text: str) -> None:
    out = redact(text)
    assert MASK in out
    for secret in ("abc.def-123", "abcdef123456", "zzzzzzzzzz", "qqqqqqqqqqqq"):
        assert secret not in out


def test_explicit_secret_and_plain_text() -> None:
    assert redact("my-local-token used", ["my-local-token"]) == f"{MASK} used"
    assert redact("nothing secret here") == "nothing secret here"


# -- issue 25: a key echoed in simple encodings ------------------------------------------------

KEYS = st.from_regex(r"sk-[A-Za-z]{4}[0-9]{4}[A-Za-z0-9_-]{4,30}", fullmatch=True)


@given(KEYS, st.text(max_size=20), st.text(max_size=20))
def test_every_simple_encoding_of_a_key_is_masked(key: str, before: str, after: str) -> None:
    inner = f"{before}Bearer {key}{after}".encode()
    texts = {
        "clear": f"{before}{key}{after}",
        "upper": f"{before}{key.upper()}{after}",
        "reversed": f"{before}{key[::-1]}{after}",
        "hex": inner.hex(),
        "base64": base64.b64encode(inner).decode(),
        "urlsafe": base64.urlsafe_b64encode(inner).decode(),
    }
    for name, text in texts.items():
        out = scrub_secrets(text, [key])
        assert MASK in out, name
        assert key not in out and key.upper() not in out and key[::-1] not in out, name


def test_placeholder_keys_mangle_nothing() -> None:
    for placeholder in ("EMPTY", "not-needed", "no-key", "sk-no-key-required"):
        text = f"the answer is not-needed and EMPTY {placeholder}"
        assert scrub_secrets(text, [placeholder]) == text
