from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moscopt.agent.evaluate import evaluate, run_tasks
from moscopt.agent.skill_agent import SkillAgent
from moscopt.benchmarks import Task, get_benchmark
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.lm.errors import LMAuthError, LMRequestError
from moscopt.routing import gate as gating
from moscopt.routing.gate import FixedSkills, GateStats, LLMGate, RandomGate, schema_ids
from moscopt.testing import FakeLM


@pytest.fixture(scope="module")
def offline():  # type: ignore[no-untyped-def]
    bench = get_benchmark("offline")
    return bench, bench.load()


TASK = Task(
    "t-801", "offline", "Compute (98 + 8) * 8 - 47.\n\nEnd with FINAL ANSWER: <answer>", "801"
)


def solver(request: LMRequest) -> str:
    """Answers gate prompts with two skills and offline tasks correctly when a skill is present."""
    last = request.messages[-1]["content"]
    if "ACTIVATE:" in last and "## Available skills" in last:
        return "ACTIVATE: careful-computation, detail-verifier"
    has_skills = request.messages[0]["role"] == "system"
    return "FINAL ANSWER: 801" if has_skills else "I think 800.\nFINAL ANSWER: 800"


def test_gate_selects_and_only_activated_bodies_are_shown(seed_dir: Path, offline) -> None:  # type: ignore[no-untyped-def]
    bench, _splits = offline
    pool = Pool.load(seed_dir, require_gate=True)
    lm = FakeLM(responder=solver)
    agent = SkillAgent(lm, bench, pool, LLMGate(lm, pool, 2))
    task = TASK
    rollout = asyncio.run(agent.run(task))
    assert rollout.skills == ("careful-computation", "detail-verifier")
    assert rollout.activation == "gate" and rollout.reward == 1.0 and rollout.answer == "801"
    system = lm.history[1].messages[0]["content"]
    assert "## Skill: careful-computation" in system and "## Skill: detail-verifier" in system
    assert "cautious-planner" not in system  # progressive disclosure
    gate_prompt = lm.history[0].messages[1]["content"]
    assert "| edge-case-hunter |" in gate_prompt and "Choose exactly 2 skills" in gate_prompt
    assert rollout.calls == 2


@pytest.mark.parametrize(
    ("bad", "source"),
    [
        ("ACTIVATE: careful-computation", "fallback"),
        ("no idea", "fallback"),
        ("ACTIVATE: x, y", "fallback"),
        (LMRequestError("400"), "gate_error"),  # the call failed: not a parse failure
    ],
)
def test_gate_failure_falls_back_to_top_q(seed_dir: Path, offline, bad, source) -> None:  # type: ignore[no-untyped-def]
    bench, splits = offline
    pool = Pool.load(seed_dir, require_gate=True)
    lm = FakeLM([bad, "FINAL ANSWER: 1"])
    stats = GateStats(q={"working-backwards": 0.9, "close-reading": 0.8}, c_min=0)
    agent = SkillAgent(lm, bench, pool, LLMGate(lm, pool, 2, stats))
    rollout = asyncio.run(agent.run(splits.train[0]))
    assert rollout.activation == source and rollout.gate_error
    assert rollout.skills == ("working-backwards", "close-reading")
    assert lm.purposes == ["gate", "agent"]


def test_enriched_table_shows_scores(seed_dir: Path) -> None:
    pool = Pool.load(seed_dir, require_gate=True)
    gate = LLMGate(FakeLM(), pool, 3, GateStats(q={"close-reading": 0.5}, enriched=True))
    assert "| 0.50 | 0 |" in gate.messages("t")[1]["content"]


def test_fatal_errors_propagate(seed_dir: Path, offline) -> None:  # type: ignore[no-untyped-def]
    bench, splits = offline
    pool = Pool.load(seed_dir, require_gate=True)
    lm = FakeLM([LMAuthError("401: bad key")])
    agent = SkillAgent(lm, bench, pool, LLMGate(lm, pool, 2))
    with pytest.raises(LMAuthError):
        asyncio.run(agent.run(splits.train[0]))


def test_request_error_scores_zero_not_crash(offline) -> None:  # type: ignore[no-untyped-def]
    bench, splits = offline
    agent = SkillAgent(FakeLM([LMRequestError("context too long")]), bench, None)
    rollout = asyncio.run(agent.run(splits.train[0]))
    assert rollout.reward == 0.0 and "context too long" in (rollout.error or "")


def test_python_tool_loop(offline) -> None:  # type: ignore[no-untyped-def]
    bench, _splits = offline
    task = TASK
    lm = FakeLM(["Let me compute.\n```python\nprint((98 + 8) * 8 - 47)\n```", "FINAL ANSWER: 801"])
    agent = SkillAgent(lm, bench, None, tools=["python"], max_steps=3)
    rollout = asyncio.run(agent.run(task))
    assert rollout.reward == 1.0 and rollout.calls == 2
    assert rollout.messages[-2]["content"] == "Python output:\n801"
    assert "Tool: python" in rollout.messages[0]["content"]


