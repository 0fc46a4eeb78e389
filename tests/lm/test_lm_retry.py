from __future__ import annotations

import random

import pytest

from moscopt.lm.errors import LMAuthError, LMNotFoundError, LMRequestError, LMUnavailableError
from moscopt.lm.retry import Fault, RetryPolicy, fault_for_status, final_error, parse_retry_after


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, "auth"),
        (403, "auth"),
        (404, "not_found"),
        (400, "request"),
        (422, "request"),
        (408, "transient"),
        (429, "transient"),
        (500, "transient"),
        (502, "transient"),
        (503, "transient"),
    ],
)
def test_status_classification(status: int, kind: str) -> None:
    assert fault_for_status(status, "m").kind == kind


def test_retry_after_parsing() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


def test_backoff_grows_is_jittered_and_capped() -> None:
    policy = RetryPolicy(max_retries=10, base=1.0, cap=8.0)
    rng = random.Random(0)
    fault = Fault("transient", "x")
    for retry in range(1, 10):
        d = policy.delay(retry, fault, rng)
        ideal = min(8.0, 2.0 ** (retry - 1))
        assert ideal / 2 <= d <= ideal


def test_retry_after_wins_over_backoff() -> None:
    policy = RetryPolicy(base=10.0, cap=30.0)
    assert policy.delay(1, Fault("transient", "x", 429, 0.25), random.Random(0)) == 0.25
    assert policy.delay(1, Fault("transient", "x", 429, 10_000.0), random.Random(0)) == 120.0


def test_final_errors_are_typed() -> None:
    assert isinstance(final_error(Fault("auth", "no"), "m", 1), LMAuthError)
    assert isinstance(final_error(Fault("not_found", "no"), "m", 1), LMNotFoundError)
    assert isinstance(final_error(Fault("request", "no"), "m", 1), LMRequestError)
    err = final_error(Fault("transient", "boom"), "m", 7)
    assert isinstance(err, LMUnavailableError)
    assert "7 attempt(s)" in str(err) and "boom" in str(err)
