"""The client against the loopback fake server, through both transports."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from moscopt.lm import (
    BudgetExceeded,
    LMAuthError,
    LMNotFoundError,
    LMOutputError,
    LMRequestError,
    LMUnavailableError,
    acomplete_samples,
)
from moscopt.lm.litellm_transport import LiteLLMTransport
from moscopt.lm.local import LocalTransport
from moscopt.lm.transport import HTTPTransport
from moscopt.testing import FakeServer

TRANSPORTS = ["auto", "litellm"]


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_returns_text_usage_and_reports_it(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    events: list[dict[str, Any]] = []
    lm = make_client(transport=transport, events=events)
    done = lm.complete(user("hello world"), purpose="probe")
    assert done.text == "echo: hello world"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (2, 3)
    assert not done.cache_hit and done.retries == 0
    assert lm.stats.calls == 1 and lm.stats.prompt_tokens == 2
    body = server.log[0].body
    assert body["model"] == "fake-model"
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
        0.5,
        0.9,
        32,
        42,
    )
    (event,) = events
    assert event["purpose"] == "probe" and event["ok"] is True and event["cache_hit"] is False
    assert set(event) >= {"model", "prompt_tokens", "completion_tokens", "cost", "latency"}


def test_transport_choice(make_client: Any) -> None:
    assert isinstance(make_client().transport, HTTPTransport)
    assert isinstance(make_client(transport="litellm").transport, LiteLLMTransport)
    assert isinstance(make_client(model="anthropic/claude-x").transport, LiteLLMTransport)
    assert isinstance(make_client(model="local/smollm2").transport, LocalTransport)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_repeated_calls_hit_the_cache_and_make_no_request(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    events: list[dict[str, Any]] = []
    lm = make_client(transport=transport, events=events)
    first = [lm.complete(user(f"q{i}")) for i in range(5)]
    assert server.count() == 5
    again = [lm.complete(user(f"q{i}")) for i in range(5)]
    assert server.count() == 5
    assert [a.text for a in again] == [f.text for f in first]
    assert all(a.cache_hit and a.cost == 0.0 for a in again)
    assert lm.stats.cache_hits == 5 and lm.stats.calls == 5
    assert sum(e["cache_hit"] for e in events) == 5


def test_a_new_client_on_the_same_cache_makes_no_request(
    make_client: Any, server: FakeServer
) -> None:
    make_client().complete(user("once"))
    second = make_client()
    assert second.complete(user("once")).cache_hit
    assert server.count() == 1


def test_cache_off_calls_every_time(make_client: Any, server: FakeServer) -> None:
    lm = make_client(cache=False)
    lm.complete(user("x"))
    lm.complete(user("x"))
    assert server.count() == 2 and lm.stats.cache_hits == 0


def test_samples_are_distinct_calls_with_distinct_seeds(
    make_client: Any, server: FakeServer
) -> None:
    lm = make_client()
    done = asyncio.run(acomplete_samples(lm, user("s"), 3))
    assert [d.sample for d in done] == [0, 1, 2]
    assert sorted(r.body["seed"] for r in server.log) == [42, 43, 44]
    asyncio.run(acomplete_samples(lm, user("s"), 3))
    assert server.count() == 3


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_transient_faults_are_retried_and_each_request_completes_once(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    server.fault_rate = 0.3
    server.faults = ("429", "500", "503", "drop")
    lm = make_client(transport=transport, max_retries=20, concurrency=8)

    async def run() -> list[Any]:
        return list(await asyncio.gather(*(lm.acomplete(user(f"t{i}")) for i in range(40))))

    done = asyncio.run(run())
    assert [d.text for d in done] == [f"echo: t{i}" for i in range(40)]
    ok = Counter(r.body["messages"][0]["content"] for r in server.log if r.outcome == "ok")
    assert ok == Counter({f"t{i}": 1 for i in range(40)})
    faults = sum(1 for r in server.log if r.outcome != "ok")
    assert faults > 0
    assert lm.stats.retries == faults == sum(d.retries for d in done)
    assert lm.stats.calls == 40


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_timeouts_are_retried(make_client: Any, server: FakeServer, transport: str) -> None:
    server.hang = 3.0
    lm = make_client(transport=transport, timeout=0.3)
    server.script("timeout", "ok")
    done = lm.complete(user("slow"))
    assert done.retries == 1 and done.text == "echo: slow"
    assert [r.outcome for r in server.log] == ["timeout", "ok"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("outcome", "error"), [("401", LMAuthError), ("403", LMAuthError), ("404", LMNotFoundError)]
)
def test_auth_and_not_found_fail_fast(
    make_client: Any, server: FakeServer, transport: str, outcome: str, error: type
) -> None:
    events: list[dict[str, Any]] = []
    lm = make_client(transport=transport, events=events)
    server.script(outcome, "ok")
    with pytest.raises(error) as info:
        lm.complete(user("x"))
    assert server.count() == 1
    assert "openai/fake-model" in str(info.value)
    assert events[-1]["ok"] is False and events[-1]["error"] == error.__name__
    assert lm.stats.failures == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_retries_are_bounded(make_client: Any, server: FakeServer, transport: str) -> None:
    lm = make_client(transport=transport, max_retries=3)
    server.script(*["500"] * 10)
    with pytest.raises(LMUnavailableError, match="4 attempt"):
        lm.complete(user("x"))
    assert server.count() == 4
    assert lm.stats.retries == 3


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_garbage_json_is_retried_then_a_clear_error(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    lm = make_client(transport=transport, max_retries=1)
    server.script("garbage", "ok")
    assert lm.complete(user("a")).retries == 1
    server.script("garbage", "garbage")
    with pytest.raises(LMUnavailableError):
        lm.complete(user("b"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_empty_choice_list_is_a_request_error(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    lm = make_client(transport=transport)
    server.script("empty")
    with pytest.raises(LMRequestError, match="empty choice list"):
        lm.complete(user("x"))
    assert server.count() == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unreachable_api_base_ends_in_a_clear_error(make_client: Any, transport: str) -> None:
    dead = FakeServer().start()
    url = dead.url
    dead.stop()  # nothing listens there any more
    lm = make_client(transport=transport, api_base=url, max_retries=2, timeout=2.0)
    with pytest.raises(LMUnavailableError, match="3 attempt"):
        lm.complete(user("x"))


def test_concurrency_bound_is_respected(make_client: Any, server: FakeServer) -> None:
    server.latency = 0.05
    lm = make_client(concurrency=4)

    async def run() -> None:
        await asyncio.gather(*(lm.acomplete(user(f"c{i}")) for i in range(32)))

    asyncio.run(run())
    assert server.count() == 32
    assert 2 <= server.max_in_flight <= 4


def test_sync_calls_from_threads_respect_the_bound(make_client: Any, server: FakeServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    server.latency = 0.05
    lm = make_client(concurrency=3)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: lm.complete(user(f"s{i}")), range(24)))
    assert server.count() == 24 and server.max_in_flight <= 3


def test_a_client_works_across_event_loops(make_client: Any, server: FakeServer) -> None:
    lm = make_client(transport="litellm")
    assert asyncio.run(lm.acomplete(user("one"))).text == "echo: one"
    assert asyncio.run(lm.acomplete(user("two"))).text == "echo: two"
    direct = make_client()
    assert asyncio.run(direct.acomplete(user("three"))).text == "echo: three"
    assert asyncio.run(direct.acomplete(user("four"))).text == "echo: four"


SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_structured_calls_parse_or_raise_output_error(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    replies = iter(['{"n": 7}', "seven", "seven"])
    server.responder = lambda body: next(replies)
    lm = make_client(transport=transport)
    assert lm.complete(user("a"), schema=SCHEMA).data == {"n": 7}
    fmt = server.log[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    with pytest.raises(LMOutputError, match="not valid JSON") as info:
        lm.complete(user("b"), schema=SCHEMA)
    assert info.value.text == "seven"
    # An answer that failed its schema is not cached: asking again asks the model again.
    with pytest.raises(LMOutputError):
        lm.complete(user("b"), schema=SCHEMA)
    assert server.count() == 3


def test_max_calls_stops_before_the_call(make_client: Any, server: FakeServer) -> None:
    lm = make_client(max_calls=2)
    lm.complete(user("1"))
    lm.complete(user("2"))
    lm.complete(user("1"))  # a cache hit is not a call
    with pytest.raises(BudgetExceeded):
        lm.complete(user("3"))
    assert server.count() == 2


def test_max_cost_stops_before_a_priced_call(make_client: Any, server: FakeServer) -> None:
    # gpt-4.1-mini is in litellm's bundled cost map; the fake server plays it.
    lm = make_client(model="openai/gpt-4.1-mini", max_cost=0.0001)
    done = lm.complete(user("a b c"))
    assert done.cost > 0 and lm.stats.cost == done.cost
    with pytest.raises(BudgetExceeded, match="cost budget"):
        for i in range(100):
            lm.complete(user(f"more {i}"))
    assert lm.budget.cost <= 0.0001
    assert server.count() < 100


def test_a_shared_budget_holds_across_clients(make_client: Any, server: FakeServer) -> None:
    a = make_client(max_calls=3)
    b = make_client(model="openai/other")
    b.budget = a.budget
    a.complete(user("1"))
    b.complete(user("2"))
    a.complete(user("3"))
    with pytest.raises(BudgetExceeded):
        b.complete(user("4"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_secrets_never_reach_cache_or_events(
    tmp_path: Path, server: FakeServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moscopt.config import LLMConfig
    from moscopt.lm import LiteLLMClient, ResponseCache

    secret = "sk-test-Zq9Vb7Xw5Yu3Ts1Rq8Pn"
    events: list[dict[str, Any]] = []
    lm = LiteLLMClient(
        "openai/fake-model",
        llm=LLMConfig(transport=transport, backoff_base=0.0, max_retries=1),
        api_base=server.url,
        cache=ResponseCache(tmp_path / "cache"),
        events=events.append,
        api_key=secret,
    )
    lm.complete(user("hello"))
    server.script("401")
    with pytest.raises(LMAuthError) as info:
        lm.complete(user("denied"))
    assert server.log[0].authorized
    assert secret not in str(info.value) and secret not in repr(lm)
    assert secret not in json.dumps(events)
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes()
