"""Step-level gating on benchmarks without tools, and the no-progressive-disclosure ablation.

The gate and the agent have a FakeLM each, so every call is answered by the LM of its role
(`lm.purposes` checks the role); the agent's answers depend only on how many replies it has
already given (the step), never on prompt wording.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from moscopt.agent.build import agent_for
from moscopt.agent.harness import OTHER_SKILLS_HEADING, REFINE_INSTRUCTIONS, is_verified
from moscopt.agent.skill_agent import REFINE_STEPS, SkillAgent, agent_tools
from moscopt.benchmarks import Benchmark, Task, get_benchmark
from moscopt.config import Config
from moscopt.core.credit import Outcome, assign_credit
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.routing.gate import FixedSkills, LLMGate
from moscopt.run.state import RunState
from moscopt.testing import FakeLM

TASK = Task(
    "t-801", "offline", "Compute (98 + 8) * 8 - 47.\n\nEnd with FINAL ANSWER: <answer>", "801"
)


@pytest.fixture(scope="module")
def bench() -> Benchmark:
    return get_benchmark("offline")


@pytest.fixture
def pool(seed_dir: Path) -> Pool:
    return Pool.load(seed_dir, require_gate=True)


def by_step(*replies: str) -> Callable[[LMRequest], str]:
    """An agent responder: the n-th reply of a trajectory is `replies[n]`."""

    def respond(request: LMRequest) -> str:
        return replies[sum(m["role"] == "assistant" for m in request.messages)]

    return respond


def test_step_gating_without_tools_reselects_at_every_refine_step(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(
        [
            "ACTIVATE: cautious-planner",
            "ACTIVATE: careful-computation",
            "ACTIVATE: detail-verifier",
        ]
    )
    agent_lm = FakeLM(
        responder=by_step(
            "Roughly 800.\nFINAL ANSWER: 800", "Recomputed.\nFINAL ANSWER: 801", "VERIFIED"
        )
    )
    agent = SkillAgent(
        agent_lm, bench, pool, LLMGate(gate_lm, pool, 1), max_steps=3, granularity="step"
    )
    rollout = asyncio.run(agent.run(TASK))
    assert rollout.selections == (
        ("cautious-planner",),
        ("careful-computation",),
        ("detail-verifier",),
    )
    assert rollout.skills == ("cautious-planner",) and rollout.sources == ("gate",) * 3
    assert gate_lm.purposes == ["gate"] * 3 and agent_lm.purposes == ["agent"] * 3
    assert rollout.reward == 1.0 and rollout.answer == "801" and rollout.calls == 6
    # the gate reselects from the task plus the latest draft
    second_gate = gate_lm.history[1].messages[-1]["content"]
    assert "## Progress so far" in second_gate and "FINAL ANSWER: 800" in second_gate
    # each step's system prompt holds that step's selection only
    systems = [r.messages[0]["content"] for r in agent_lm.history]
    assert "## Skill: cautious-planner" in systems[0]
    assert "## Skill: careful-computation" in systems[1] and "cautious-planner" not in systems[1]
    assert "## Skill: detail-verifier" in systems[2]
    assert agent_lm.history[1].messages[-1]["content"] == REFINE_INSTRUCTIONS


def test_verified_ends_the_loop_and_keeps_the_latest_solution(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(["ACTIVATE: cautious-planner", "ACTIVATE: detail-verifier"])
    agent_lm = FakeLM(responder=by_step("FINAL ANSWER: 801", "**VERIFIED**", "unused"))
    agent = SkillAgent(
        agent_lm, bench, pool, LLMGate(gate_lm, pool, 1), max_steps=3, granularity="step"
    )
    rollout = asyncio.run(agent.run(TASK))
    assert rollout.response == "FINAL ANSWER: 801" and rollout.reward == 1.0
    assert len(rollout.selections) == 2 and len(agent_lm.history) == 2
    assert rollout.messages[-1] == {"role": "assistant", "content": "**VERIFIED**"}


def test_task_level_gating_without_tools_stays_single_turn(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(["ACTIVATE: cautious-planner"])
    agent_lm = FakeLM(responder=by_step("FINAL ANSWER: 800", "FINAL ANSWER: 801"))
    agent = SkillAgent(agent_lm, bench, pool, LLMGate(gate_lm, pool, 1), max_steps=4)
    rollout = asyncio.run(agent.run(TASK))
    assert agent.max_steps == 1 and len(agent_lm.history) == 1
    assert rollout.selections == (("cautious-planner",),) and rollout.reward == 0.0


def test_step_gating_with_tools_records_every_selection(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(["ACTIVATE: cautious-planner", "ACTIVATE: python-tool-use"])
    agent_lm = FakeLM(
        responder=by_step("```python\nprint((98 + 8) * 8 - 47)\n```", "FINAL ANSWER: 801")
    )
    agent = SkillAgent(
        agent_lm,
        bench,
        pool,
        LLMGate(gate_lm, pool, 1),
        tools=["python"],
        max_steps=3,
        granularity="step",
    )
    rollout = asyncio.run(agent.run(TASK))
    assert rollout.selections == (("cautious-planner",), ("python-tool-use",))
    assert rollout.reward == 1.0
    second_gate = gate_lm.history[1].messages[-1]["content"]
    assert "Python output:\n801" in second_gate  # the progress includes the tool's output


def test_every_selection_of_a_step_gated_rollout_is_credited(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(["ACTIVATE: cautious-planner", "ACTIVATE: careful-computation"])
    agent_lm = FakeLM(responder=by_step("FINAL ANSWER: 800", "FINAL ANSWER: 801"))
    agent = SkillAgent(
        agent_lm, bench, pool, LLMGate(gate_lm, pool, 1), max_steps=2, granularity="step"
    )
    rollout = asyncio.run(agent.run(TASK))
    state = RunState()
    assign_credit(state, [Outcome.of(rollout)], beta=0.3)
    assert state.activations == {"cautious-planner": 1, "careful-computation": 1}
    assert state.q == {
        "cautious-planner": pytest.approx(0.65),
        "careful-computation": pytest.approx(0.65),
    }


def test_agent_tools_gives_step_gating_several_steps_without_tools() -> None:
    no_tools = get_benchmark("gsm8k")
    assert agent_tools(None, no_tools, None) == ([], 1)
    assert agent_tools(None, no_tools, None, granularity="step") == ([], REFINE_STEPS)
    assert agent_tools(None, no_tools, 5, granularity="step") == ([], 5)
    assert agent_tools(None, get_benchmark("offline"), None, granularity="step") == (["python"], 4)


def test_from_config_builds_the_configured_agent(pool) -> None:  # type: ignore[no-untyped-def]
    config = Config.model_validate(
        {"gating": {"granularity": "step"}, "agent": {"progressive_disclosure": False}}
    )
    agent = agent_for(FakeLM(), get_benchmark("gsm8k"), pool, FixedSkills((), "none"), config)
    assert agent.max_steps == REFINE_STEPS and agent.granularity == "step"
    assert agent.tools == () and not agent.progressive_disclosure
    default = agent_for(FakeLM(), get_benchmark("gsm8k"), pool, FixedSkills((), "none"), Config())
    assert default.max_steps == 1 and default.progressive_disclosure


def test_no_progressive_disclosure_shows_every_body_and_credits_the_selection(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(["ACTIVATE: detail-verifier, careful-computation"])
    agent_lm = FakeLM(["FINAL ANSWER: 801"])
    gate = LLMGate(gate_lm, pool, 2)
    agent = SkillAgent(agent_lm, bench, pool, gate, progressive_disclosure=False)
    rollout = asyncio.run(agent.run(TASK))
    system = agent_lm.history[0].messages[0]["content"]
    for skill in pool:
        assert f"## Skill: {skill.name}\n\n{skill.body.strip()}" in system
    assert pool.gate is not None and pool.gate.body.strip() not in system  # the gate is no skill
    selected, others = system.split(OTHER_SKILLS_HEADING)
    assert "## Skill: detail-verifier" in selected and "## Skill: careful-computation" in selected
    assert "## Skill: cautious-planner" in others and "## Skill: detail-verifier" not in others
    assert selected.index("## Skill: detail-verifier") < selected.index("careful-computation")
    assert rollout.skills == ("detail-verifier", "careful-computation")
    assert rollout.activation == "gate" and gate_lm.purposes == ["gate"]
    state = RunState()
    assign_credit(state, [Outcome.of(rollout)], beta=0.3)
    assert set(state.activations) == {"detail-verifier", "careful-computation"}


def test_default_disclosure_prompt_is_unchanged(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(["ACTIVATE: detail-verifier, careful-computation"])
    agent_lm = FakeLM(["FINAL ANSWER: 801"])
    agent = SkillAgent(agent_lm, bench, pool, LLMGate(gate_lm, pool, 2))
    asyncio.run(agent.run(TASK))
    system = agent_lm.history[0].messages[0]["content"]
    assert OTHER_SKILLS_HEADING not in system and "## Skill: cautious-planner" not in system


def test_no_progressive_disclosure_with_step_gating_follows_each_selection(bench, pool) -> None:  # type: ignore[no-untyped-def]
    gate_lm = FakeLM(["ACTIVATE: cautious-planner", "ACTIVATE: detail-verifier"])
    agent_lm = FakeLM(responder=by_step("FINAL ANSWER: 801", "VERIFIED"))
    agent = SkillAgent(
        agent_lm,
        bench,
        pool,
        LLMGate(gate_lm, pool, 1),
        max_steps=2,
        granularity="step",
        progressive_disclosure=False,
    )
    asyncio.run(agent.run(TASK))
    first, second = (r.messages[0]["content"].split(OTHER_SKILLS_HEADING) for r in agent_lm.history)
    assert "## Skill: cautious-planner" in first[0] and "## Skill: detail-verifier" in first[1]
    assert "## Skill: detail-verifier" in second[0] and "## Skill: cautious-planner" in second[1]


@pytest.mark.parametrize(
    ("reply", "verified"),
    [
        ("VERIFIED", True),
        ("verified.", True),
        ("**VERIFIED**\n", True),
        ("", False),
        ("VERIFIED the draft is wrong", False),
        ("FINAL ANSWER: 3", False),
    ],
)
def test_is_verified(reply: str, verified: bool) -> None:
    assert is_verified(reply) is verified
