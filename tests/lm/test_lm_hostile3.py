"""A third red team (issue 38), the endpoint's side: a `Retry-After` that cannot be read (an HTTP
date with a `-0000` zone, garbage), compressed replies that inflate past the bound, and a key
echoed in encodings the scrubber has no list for. Each is a bounded, clear outcome on both
transports: never a traceback, never memory past `llm.max_response_bytes`, never the key on disk."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.config import LLMConfig, SamplingConfig
from moscopt.lm import LiteLLMClient, ResponseCache
from moscopt.lm.retry import RETRY_AFTER_CAP, Fault, RetryPolicy, parse_retry_after
from moscopt.testing.hostile_server import HostileServer, completion, response

KEY = "sk-HOSTILE-7c1d2e3f4a5b6c7d"
USER = [{"role": "user", "content": "hello"}]


def client(url: str, tmp_path: Path, **llm: Any) -> LiteLLMClient:
    llm = {"max_retries": 0, "backoff_base": 0.0, "timeout": 10.0, **llm}
    return LiteLLMClient(
        "openai/fake",
        sampling=SamplingConfig(max_tokens=32),
        llm=LLMConfig(**llm),
        api_base=url,
        api_key=KEY,
        cache=ResponseCache(tmp_path / "cache"),
    )


# -- item 2: a Retry-After that cannot be read is ignored ---------------------------------------

DATES = [
    "Wed, 21 Oct 2015 07:28:00 -0000",  # RFC 5322: UTC, source unknown (parses without a zone)
    "Wed, 21 Oct 2015 07:28:00",  # no zone at all
    "Wed, 21 Oct 99999 07:28:00 GMT",
    "Wed, 32 Oct 2015 07:28:00 GMT",
    "1e400",
    "nan",
    "-inf",
    "\x00",
]


@pytest.mark.parametrize("value", DATES)
def test_an_unreadable_retry_after_is_none_or_a_bounded_wait(value: str) -> None:
    seconds = parse_retry_after(value)
    assert seconds is None or seconds >= 0.0
    fault = Fault("transient", "429", 429, seconds)
    assert 0.0 <= RetryPolicy().delay(1, fault, random.Random(0)) <= RETRY_AFTER_CAP


@given(st.one_of(st.text(), st.sampled_from(DATES).map(lambda d: d + " ")))
def test_parse_retry_after_never_raises(value: str) -> None:
    seconds = parse_retry_after(value)
    assert seconds is None or seconds >= 0.0


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_a_429_with_a_minus_0000_date_backs_off_and_succeeds(
    tmp_path: Path, transport: str
) -> None:
    calls: list[int] = []

    def reply(body: dict[str, Any], headers: dict[str, str]) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return response(
                b'{"error": {"message": "slow down"}}',
                status=429,
                extra="Retry-After: Wed, 21 Oct 2015 07:28:00 -0000\r\n",
            )
        return response(completion("fine"))

    with HostileServer(reply) as server:
        lm = client(server.url, tmp_path, transport=transport, max_retries=2)
        done = lm.complete(USER)
        lm.close()
    assert done.text == "fine" and len(calls) == 2
