"""A library grader function takes `(row, response)`, the order of a spec's `(task, response)`
entry point; one written for the old `(response, row)` order still grades, with a warning."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from moscopt.benchmarks.inline import inline_benchmark
from moscopt.benchmarks.tasks import Grade

ROWS = [{"id": "t1", "question": "2 + 3?", "answer": "5"}]


def _grade(grader: Any, response: str) -> Grade:
    bench, splits = inline_benchmark({"train": ROWS}, grader=grader)
    return bench.grade(splits.train[0], response)


def test_a_grader_receives_the_row_then_the_response() -> None:
    seen: list[tuple[Any, Any]] = []

    def grader(row: dict[str, Any], reply: str) -> bool:
        seen.append((row, reply))
        return row["answer"] in reply

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new order warns about nothing
        assert _grade(grader, "FINAL ANSWER: 5").reward == 1.0
    assert seen == [(ROWS[0], "FINAL ANSWER: 5")]


def test_an_old_order_grader_still_grades_and_is_told_where_to_swap() -> None:
    def grader(response: str, row: dict[str, Any]) -> float:
        return 1.0 if row["answer"] in response else 0.0

    with pytest.warns(FutureWarning, match=r"\(row, response\)") as caught:
        bench, splits = inline_benchmark({"train": ROWS}, grader=grader)
    assert caught[0].filename == __file__  # it points at the grader, not at moscopt
    assert bench.grade(splits.train[0], "5").reward == 1.0
    assert bench.grade(splits.train[0], "4").reward == 0.0


@pytest.mark.parametrize(
    ("returned", "reward", "error"),
    [(True, 1.0, None), (0.25, 0.25, None), (2.0, 0.0, "outside [0, 1]"), ("yes", 0.0, "str")],
)
def test_a_library_grader_is_read_as_an_entry_point_grader_is(
    returned: Any, reward: float, error: str | None
) -> None:
    grade = _grade(lambda row, response: returned, "FINAL ANSWER: 5")
    assert grade.reward == reward
    assert (grade.error is None) if error is None else (error in (grade.error or ""))
    assert grade.answer == "5"  # the answer extracted from the response, for the report
