"""An LLM error at the gate is a `gate_error`, not a parse failure; only parse failures count."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from moscopt.agent.evaluate import EvalResult
from moscopt.agent.harness import Rollout
from moscopt.agent.skill_agent import SkillAgent
from moscopt.benchmarks import Task, get_benchmark
from moscopt.core.skills import Pool
from moscopt.lm.errors import LMRequestError, LMUnavailableError
from moscopt.optimizer.policies.gate_restoration import GateRestoration
from moscopt.routing.gate import (
    GATE_ANSWERS,
    PARSE_FAILURES,
    GateStats,
    LLMGate,
    count_parse_failures,
)
from moscopt.testing import FakeLM

TASK = Task("t-2", "offline", "Compute 1 + 1.\n\nEnd with FINAL ANSWER: <answer>", "2")
STATS = GateStats(q={"working-backwards": 0.9, "close-reading": 0.8}, c_min=0)


def test_request_error_at_the_gate_is_a_gate_error(seed_dir: Path) -> None:
    pool = Pool.load(seed_dir, require_gate=True)
    gate_lm, agent_lm = FakeLM([LMRequestError("400: refused")]), FakeLM(["FINAL ANSWER: 2"])
    agent = SkillAgent(agent_lm, get_benchmark("offline"), pool, LLMGate(gate_lm, pool, 2, STATS))
    rollout = asyncio.run(agent.run(TASK))
    assert rollout.activation == "gate_error" and rollout.sources == ("gate_error",)
    assert rollout.gate_error is not None and "400: refused" in rollout.gate_error
    assert rollout.skills == ("working-backwards", "close-reading")  # still the top K by Q
    assert rollout.reward == 1.0 and rollout.error is None
    assert gate_lm.purposes == ["gate"] and agent_lm.purposes == ["agent"]


def test_invalid_structured_output_is_a_parse_failure(seed_dir: Path) -> None:
    pool = Pool.load(seed_dir, require_gate=True)
    lm = FakeLM(["not json at all"])  # LMOutputError: the model answered, but badly
    activation = asyncio.run(LLMGate(lm, pool, 2, STATS, constrained=True).select("t"))
    assert activation.source == "fallback" and activation.error
    assert activation.usage is not None  # the call was made and is accounted for
    assert lm.purposes == ["gate"]


def test_fatal_errors_at_the_gate_still_stop_the_run(seed_dir: Path) -> None:
    pool = Pool.load(seed_dir, require_gate=True)
    gate = LLMGate(FakeLM([LMUnavailableError("retries exhausted")]), pool, 2, STATS)
    with pytest.raises(LMUnavailableError):
        asyncio.run(gate.select("t"))


def test_only_parse_failures_count_against_the_gate() -> None:
    assert set(PARSE_FAILURES) == {"fallback", "partial"}
    assert set(GATE_ANSWERS) == {"gate", "fallback", "partial"}
    sources = ["gate", "fallback", "partial", "gate_error", "gate_error", "random"]
    assert count_parse_failures(sources) == (2, 3)  # gate errors are in neither count


def test_restoration_ignores_steps_of_gate_errors() -> None:
    monitor = GateRestoration(threshold=0.3, window=2)
    assert not monitor.observe(["gate_error"] * 4)  # the LLM failed: nothing recorded
    assert monitor.history == []
    assert not monitor.observe(["fallback", "gate", "gate_error", "gate_error"])
    assert monitor.history == [0.5]
    assert monitor.observe(["partial", "gate_error"])  # two steps over the threshold


def test_eval_summary_counts_gate_errors_apart() -> None:
    def rollout(source: str, *later: str) -> Rollout:
        r = Rollout("t", ("a",), source, [], "", None, 0.0)
        r.sources = (source, *later)
        return r

    result = EvalResult([rollout("gate", "fallback"), rollout("gate_error"), rollout("fallback")])
    summary = result.summary()
    assert summary["gate_fallbacks"] == 2 and summary["gate_errors"] == 1
