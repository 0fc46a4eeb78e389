from __future__ import annotations

import asyncio

import pytest

from moscopt.lm import LM, Budget, BudgetExceeded, LMOutputError, LMRequestError
from moscopt.testing import FakeLM


def msg(text: str) -> list:  # type: ignore[type-arg]
    return [{"role": "user", "content": text}]


def test_it_is_an_lm() -> None:
    assert isinstance(FakeLM(), LM)


def test_queue_answers_in_order_and_history() -> None:
    lm = FakeLM(["one"]).enqueue("two", lambda r: f"three:{r.sample}")
    assert lm.complete(msg("a"), purpose="p").text == "one"
    assert asyncio.run(lm.acomplete(msg("b"))).text == "two"
    assert lm.complete(msg("c"), sample=4).text == "three:4"
    assert [r.messages[0]["content"] for r in lm.history] == ["a", "b", "c"]
    assert lm.purposes == ["p", "", ""]
    assert lm.stats.calls == 3 and lm.pending == 0


def test_exceptions_are_raised_and_an_empty_queue_is_a_test_error() -> None:
    lm = FakeLM([LMRequestError("refused")])
    with pytest.raises(LMRequestError):
        lm.complete(msg("a"))
    with pytest.raises(AssertionError, match="nothing queued or routed"):
        lm.complete(msg("b"))
    assert lm.stats.failures == 1


def test_responder_answers_when_the_queue_is_empty() -> None:
    lm = FakeLM(responder=lambda r: r.messages[-1]["content"].upper())
    assert lm.complete(msg("shout")).text == "SHOUT"


def test_structured_calls_parse_like_the_real_client() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    lm = FakeLM(['{"n": 3}', "nope"])
    assert lm.complete(msg("a"), schema=schema).data == {"n": 3}
    with pytest.raises(LMOutputError) as info:
        lm.complete(msg("b"), schema=schema)
    assert info.value.text == "nope"


def test_budget_applies() -> None:
    lm = FakeLM(responder=lambda r: "x", budget=Budget(max_calls=1))
    lm.complete(msg("a"))
    with pytest.raises(BudgetExceeded):
        lm.complete(msg("b"))


def test_malformed_messages_are_rejected() -> None:
    with pytest.raises(ValueError):
        FakeLM(["x"]).complete([{"role": "robot", "content": "x"}])  # type: ignore[list-item]


def test_routes_dispatch_on_the_calls_purpose_not_its_wording() -> None:
    lm = FakeLM(routes={"gate": lambda r: "ACTIVATE: a", "reflect": lambda r: "- analysis"})
    assert lm.complete([{"role": "user", "content": "x"}], purpose="gate").text == "ACTIVATE: a"
    # a route named by the part before '-' serves every purpose of that family
    reflect = lm.complete([{"role": "user", "content": "y"}], purpose="reflect-skill")
    assert reflect.text == "- analysis"
    with pytest.raises(AssertionError, match="'agent'"):
        lm.complete([{"role": "user", "content": "z"}], purpose="agent")


def test_crash_points_are_chosen_by_call_number() -> None:
    from moscopt.testing.fake_lm import Crash, crash_on_call

    lm = FakeLM(responder=lambda r: "ok", crash_at=3)
    assert [lm.complete([{"role": "user", "content": "x"}]).text for _ in range(2)] == ["ok"] * 2
    with pytest.raises(Crash):
        lm.complete([{"role": "user", "content": "x"}])
    assert lm.complete([{"role": "user", "content": "x"}]).text == "ok"  # only that call
    respond = crash_on_call(2, lambda r: "answer")
    routed = FakeLM(routes={"agent": respond}, responder=lambda r: "other")
    assert routed.complete([{"role": "user", "content": "a"}], purpose="agent").text == "answer"
    assert routed.complete([{"role": "user", "content": "b"}], purpose="gate").text == "other"
    with pytest.raises(Crash):  # the second call of that route, whatever came between
        routed.complete([{"role": "user", "content": "c"}], purpose="agent")
    assert not isinstance(Crash(), Exception)  # nothing in moscopt catches it
