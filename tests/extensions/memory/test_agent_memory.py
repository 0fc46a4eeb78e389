"""The agent with gated execution memory: what the next step and the router read, halting and
the aggregator, the trace kept for training. The world answers by each call's purpose."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from moscopt.agent.harness import Rollout
from moscopt.benchmarks import Benchmark, Task, get_benchmark
from moscopt.extensions.memory.halting import HALTING_FEATURES
from moscopt.extensions.memory.learned import Logistic
from moscopt.extensions.memory.tracker import MEMORY_HEADING, MemorySettings
from moscopt.testing import FakeLM
from moscopt.testing.multistep_world import MultiStepWorld

WORLD = MultiStepWorld(n_tasks=60, seed=3)
MEMORY = MemorySettings(context=True, route_on="memory")
CONFIDENT = Logistic(tuple(12.0 if n == "confidence" else 0.0 for n in HALTING_FEATURES), -7.0)


@pytest.fixture(scope="module")
def bench() -> Benchmark:
    return get_benchmark("offline")


def task_with(k: int, decoy: bool = False) -> Task:
    for task in WORLD.tasks():
        chain = WORLD.chains[task.id]
        if len(chain.tokens) == k and (chain.decoy is not None) == decoy:
            return task
    raise AssertionError("no such task in the world")


def run(bench: Benchmark, task: Task, settings: MemorySettings) -> tuple[Rollout, FakeLM]:
    lm = FakeLM(routes=WORLD.routes())
    return asyncio.run(WORLD.skill_agent(lm, bench, settings).run(task)), lm


def agent_requests(lm: FakeLM) -> list[str]:
    return [
        "\n".join(m["content"] for m in r.messages)
        for r, p in zip(lm.history, lm.purposes, strict=True)
        if p == "agent"
    ]


def test_later_steps_read_the_retrieved_memory_not_the_transcript(bench: Benchmark) -> None:
    task = task_with(3)
    rollout, lm = run(bench, task, MEMORY)
    assert rollout.reward == 1.0
    second = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "agent"][1]
    assert [m["role"] for m in second.messages] == ["system", "user"]
    body = second.messages[-1]["content"]
    assert MEMORY_HEADING in body and WORLD.chains[task.id].tokens[0] in body
    assert "Reasoning:" not in body  # the first reply's long reasoning stayed out
    assert "memory" in rollout.extra and len(rollout.extra["memory"]["steps"]) >= 3


def test_memory_needs_fewer_prompt_tokens_than_the_transcript(bench: Benchmark) -> None:
    task = task_with(3)
    full, _ = run(bench, task, MemorySettings(route_on="full"))
    gated, _ = run(bench, task, MEMORY)
    assert full.reward == gated.reward == 1.0
    assert gated.prompt_tokens < 0.7 * full.prompt_tokens


def test_what_the_router_reads(bench: Benchmark) -> None:
    task = task_with(2)

    def gate_inputs(settings: MemorySettings) -> list[str]:
        _, lm = run(bench, task, settings)
        return [
            r.messages[-1]["content"]
            for r, p in zip(lm.history, lm.purposes, strict=True)
            if p == "gate"
        ]

    query = gate_inputs(MemorySettings(route_on="query"))
    assert all("## Progress so far" not in g for g in query)
    full = gate_inputs(MemorySettings(route_on="full"))
    assert "Reasoning:" in full[1]
    memory = gate_inputs(MEMORY)
    assert MEMORY_HEADING in memory[1] and "Reasoning:" not in memory[1]
    # routing on the query alone cannot follow progress: the chain stalls
    rollout, _ = run(bench, task, MemorySettings(route_on="query"))
    chain = WORLD.chains[task.id]
    if chain.skills[0] != chain.skills[1]:
        assert rollout.reward == 0.0


def test_halting_stops_when_the_memory_holds_the_answer(bench: Benchmark) -> None:
    task = task_with(1)
    no_halt, _ = run(bench, task, MEMORY)
    rule, _ = run(bench, task, replace(MEMORY, halting=True))
    fitted, _ = run(bench, task, replace(MEMORY, halting=True, halting_model=CONFIDENT))
    assert no_halt.reward == rule.reward == fitted.reward == 1.0
    assert fitted.calls == 2  # one gate call, one agent step: a confident answer is enough
    assert fitted.calls <= rule.calls <= no_halt.calls
    assert fitted.extra["memory"]["halted_at"] == 0


def test_halting_continues_while_answers_are_tentative(bench: Benchmark) -> None:
    task = task_with(3)
    rollout, _ = run(bench, task, replace(MEMORY, halting=True, halting_model=CONFIDENT))
    assert rollout.reward == 1.0
    assert rollout.extra["memory"]["halted_at"] == 2  # the third step found the answer


def test_agreement_alone_is_fooled_by_a_repeated_decoy(bench: Benchmark) -> None:
    task = task_with(3, decoy=True)
    rule, _ = run(bench, task, replace(MEMORY, halting=True))
    fitted, _ = run(bench, task, replace(MEMORY, halting=True, halting_model=CONFIDENT))
    assert rule.reward == 0.0 and rule.extra["memory"]["halted_at"] == 1
    assert fitted.reward == 1.0


def test_the_llm_aggregator_makes_one_call_on_halting(bench: Benchmark) -> None:
    task = task_with(2)
    settings = replace(MEMORY, halting=True, halting_model=CONFIDENT, aggregator="llm")
    rollout, lm = run(bench, task, settings)
    assert lm.purposes.count("aggregate") == 1 and lm.purposes[-1] == "aggregate"
    assert rollout.reward == 1.0


def test_ask_confidence_adds_the_line_to_the_system_prompt(bench: Benchmark) -> None:
    _, lm = run(bench, task_with(1), replace(MEMORY, halting=True, ask_confidence=True))
    assert "CONFIDENCE:" in agent_requests(lm)[0]