def test_evaluate_concurrently_in_task_order(seed_dir: Path, offline) -> None:  # type: ignore[no-untyped-def]
    bench, splits = offline
    pool = Pool.load(seed_dir)
    seen = []
    lm = FakeLM(responder=lambda r: "FINAL ANSWER: 1")
    agent = SkillAgent(lm, bench, pool, RandomGate(pool, 3, seed=1))
    result = asyncio.run(evaluate(agent, splits.val, concurrency=4, on_rollout=seen.append))
    assert [r.task_id for r in result.rollouts] == [t.id for t in splits.val]
    assert len(seen) == len(splits.val)
    expected = sum(str(t.gold) == "1" for t in splits.val) / len(splits.val)
    mean, low, high = result.interval
    assert mean == pytest.approx(expected) and low <= mean <= high
    again = asyncio.run(run_tasks(agent, splits.val, concurrency=2))
    assert [r.skills for r in again] == [r.skills for r in result.rollouts]  # seeded per task


def test_auto_repeats_stop_when_narrow(offline) -> None:  # type: ignore[no-untyped-def]
    bench, splits = offline
    agent = SkillAgent(FakeLM(responder=lambda r: "FINAL ANSWER: 1"), bench, None)
    result = asyncio.run(evaluate(agent, splits.val[:5], concurrency=2, repeats="auto"))
    assert len(result.repeat_scores) == 3  # identical repeats: the interval is 0 after 3
    assert result.summary()["repeats"] == 3 and result.summary()["rollouts"] == 15


def test_fixed_skills_modes(seed_dir: Path, offline) -> None:  # type: ignore[no-untyped-def]
    bench, splits = offline
    pool = Pool.load(seed_dir)
    lm = FakeLM(responder=lambda r: "FINAL ANSWER: 1")
    agent = SkillAgent(lm, bench, pool, FixedSkills(pool.names, "all"))
    rollout = asyncio.run(agent.run(splits.val[0]))
    assert rollout.activation == "all" and len(rollout.skills) == 10 and lm.stats.calls == 1


def test_step_level_gating_reselects_before_each_step(seed_dir: Path, offline) -> None:  # type: ignore[no-untyped-def]
    bench, _ = offline
    pool = Pool.load(seed_dir, require_gate=True)
    picks = iter(["ACTIVATE: cautious-planner", "ACTIVATE: python-tool-use"])

    def respond(request: LMRequest) -> str:
        last = request.messages[-1]["content"]
        if "## Available skills" in last:
            return next(picks)
        if last.startswith("Python output:"):
            return "FINAL ANSWER: 801"
        return "```python\nprint((98 + 8) * 8 - 47)\n```"

    lm = FakeLM(responder=respond)
    agent = SkillAgent(
        lm, bench, pool, LLMGate(lm, pool, 1), tools=["python"], max_steps=3, granularity="step"
    )
    rollout = asyncio.run(agent.run(TASK))
    assert rollout.reward == 1.0 and rollout.calls == 4  # gate, agent, gate, agent
    second_gate = lm.history[2].messages[-1]["content"]
    assert "## Progress so far" in second_gate
    assert "## Skill: python-tool-use" in lm.history[3].messages[0]["content"]
    assert "## Skill: cautious-planner" not in lm.history[3].messages[0]["content"]


def test_constrained_gate_for_local_models(seed_dir: Path) -> None:
    from moscopt.routing.gate import constrained_gate

    assert constrained_gate("local/smollm2", "auto") and constrained_gate("openai/x", "json")
    assert not constrained_gate("openai/x", "auto") and not constrained_gate(
        "local/smollm2", "text"
    )
    pool = Pool.load(seed_dir, require_gate=True)
    stats = GateStats(q={"working-backwards": 0.9}, c_min=0)
    # 10 skills, K = 2: the answer is one of the 45 pairs, so it cannot repeat an id
    pair = ", ".join(n for n in pool.names if n in ("close-reading", "detail-verifier"))
    lm = FakeLM([json.dumps({"activate": pair}), '{"activate": "not-a-pair"}'])
    gate = LLMGate(lm, pool, 2, stats, constrained=True)
    ok, bad = (asyncio.run(gate.select("t", sample=i)) for i in range(2))
    assert (ok.source, set(ok.skills)) == ("gate", {"close-reading", "detail-verifier"})
    assert bad.source == "fallback" and bad.error
    schema = lm.history[0].schema
    assert schema is not None and len(schema["properties"]["activate"]["enum"]) == 45
    assert schema_ids(schema) == (list(pool.names), 2)


def test_a_constrained_gate_over_many_sets_answers_an_array(
    seed_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gating, "MAX_COMBINATIONS", 10)  # 45 pairs: too many to spell out
    pool = Pool.load(seed_dir, require_gate=True)
    stats = GateStats(q={"working-backwards": 0.9}, c_min=0)
    lm = FakeLM(
        [
            '{"activate": ["close-reading", "detail-verifier"]}',
            '{"activate": ["close-reading", "close-reading"]}',
            '{"activate": ["not-a-skill", "close-reading"]}',
        ]
    )
    gate = LLMGate(lm, pool, 2, stats, constrained=True)
    ok, partial, bad = (asyncio.run(gate.select("t", sample=i)) for i in range(3))
    assert (ok.source, ok.skills) == ("gate", ("close-reading", "detail-verifier"))
    # repeated ids are completed in pool order, whatever the Q-scores (working-backwards is best)
    first_other = next(n for n in pool.names if n != "close-reading")
    assert (partial.source, partial.skills) == ("partial", ("close-reading", first_other))
    assert bad.source == "fallback" and bad.error
    schema = lm.history[0].schema
    assert schema is not None and schema["properties"]["activate"]["maxItems"] == 2
    assert schema_ids(schema) == (list(pool.names), 2)
