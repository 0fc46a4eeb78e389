"""Graders: `(task, response) -> Grade`, one module per kind, picked by the spec's `grader`.

Contract: a grader returns a `Grade` with reward in [0, 1]. It may raise; `Benchmark.grade`
turns any exception into `Grade.failed(...)` (reward 0, error set) so that a run never crashes
on a grader.
"""

from __future__ import annotations

from collections.abc import Callable

from moscopt.benchmarks.graders.answer import answer_grader
from moscopt.benchmarks.spec import BenchmarkSpec
from moscopt.benchmarks.tasks import GradeFn

__all__ = [
    "INLINE_GRADERS",
    "AgreeFn",
    "GradeFn",
    "answer_grader",
    "make_agreement",
    "make_grader",
]

# Graders that take microseconds (string and number matching): the agent calls them on the
# event loop, where a hop to a worker thread would cost more than the grading. The others
# (math-verify, unit tests, IFEval rules, custom code) run off the loop.
INLINE_GRADERS = frozenset({"exact", "numeric", "choice"})


def make_grader(spec: BenchmarkSpec, *, allow_unsandboxed: bool = False) -> GradeFn:
    """The grading function for `spec` (custom entry points are imported here).

    `allow_unsandboxed` (config key `agent.allow_unsandboxed`) lets the code grader run tests
    where nothing isolates reads (`moscopt.agent.tools.sandbox.isolation_available`)."""
    kind = spec.grader
    if kind in ("math", "numeric", "exact", "choice"):
        return answer_grader(kind, spec.choice_letters)
    if kind == "judge":
        from moscopt.benchmarks.graders.judge import grade_judge

        return grade_judge
    if kind == "code":
        from moscopt.benchmarks.graders.code import make_code_grader

        return make_code_grader(spec.code_timeout, allow_unsandboxed=allow_unsandboxed)
    if kind == "ifeval":
        from moscopt.benchmarks.graders.ifeval import make_ifeval_grader

        return make_ifeval_grader(all_or_nothing=spec.scoring == "all")
    from moscopt.benchmarks.graders.custom import load_custom_grader

    assert spec.grader_entry is not None
    return load_custom_grader(spec.grader_entry)


AgreeFn = Callable[[str, str], bool]  # (an answer, another) -> the grader counts them the same


def make_agreement(spec: BenchmarkSpec) -> AgreeFn | None:
    """Whether two proposed answers are the same answer as the grader compares them (numbers by
    value, math by equivalence, letters, normalized text); None where the grader compares no
    answer text (code tests, IFEval instructions)."""
    kind = spec.grader
    if kind in ("code", "ifeval", "judge"):
        return None
    if kind == "math":
        from moscopt.benchmarks.graders.math import math_equal

        return math_equal
    if kind == "choice":
        return lambda a, b: a.strip().upper() == b.strip().upper()
    from moscopt.benchmarks.graders.exact import answers_match

    return answers_match  # numeric, exact, custom: numbers by value, else normalized text
