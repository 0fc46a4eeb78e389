"""Code: run the extracted solution and the benchmark's tests in the sandbox.

The program is `prefix + solution + setup + tests`:
- `prefix` is the HumanEval prompt (imports, helper functions, the signature). A response that
  gives only the indented body continues it; a response with the whole function redefines it
  (a later `def` wins), and the prompt's imports stay available either way.
- `setup` (MBPP `test_setup_code`) runs after the solution and before the asserts: in the data
  it builds test inputs from classes the solution defines (e.g. `root = Node(1)` for task 367),
  so it cannot run before the solution exists.
Reward 1 when the program exits 0 within the time limit, else 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from moscopt.benchmarks.extract import extract_code
from moscopt.benchmarks.graders import GradeFn
from moscopt.benchmarks.tasks import Grade, Task


def build_program(gold: Mapping[str, Any], solution: str) -> str:
    prefix = str(gold.get("prefix", ""))
    first = next((ln for ln in solution.split("\n") if ln.strip()), "")
    if prefix and first[:1] in (" ", "\t"):
        body = prefix.rstrip("\n") + "\n" + solution  # a function body continuing the prompt
    elif prefix:
        body = prefix + "\n\n" + solution
    else:
        body = solution
    parts = [body, str(gold.get("setup", "")), str(gold.get("tests", ""))]
    return "\n\n".join(p.rstrip() for p in parts if p.strip()) + "\n"


def make_code_grader(timeout: float) -> GradeFn:
    def grade_code(task: Task, response: str) -> Grade:
        from moscopt.tools.sandbox import run_python

        if not isinstance(task.gold, Mapping):
            raise TypeError(f"gold of {task.id} is not a test description")
        solution = extract_code(response)
        if not solution.strip():
            return Grade(0.0, None, "no code found")
        result = run_python(build_program(task.gold, solution), timeout=timeout)
        if result.ok:
            return Grade(1.0, solution, "tests passed")
        if result.timed_out:
            return Grade(0.0, solution, f"timed out after {timeout:g} s")
        lines = [ln for ln in result.stderr.strip().split("\n") if ln.strip()]
        reason = lines[-1][:200] if lines else (result.killed_reason or f"exit {result.exit_code}")
        return Grade(0.0, solution, f"tests failed: {reason}")

    return grade_code
