"""Issue 17, section 7: a structured answer that failed to parse is never replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moscopt.lm import LMOutputError, ResponseCache
from moscopt.lm.base import Completion
from moscopt.testing import FakeServer

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def test_a_failed_parse_is_not_cached_and_the_next_ask_reaches_the_model(
    make_client: Any, server: FakeServer, tmp_path: Path
) -> None:
    replies = iter(["seven", '{"n": 7}'])
    server.responder = lambda body: next(replies)
    lm = make_client()
    with pytest.raises(LMOutputError):
        lm.complete(user("a"), schema=SCHEMA)
    key = lm.request(user("a"), schema=SCHEMA).key()
    assert key not in ResponseCache(tmp_path / "cache")
    assert lm.complete(user("a"), schema=SCHEMA).data == {"n": 7}  # asked again, and parsed
    again = lm.complete(user("a"), schema=SCHEMA)  # what parsed is cached
    assert again.cache_hit and again.data == {"n": 7}
    assert server.count() == 2 and lm.stats.cache_hits == 1


def test_an_unparsable_entry_left_by_an_older_version_is_dropped_and_asked_again(
    make_client: Any, server: FakeServer, tmp_path: Path
) -> None:
    server.responder = lambda body: '{"n": 3}'
    events: list[dict[str, Any]] = []
    lm = make_client(events=events)
    key = lm.request(user("b"), schema=SCHEMA).key()
    ResponseCache(tmp_path / "cache").put(key, Completion(text="not json", model="m"))
    done = lm.complete(user("b"), schema=SCHEMA)
    assert done.data == {"n": 3} and not done.cache_hit
    assert server.count() == 1 and lm.stats.cache_hits == 0
    assert [e["cache_hit"] for e in events] == [False]  # the stale entry was not counted a hit
    cached = ResponseCache(tmp_path / "cache").get(key)
    assert cached is not None and cached.text == '{"n": 3}'


def test_plain_answers_are_cached_as_before(make_client: Any, server: FakeServer) -> None:
    lm = make_client()
    first = lm.complete(user("c"))
    second = lm.complete(user("c"))
    assert second.cache_hit and second.text == first.text and server.count() == 1
