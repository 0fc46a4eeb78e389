"""`Spread`: simple-shuffle over direct deployments without litellm (`moscopt.lm.spread`), on a
fake clock and scripted transports; and which configurations it serves."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from moscopt.config import Config, DeploymentConfig, LLMConfig, RoutingConfig
from moscopt.lm import build_lm
from moscopt.lm.base import LMRequest
from moscopt.lm.health import DeploymentHealth
from moscopt.lm.retry import Fault
from moscopt.lm.spread import Member, Spread, spreads
from moscopt.lm.wire import RawAnswer
from moscopt.testing import FakeServer


class Scripted:
    """A transport answering from a script of outcomes (`"ok"` or a `Fault`), then `ok`."""

    def __init__(self, *script: str | Fault) -> None:
        self.script = list(script)
        self.calls = 0

    async def asend(self, request: LMRequest) -> RawAnswer:
        self.calls += 1
        outcome = self.script.pop(0) if self.script else "ok"
        if isinstance(outcome, Fault):
            raise outcome
        return RawAnswer(text="ok", prompt_tokens=1, completion_tokens=1)

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        return None


REQUEST = LMRequest(
    model="openai/m",
    messages=({"role": "user", "content": "x"},),
    temperature=0.0,
    top_p=1.0,
    max_tokens=16,
)
DOWN = Fault("transient", "connection failed: refused")


def spread(members: list[Member], now: list[float], **kw: Any) -> tuple[Spread, list[Any]]:
    records: list[dict[str, Any]] = []
    kw.setdefault("allowed_fails", 0)
    health = DeploymentHealth(kw["allowed_fails"], records.append, clock=lambda: now[0])
    kw.setdefault("retries", 2)
    kw.setdefault("cooldown", 30.0)
    made = Spread(members, health=health, clock=lambda: now[0], rng=random.Random(1), **kw)
    return made, records


def send(s: Spread) -> RawAnswer:
    return asyncio.run(s.asend(REQUEST))


def test_a_failing_deployment_is_rested_and_the_call_goes_to_the_other() -> None:
    now = [0.0]
    bad, good = Scripted(DOWN, DOWN, DOWN), Scripted()
    s, records = spread([Member("bad", bad), Member("good", good)], now)
    answers = [send(s).deployment for _ in range(10)]
    assert answers == ["good"] * 10 and bad.calls == 1  # rested at its first failure
    assert s.resting() == ["bad"]
    now[0] = 31.0  # its rest is over: it is tried again, and answers
    bad.script.clear()
    while bad.calls == 1:
        send(s)
    assert s.resting() == []
    states = [(r["deployment"], r["state"]) for r in records]
    assert states == [("bad", "down"), ("bad", "up")] and records[1]["down_for"] == 31.0


def test_allowed_fails_in_a_minute_and_the_only_one_is_never_rested() -> None:
    now = [0.0]
    a, b = Scripted(DOWN, "ok", DOWN), Scripted()
    s, _ = spread([Member("a", a, weight=1000), Member("b", b, weight=1)], now, allowed_fails=1)
    send(s)  # a fails once (allowed), b answers
    assert s.resting() == []
    send(s)  # a answers
    send(s)  # a fails a second time within the minute: rested
    assert s.resting() == ["a"]
    alone = Scripted(DOWN, DOWN, DOWN)
    single, _ = spread([Member("alone", alone)], now)
    with pytest.raises(Fault, match="refused"):
        send(single)
    assert alone.calls == 3 and single.resting() == []  # retried, never rested


def test_the_fallback_answers_when_the_others_fail_and_a_request_fault_is_not_retried() -> None:
    now = [0.0]
    a, b, spare = Scripted(DOWN), Scripted(DOWN), Scripted()
    members = [Member("a", a), Member("b", b), Member("spare", spare, fallback=True)]
    s, _ = spread(members, now, retries=1)
    assert send(s).deployment == "spare" and (a.calls, b.calls) == (1, 1)
    assert send(s).deployment == "spare"  # both rest: straight to the fallback
    wrong = Scripted(Fault("request", "HTTP 400: too long", 400))
    s2, _ = spread([Member("w", wrong), Member("x", Scripted())], now)
    with pytest.raises(Fault, match="too long"):
        send(s2)
    assert wrong.calls == 1 and s2.resting() == []


def test_all_resting_is_a_transient_fault_naming_the_wait() -> None:
    now = [0.0]
    s, _ = spread([Member("a", Scripted(DOWN)), Member("b", Scripted(DOWN))], now, retries=1)
    with pytest.raises(Fault, match="refused"):
        send(s)
    with pytest.raises(Fault, match="no deployment available") as caught:
        send(s)
    assert caught.value.kind == "transient" and caught.value.retry_after == 30.0


def test_which_configurations_spread() -> None:
    def llm(*deployments: DeploymentConfig, **kw: Any) -> LLMConfig:
        return LLMConfig(deployments=list(deployments), **kw)

    vllm = DeploymentConfig(model="hosted_vllm/m", api_base="http://h:8000/v1")
    assert spreads(llm(vllm, vllm.model_copy(update={"weight": 3})))
    assert not spreads(llm(vllm, routing=RoutingConfig(strategy="least-busy")))
    assert not spreads(llm(vllm.model_copy(update={"rpm": 60})))
    assert not spreads(llm(vllm, transport="litellm"))
    assert not spreads(llm(vllm, DeploymentConfig(model="anthropic/claude-x")))


def test_a_spread_run_sends_directly_and_never_waits_for_litellm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import moscopt.lm.deployments as deployments

    def refused() -> None:
        raise AssertionError("litellm's import was started")

    monkeypatch.setattr(deployments, "preload", refused)
    monkeypatch.setattr(deployments, "alitellm", refused)
    with FakeServer() as a, FakeServer() as b:
        config = Config(
            model="openai/m",
            llm=LLMConfig(
                deployments=[
                    DeploymentConfig(model="openai/m", api_base=s.url, name=n)
                    for n, s in (("a", a), ("b", b))
                ]
            ),
        )
        lm = build_lm(config, cache_dir=tmp_path / "c")
        texts = [lm.complete([{"role": "user", "content": f"q{i}"}]).text for i in range(8)]
        assert texts == [f"echo: q{i}" for i in range(8)] and a.count() + b.count() == 8
        lm.close()
