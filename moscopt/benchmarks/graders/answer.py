"""The graders that compare a reply with an answer key, by name (a spec's `grader`, or a task
file's answer judge)."""

from __future__ import annotations

from moscopt.benchmarks.tasks import GradeFn


def answer_grader(kind: str, choice_letters: str = "ABCD") -> GradeFn:
    """The grader that compares a reply with an answer key: `math`, `numeric`, `exact` or
    `choice` (`choice_letters` are its options' letters)."""
    if kind == "math":
        from moscopt.benchmarks.graders.math import grade_math, require_math_verify

        require_math_verify()
        return grade_math
    if kind == "numeric":
        from moscopt.benchmarks.graders.exact import grade_numeric

        return grade_numeric
    if kind == "choice":
        from moscopt.benchmarks.graders.choice import make_choice_grader

        return make_choice_grader(choice_letters)
    if kind != "exact":
        raise ValueError(f"not an answer grader: {kind!r}")
    from moscopt.benchmarks.graders.exact import grade_exact

    return grade_exact
