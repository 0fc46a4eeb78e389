"""A custom grader: `grade(task, response) -> float` (a bool or a `moscopt.benchmarks.Grade`
work too). It may raise: moscopt then records a grader error for that task (reward 0)."""

from __future__ import annotations

from moscopt.benchmarks import Grade, Task
from moscopt.benchmarks.extract import extract_number

TOLERANCE = 0.005  # relative


def grade(task: Task, response: str) -> Grade:
    found = extract_number(response)
    if found is None:
        return Grade(0.0, None, "no number found")
    gold = float(task.gold)
    value = float(found.replace(",", ""))
    close = abs(value - gold) <= TOLERANCE * max(abs(gold), 1e-9)
    return Grade(1.0 if close else 0.0, found, "within 0.5%" if close else f"expected {gold:g}")
