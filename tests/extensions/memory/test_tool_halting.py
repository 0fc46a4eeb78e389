"""Halting in tool loops that keep verifying: the answer is read from replies that also call a
tool, answers agree as the grader compares them, the controller is fitted on such runs, and the
memory never makes a prompt longer than the transcript. The world answers by each call's
purpose; its python tool is evaluated in process."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from moscopt.agent.harness import Rollout
from moscopt.benchmarks import Benchmark, Task, get_benchmark
from moscopt.config import load_config
from moscopt.extensions.memory.answers import AnswerKeeper
from moscopt.extensions.memory.tracker import MemorySettings
from moscopt.extensions.memory.training import learn
from moscopt.testing import FakeLM
from moscopt.testing.verify_world import VerifyWorld

WORLD = VerifyWorld(n_tasks=40, seed=2)
STEPS = 5
HALTING = MemorySettings(halting=True)


@pytest.fixture(scope="module")
def bench() -> Benchmark:
    return get_benchmark("offline")


def task_where(guess: bool, world: VerifyWorld = WORLD) -> Task:
    for task in world.tasks():
        if (world.problems[task.id].guess is not None) == guess:
            return task
    raise AssertionError("no such task in the world")


def run(
    bench: Benchmark, task: Task, settings: MemorySettings | None, world: VerifyWorld = WORLD
) -> tuple[Rollout, FakeLM]:
    lm = FakeLM(routes=world.routes())
    agent = world.skill_agent(lm, bench, settings, max_steps=STEPS, embedding_model="hashing")

    async def toolbox(_: Task) -> Any:
        return world.toolbox()

    agent.toolbox = toolbox
    return asyncio.run(agent.run(task)), lm


def agent_words(lm: FakeLM) -> list[int]:
    return [
        sum(len(m["content"].split()) for m in r.messages)
        for r, p in zip(lm.history, lm.purposes, strict=True)
        if p == "agent"
    ]


def test_halts_on_a_reply_that_carries_a_tool_call_and_an_answer(bench: Benchmark) -> None:
    task = task_where(guess=False)
    default, _ = run(bench, task, None)
    halted, lm = run(bench, task, HALTING)
    assert default.reward == halted.reward == 1.0
    assert default.calls == 1 + STEPS  # the gate, then every step: it never stops by itself
    trace = halted.extra["memory"]
    steps = trace["steps"]
    # steps 2 and 3 both state the answer (spelled differently) and ask for a verifying call
    assert steps[1]["answer"] is not None and steps[1]["pending"] and steps[2]["pending"]
    assert trace["halted_at"] == 2 and trace["halted_early"] and trace["steps_left"] == 2
    assert halted.calls == 1 + 3 and lm.purposes.count("agent") == 3
    # graded: the halting reply, its stated answer on a FINAL ANSWER line (its code not read)
    last = halted.response.rstrip().splitlines()[-1]
    assert last.startswith("FINAL ANSWER: ") and float(last.split()[-1].strip("$")) == float(
        steps[2]["answer"]
    )


def test_a_guess_stated_before_any_tool_output_does_not_stop_the_run(bench: Benchmark) -> None:
    task = task_where(guess=True)
    rollout, _ = run(bench, task, HALTING)
    answers = [s["answer"] for s in rollout.extra["memory"]["steps"]]
    guess = WORLD.problems[task.id].guess
    assert answers[0] is not None and float(answers[0]) == guess  # the guess is read...
    assert rollout.extra["memory"]["halted_at"] == 2  # ...but only the computed answer agrees
    assert rollout.reward == 1.0


def test_answers_agree_as_the_grader_compares_them(bench: Benchmark) -> None:
    keeper = AnswerKeeper(bench.same_answer)
    assert keeper.canonical("1,234.0") == keeper.canonical("$1234") == keeper.canonical("1234")
    assert keeper.canonical("1235") != keeper.canonical("1234")
    text_only = AnswerKeeper()
    assert text_only.canonical("1234.0") != text_only.canonical("1234")
    math = get_benchmark("math500")
    assert math.same_answer("\\frac{1}{2}", "0.5")
    assert not math.same_answer("\\frac{1}{2}", "\\frac{1}{3}")


def test_the_proposed_answer_is_what_the_benchmark_extracts() -> None:
    reply = "Let me check.\n\n```python\nprint(17 * 23)\n```\n\nThe answer is (B), probably."
    assert get_benchmark("gpqa-diamond").proposed_answer(reply) == "B"
    assert get_benchmark("gsm8k").proposed_answer('Checked: {"answer": "$1,234"}') == "1234"
    assert get_benchmark("offline").proposed_answer("**Answer:** blue whale") == "blue whale"
    assert get_benchmark("mbpp").proposed_answer("The answer is 3.") is None  # tests, not text
    assert get_benchmark("offline").proposed_answer("```python\nanswer = 3\n```") is None


def test_memory_never_lengthens_prompts_on_short_runs(bench: Benchmark) -> None:
    short = VerifyWorld(n_tasks=6, seed=5, filler_words=0)
    for task in short.tasks():
        default, plain = run(bench, task, None, short)
        gated, memory = run(bench, task, MemorySettings(context=True), short)
        assert gated.reward == default.reward == 1.0
        assert len(agent_words(memory)) == len(agent_words(plain))
        assert all(m <= p for m, p in zip(agent_words(memory), agent_words(plain), strict=True))
        assert gated.prompt_tokens <= default.prompt_tokens
        steps = gated.extra["memory"]["steps"]
        assert steps[0]["context"] == "transcript"


def test_memory_still_replaces_a_long_transcript(bench: Benchmark) -> None:
    long = VerifyWorld(n_tasks=4, seed=5, filler_words=150)
    task = long.tasks()[0]
    default, _ = run(bench, task, None, long)
    gated, _ = run(bench, task, MemorySettings(context=True), long)
    assert gated.reward == 1.0
    assert "memory" in [s["context"] for s in gated.extra["memory"]["steps"]]
    assert gated.prompt_tokens < default.prompt_tokens


def test_the_cost_aware_controller_is_fitted_on_tool_runs(bench: Benchmark) -> None:
    tasks = WORLD.tasks()
    train, test = tasks[:24], tasks[24:34]
    explore = MemorySettings(context=True)  # to the budget: uncensored
    rollouts = [run(bench, t, explore)[0] for t in train]
    by_id = {t.id: t for t in train}
    config = load_config(None, {"memory.enabled": True, "memory.halting.enabled": True})
    state = learn(None, rollouts, lambda tid, r: bench.grade(by_id[tid], r).reward, config)
    assert state.halting is not None and state.halting.examples >= len(train)
    fitted = MemorySettings.from_config(config.memory, state)
    assert fitted.halting_model is not None
    rule = replace(fitted, halting_model=None)
    learned_calls = rule_calls = 0
    for task in test:
        learned, _ = run(bench, task, fitted)
        by_rule, _ = run(bench, task, rule)
        assert learned.reward == by_rule.reward == 1.0
        learned_calls += learned.calls
        rule_calls += by_rule.calls
        # the first answer a tool output showed (never the guess before it)
        assert learned.extra["memory"]["halted_at"] == 1
    assert learned_calls < rule_calls
