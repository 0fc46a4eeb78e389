from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from moscopt.benchmarks import Grade, Task, get_benchmark
from moscopt.benchmarks.graders.exact import answers_match, normalize_text, to_number
from moscopt.benchmarks.graders.math import math_equal
from moscopt.errors import UserError


def _task(bench: str, gold: object) -> Task:
    return Task("t1", bench, "prompt", gold)


def test_math_grader() -> None:
    bench = get_benchmark("math500")
    task = _task("math500", "\\frac{1}{2}")
    assert bench.grade(task, "so the answer is \\boxed{0.5}").reward == 1.0
    assert bench.grade(task, "FINAL ANSWER: 1/2").reward == 1.0
    wrong = bench.grade(task, "\\boxed{\\frac{1}{3}}")
    assert wrong.reward == 0.0 and wrong.answer == "\\frac{1}{3}" and wrong.error is None
    none = bench.grade(task, "I think it is one half")
    assert none.reward == 0.0 and none.answer is None and "no" in none.detail


def test_math_equal_works_in_a_worker_thread() -> None:
    results: dict[str, bool] = {}

    def work() -> None:
        results["eq"] = math_equal("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}")
        results["ne"] = math_equal("3", "4")

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(60)
    assert results == {"eq": True, "ne": False}


def test_numeric_grader_reads_gold_after_hashes() -> None:
    bench = get_benchmark("gsm8k")
    hub_style = _task("gsm8k", "She sells 9 eggs ... 9 * 2 = 18\n#### 18")
    assert bench.grade(hub_style, "FINAL ANSWER: $18.00").reward == 1.0
    assert bench.grade(hub_style, "... so she makes 18 dollars").reward == 1.0
    assert bench.grade(_task("gsm8k", "1,000"), "FINAL ANSWER: 1000").reward == 1.0
    assert bench.grade(hub_style, "FINAL ANSWER: 19").reward == 0.0
    bad_gold = bench.grade(_task("gsm8k", "eighteen"), "FINAL ANSWER: 18")
    assert bad_gold.error is not None and bad_gold.reward == 0.0


def test_exact_grader_normalizes() -> None:
    bench = get_benchmark("bbh")
    assert bench.grade(_task("bbh", "(B)"), "FINAL ANSWER: B").reward == 1.0
    assert bench.grade(_task("bbh", "(B)"), "FINAL ANSWER: (C)").reward == 0.0
    assert bench.grade(_task("bbh", "Yes"), "blah\nFINAL ANSWER: **yes**.").reward == 1.0
    assert bench.grade(_task("bbh", "] ) >"), "FINAL ANSWER: ])>").reward == 1.0
    assert bench.grade(_task("bbh", "valid"), "FINAL ANSWER: invalid").reward == 0.0
    # Without a marker the last line is the answer.
    assert bench.grade(_task("bbh", "False"), "Let me think.\nFalse").reward == 1.0


def test_normalization_helpers() -> None:
    assert normalize_text("  **(B)** ") == "b"
    assert normalize_text('"Hello   World."') == "hello world"
    assert to_number("$1,234.50") == to_number("1234.5")
    assert to_number("50%") == to_number("0.5")
    assert to_number("abc") is None
    assert answers_match("2023-01-04", "2023-01-04")
    assert answers_match("7", "7.0") and not answers_match("7", "70")


def test_choice_grader() -> None:
    bench = get_benchmark("gpqa-diamond")
    task = _task("gpqa-diamond", "C")
    assert bench.grade(task, "Reasoning...\nFINAL ANSWER: C").reward == 1.0
    assert bench.grade(task, "The answer is (C).").reward == 1.0
    assert bench.grade(task, "**C**").reward == 1.0
    assert bench.grade(task, "FINAL ANSWER: A").reward == 0.0
    assert bench.grade(task, "no idea").answer is None


def test_offline_grader_on_its_own_golds() -> None:
    bench = get_benchmark("offline")
    for task in bench.load()["all"]:
        assert bench.grade(task, f"Work...\nFINAL ANSWER: {task.gold}").reward == 1.0
        assert bench.grade(task, "FINAL ANSWER: wrong-answer 0.123").reward == 0.0


GRADER_MODULE = """
from moscopt.benchmarks import Grade

def half(task, response):
    return 0.5

def boom(task, response):
    raise RuntimeError("grader exploded")

def too_big(task, response):
    return 3.0

def graded(task, response):
    return Grade(1.0, response.strip(), "custom")

def weird(task, response):
    return "yes"
"""


@pytest.fixture
def custom_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "my_graders_mod.py").write_text(GRADER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_graders_mod"
    sys.modules.pop("my_graders_mod", None)


def _custom_spec(tmp_path: Path, entry: str) -> str:
    path = tmp_path / f"custom-{entry.split(':')[-1]}.yaml"
    path.write_text(
        "name: custom-demo\ndescription: demo\n"
        "source:\n  local:\n    files: [d.jsonl]\n    fields: {id: id, question: q}\n"
        f"grader: custom\ngrader_entry: '{entry}'\n"
        "splits: {train: 1, val: 1, test: 1}\n"
    )
    (tmp_path / "d.jsonl").write_text(
        "".join(f'{{"id": "i{i}", "q": "question {i}"}}\n' for i in range(3))
    )
    return str(path)


def test_custom_graders(tmp_path: Path, custom_module: str) -> None:
    task = _task("custom-demo", {})
    half = get_benchmark(_custom_spec(tmp_path, f"{custom_module}:half"))
    assert half.grade(task, "x") == Grade(0.5, None, "custom grader")
    boom = get_benchmark(_custom_spec(tmp_path, f"{custom_module}:boom"))
    grade = boom.grade(task, "x")
    assert grade.reward == 0.0 and grade.error == "RuntimeError: grader exploded"
    big = get_benchmark(_custom_spec(tmp_path, f"{custom_module}:too_big")).grade(task, "x")
    assert big.reward == 0.0 and big.error is not None and "outside [0, 1]" in big.error
    graded = get_benchmark(_custom_spec(tmp_path, f"{custom_module}:graded")).grade(task, " a ")
    assert graded == Grade(1.0, "a", "custom")
    weird = get_benchmark(_custom_spec(tmp_path, f"{custom_module}:weird")).grade(task, "x")
    assert weird.error is not None and "str" in weird.error


def test_custom_benchmark_loads_and_reports_bad_entry_points(
    tmp_path: Path, custom_module: str
) -> None:
    bench = get_benchmark(_custom_spec(tmp_path, f"{custom_module}:half"))
    splits = bench.load(data=tmp_path / "d.jsonl")
    assert splits.sizes() == {"train": 1, "val": 1, "test": 1}
    missing = get_benchmark(_custom_spec(tmp_path, "no_such_module_xyz:f"))
    with pytest.raises(UserError, match="cannot import grader module 'no_such_module_xyz'"):
        missing.load(data=tmp_path / "d.jsonl")
    # At grading time the same problem is a per-task grader error, never an exception.
    assert missing.grade(_task("custom-demo", {}), "x").error is not None
    not_callable = get_benchmark(_custom_spec(tmp_path, f"{custom_module}:nothing"))
    with pytest.raises(UserError, match="not a callable"):
        not_callable.load(data=tmp_path / "d.jsonl")


def test_grade_never_raises_on_odd_input() -> None:
    for name in ("math500", "gsm8k", "bbh", "gpqa-diamond", "offline"):
        bench = get_benchmark(name)
        grade = bench.grade(_task(name, "1"), None)  # type: ignore[arg-type]
        assert 0.0 <= grade.reward <= 1.0
