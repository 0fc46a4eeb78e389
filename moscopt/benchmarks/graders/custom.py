"""User graders: a `package.module:function` entry point called as `fn(task, response)`.

The function returns a float or bool (the reward) or a `Grade`. Anything else, a reward
outside [0, 1] or an exception becomes a grader error (reward 0), never a crash. The library's
grader functions (`moscopt.benchmarks.inline`) take the same order, `(row, response)`, and their
results are read by the same `as_grade`.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

from moscopt.benchmarks.tasks import Grade, GradeFn, Task
from moscopt.errors import UserError


def load_custom_grader(entry: str) -> GradeFn:
    """Import the entry point now, so that a typo is one clear error before any run."""
    module_name, _, attr = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # ImportError, or the module itself failing to import
        raise UserError(
            f"cannot import grader module '{module_name}': {type(e).__name__}: {e}",
            field="grader_entry",
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UserError(f"'{entry}' is not a callable in that module", field="grader_entry")

    def grade_custom(task: Task, response: str) -> Grade:
        return as_grade(fn(task, response))

    return grade_custom


def as_grade(result: Any, answer: str | None = None) -> Grade:
    """A user grader's result as a `Grade` (`answer`: the answer extracted from the response,
    when the caller has one)."""
    if isinstance(result, Grade):
        return result  # its reward is already clamped to [0, 1]
    if isinstance(result, bool):
        return Grade(1.0 if result else 0.0, answer, "custom grader")
    if isinstance(result, int | float):
        value = float(result)
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            return Grade.failed(f"reward {value} outside [0, 1]", answer)
        return Grade(value, answer, "custom grader")
    return Grade.failed(
        f"custom grader returned {type(result).__name__}, not a float or Grade", answer
    )
