"""The grader of tasks that carry their own judge (`moscopt.benchmarks.judges`): rule checks
and answer keys here; a rubric needs a judge model, so `Benchmark.agrade` scores it
(`moscopt.benchmarks.rubric`) and this grader only says so."""

from __future__ import annotations

import dataclasses

from moscopt.benchmarks.judges import AnswerJudge, RubricJudge, RuleJudge
from moscopt.benchmarks.tasks import Grade, Task


def grade_judge(task: Task, response: str) -> Grade:
    judge = task.gold
    if isinstance(judge, RuleJudge):
        return judge.grade(response)
    if isinstance(judge, AnswerJudge):
        from moscopt.benchmarks.graders.answer import answer_grader

        keyed = dataclasses.replace(task, gold=judge.answer)
        return answer_grader(judge.grader)(keyed, response)
    if isinstance(judge, RubricJudge):
        return Grade.failed("a rubric is scored by a judge model (Benchmark.agrade)")
    return Grade.failed(f"task '{task.id}' carries no judge")
