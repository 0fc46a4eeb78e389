"""A library user's script, type-checked with `mypy --strict` by test_typed_api.py (not run)."""

from __future__ import annotations

from pathlib import Path
from typing import assert_type

import moscopt

rows = [{"question": "What is 17 + 25?", "answer": "42"}]


def echo(messages: list[dict[str, str]], purpose: str = "agent") -> str:
    return "FINAL ANSWER: 42"


result = moscopt.train(rows, grader="numeric", lm=echo, run_dir="runs/typed")
assert_type(result, moscopt.TrainResult)
assert_type(result.run_dir, Path)
assert_type(result.after, float | None)
assert_type(result.q_scores, dict[str, float])

report = moscopt.evaluate(rows, grader="numeric", skills=result.run_dir, lm=echo)
assert_type(report, moscopt.EvalReport)
assert_type(report.ci95, tuple[float, float])

exported = moscopt.export(result.run_dir, "static", tasks=rows, grader="numeric")
print(exported.out)

routing = moscopt.route("What is 3 + 4?", run_dir=result.run_dir, lm=echo)
assert_type(routing, moscopt.Routing)
assert_type(routing.skills, tuple[str, ...])
