from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.lm.base import LMRequest, check_messages, public_url


def request(**changes: Any) -> LMRequest:
    base = LMRequest(
        model="openai/m",
        messages=({"role": "user", "content": "hi"},),
        temperature=0.8,
        top_p=0.6,
        max_tokens=100,
        seed=42,
        schema=None,
        sample=0,
    )
    return dataclasses.replace(base, **changes)


CHANGES: dict[str, Any] = {
    "model": "openai/other",
    "messages": ({"role": "user", "content": "hello"},),
    "temperature": 0.7,
    "top_p": 0.5,
    "max_tokens": 101,
    "seed": 43,
    "schema": {"type": "object"},
    "sample": 1,
}


def test_every_request_field_is_in_the_key() -> None:
    hashed = set(request().key_fields()) - {"v"}
    fields = {f.name for f in dataclasses.fields(LMRequest)}
    assert hashed == fields
    assert set(CHANGES) == fields


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_changing_any_field_changes_the_key(name: str) -> None:
    assert request(**{name: CHANGES[name]}).key() != request().key()


def test_same_request_same_key_and_sample_index_separates() -> None:
    assert request().key() == request().key()
    keys = {request(sample=i).key() for i in range(5)}
    assert len(keys) == 5


def test_provider_seed_follows_sample() -> None:
    assert request(sample=3).provider_seed == 45
    assert request(seed=None, sample=3).provider_seed is None


def test_the_endpoint_is_not_part_of_a_request() -> None:
    # where a model is served (and with which credentials) does not change its answer
    assert "api_base" not in {f.name for f in dataclasses.fields(LMRequest)}
    assert "127.0.0.1" not in str(request().key_fields())


def test_a_lone_surrogate_in_a_message_still_hashes() -> None:
    odd = request(messages=({"role": "user", "content": "x\ud800"},))
    assert odd.key() != request().key() and len(odd.key()) == 64


def test_public_url() -> None:
    assert public_url(None) is None
    assert public_url("https://u:p@Example.com:443/v1/") == "https://example.com:443/v1"


@pytest.mark.parametrize(
    "messages",
    [
        [],
        "hello",
        [{"role": "robot", "content": "x"}],
        [{"role": "user"}],
        [{"role": "user", "content": 3}],
        [{"role": "user", "content": "x", "name": "n"}],
    ],
)
def test_malformed_messages_are_value_errors(messages: Any) -> None:
    with pytest.raises(ValueError):
        check_messages(messages)


@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), st.text()), min_size=1))
def test_valid_messages_are_kept(pairs: list[tuple[str, str]]) -> None:
    messages: Any = [{"role": r, "content": c} for r, c in pairs]
    assert list(check_messages(messages)) == messages
