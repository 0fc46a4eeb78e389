"""IFEval grading: every instruction of a prompt is checked by its rule (see `checks`).

Scoring (spec `scoring`): `fraction` (default) gives the fraction of instructions followed, a
denser signal for skill optimization ("instruction-level strict accuracy"); `all` gives 1 only
when every instruction is followed ("prompt-level strict accuracy"). An instruction id without
a check is a grader error for that task, never a silent pass.
"""

from __future__ import annotations

from collections.abc import Mapping

from moscopt.benchmarks.graders.ifeval.checks import CHECKS
from moscopt.benchmarks.tasks import Grade, GradeFn, Task


class UnknownInstruction(LookupError):
    """An IFEval instruction id that moscopt has no check for."""


def check_instructions(response: str, gold: Mapping[str, object]) -> list[tuple[str, bool]]:
    """(instruction id, followed) for each instruction of `gold`; raises on an unknown id."""
    ids = gold["instruction_id_list"]
    kwargs = gold["kwargs"]
    assert isinstance(ids, list) and isinstance(kwargs, list)
    results = []
    for instruction, kw in zip(ids, kwargs, strict=True):
        check = CHECKS.get(instruction)
        if check is None:
            raise UnknownInstruction(f"IFEval instruction '{instruction}' is not implemented")
        results.append((instruction, bool(check(response, kw or {}))))
    return results


def make_ifeval_grader(*, all_or_nothing: bool) -> GradeFn:
    def grade_ifeval(task: Task, response: str) -> Grade:
        if not isinstance(task.gold, Mapping):
            raise TypeError(f"gold of {task.id} is not an IFEval instruction list")
        results = check_instructions(response, task.gold)
        followed = sum(ok for _, ok in results)
        missed = [i.split(":", 1)[-1] for i, ok in results if not ok]
        if all_or_nothing:
            reward = 1.0 if followed == len(results) else 0.0
        else:
            reward = followed / len(results)
        detail = f"followed {followed}/{len(results)}"
        if missed:
            detail += "; missed " + ", ".join(missed)
        return Grade(reward, None, detail)

    return grade_ifeval
