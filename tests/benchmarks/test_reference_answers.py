"""Done-means checks on real gold answers: MATH-500 golds verify, code references pass."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from moscopt.benchmarks import Benchmark, Grade, Task, get_benchmark
from moscopt.benchmarks.graders.code import build_program


@pytest.mark.slow
def test_every_math500_gold_verifies_against_itself_and_boxed(shared_data: Path) -> None:
    from math_verify import parse, verify

    bench = get_benchmark("math500")
    tasks = bench.tasks(data=shared_data)
    assert len(tasks) == 500
    failures = []
    for task in tasks:
        gold = parse(f"${task.gold}$")
        if not verify(gold, parse(f"${task.gold}$")) or not verify(
            gold, parse(f"\\boxed{{{task.gold}}}")
        ):
            failures.append(task.id)
        if bench.grade(task, f"Thus the answer is $\\boxed{{{task.gold}}}$.").reward != 1.0:
            failures.append(task.id)
    assert failures == []


def test_math500_wrong_integer_answers_fail(shared_data: Path) -> None:
    bench = get_benchmark("math500")
    integer = [t for t in bench.tasks(data=shared_data) if str(t.gold).strip().isdigit()][:40]
    assert integer
    for task in integer:
        assert bench.grade(task, f"\\boxed{{{int(task.gold) + 1}}}").reward == 0.0


def _reference_response(task: Task) -> str:
    code = task.meta["reference"]
    if task.gold["prefix"]:  # HumanEval references are bodies of the prompt's function
        code = task.gold["prefix"] + code
    return f"Here is my solution.\n```python\n{code}\n```\n"


def _grade_all(
    name: str, shared_data: Path, respond: object, every: int = 1
) -> list[tuple[str, Grade]]:
    bench = get_benchmark(name)
    tasks = bench.tasks(data=shared_data)[::every]
    # Generous wall-clock limit: a loaded CI machine must not turn a slow reference (mbpp-123
    # takes ~2.6 s alone) into a failure; this test checks correctness, not speed.
    bench = Benchmark(bench.spec.model_copy(update={"code_timeout": 60.0}))

    def run(task: Task) -> tuple[str, Grade]:
        return task.id, bench.grade(task, respond(task))  # type: ignore[operator]

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(run, tasks))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "count"), [("humaneval", 164), ("mbpp", 500)])
def test_code_references_pass_and_wrong_answers_fail(
    name: str, count: int, shared_data: Path
) -> None:
    passed = _grade_all(name, shared_data, _reference_response)
    assert len(passed) == count
    assert [(i, g.detail) for i, g in passed if g.reward != 1.0] == []
    # A wrong answer on every 4th task keeps the test quick; each run costs one interpreter.
    wrong = _grade_all(name, shared_data, lambda task: "```python\npass\n```", every=4)
    assert len(wrong) == (count + 3) // 4
    assert [i for i, g in wrong if g.reward != 0.0] == []


def test_humaneval_body_only_and_full_function(shared_data: Path) -> None:
    bench = get_benchmark("humaneval")
    task = next(t for t in bench.tasks(data=shared_data) if t.id == "HumanEval/0")
    body = bench.grade(task, f"```python\n{task.meta['reference']}```")
    assert body.reward == 1.0, body.detail
    broken = bench.grade(
        task, "```python\ndef has_close_elements(numbers, threshold):\n    return True\n```"
    )
    assert broken.reward == 0.0 and "tests failed" in broken.detail


def test_mbpp_setup_code_runs_after_the_solution(shared_data: Path) -> None:
    """Task 367's setup builds trees from the solution's own Node class."""
    bench = get_benchmark("mbpp")
    task = next(t for t in bench.tasks(data=shared_data) if t.id == "mbpp-367")
    assert "Node(" in task.gold["setup"]
    program = build_program(task.gold, task.meta["reference"])
    assert program.index("class Node") < program.index(task.gold["setup"].strip()[:20])
    assert program.index(task.gold["setup"].strip()[:20]) < program.index("assert")
    assert bench.grade(task, _reference_response(task)).reward == 1.0


def test_code_timeout_is_a_failure_not_a_hang(shared_data: Path) -> None:
    bench = get_benchmark("mbpp")
    task = bench.tasks(data=shared_data)[0]
    spec = bench.spec.model_copy(update={"code_timeout": 1.0})
    grade = Benchmark(spec).grade(task, "```python\nwhile True:\n    pass\n```")
    assert grade.reward == 0.0 and "timed out" in grade.detail
