"""The acceptance benchmark's world (`RuleWorld`): its graded answers and its consistent
answers, which `scripts/bench_acceptance.py` measures the acceptance test on."""

from __future__ import annotations

import hashlib
import json

from moscopt.benchmarks.tasks import Task
from moscopt.testing.worlds import RuleWorld, grade_parts

TASKS = [Task(f"t{i}", "offline", f"Question {i}?", str(i)) for i in range(400)]
RULE = "Check twice."


def test_one_part_draws_exactly_as_before() -> None:
    """The default world is unchanged: the same hash of (task, sample, rule, prompt)."""
    world = RuleWorld(TASKS, RULE, 0.3, 0.7)
    for task in TASKS[:50]:
        for sample in range(3):
            prompt = hashlib.sha256(b"sys").hexdigest()
            key = json.dumps([task.prompt, sample, False, prompt])
            u = int(hashlib.sha256(key.encode()).hexdigest()[:15], 16) / 16**15
            assert world.succeeds(task.prompt, sample, "sys") == (u < 0.3)


def test_graded_answers_keep_the_success_rate_and_get_partial_credit() -> None:
    world = RuleWorld(TASKS, RULE, 0.5, 0.5, parts=4)
    rewards = []
    for task in TASKS:
        body = {"messages": [{"role": "user", "content": task.prompt}], "seed": 0}
        rewards.append(grade_parts(task, world(body)).reward)
    assert abs(sum(rewards) / len(rewards) - 0.5) < 0.06
    assert {0.25, 0.5, 0.75} <= set(rewards)  # partial credit, not only 0/1
    assert grade_parts(TASKS[0], "FINAL ANSWER: 0").reward == 0.0  # no PARTS line


def test_a_consistent_world_gives_a_task_its_usual_answer_more_often() -> None:
    def agreement(consistency: float) -> float:
        world = RuleWorld(TASKS, RULE, 0.5, 0.5, consistency=consistency)
        same = [world.succeeds(t.prompt, 0, "s") == world.succeeds(t.prompt, 1, "s") for t in TASKS]
        return sum(same) / len(same)

    assert 0.4 < agreement(0.0) < 0.6  # independent samples agree half the time at p = 0.5
    assert agreement(0.8) > 0.75  # 0.8^2 + (1 - 0.8^2) / 2 = 0.82 expected
