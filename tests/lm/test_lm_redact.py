from __future__ import annotations

import pytest

from moscopt.lm.redact import MASK, redact


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
