"""Code: run the extracted solution and the benchmark's tests in the sandbox.

The solution's program is `prefix + solution + setup`:
- `prefix` is the HumanEval prompt (imports, helper functions, the signature). A response that
  gives only the indented body continues it; a response with the whole function redefines it
  (a later `def` wins), and the prompt's imports stay available either way.
- `setup` (MBPP `test_setup_code`) runs after the solution: in the data it builds test inputs
  from classes the solution defines (e.g. `root = Node(1)` for task 367).

The tests do not run in that program. The sandbox's judge (`moscopt.agent.tools._testrunner`) runs
them in a process of its own, against proxies of the solution's functions, with its own copy of
the prompt's helpers and pristine builtins, and proves that they all passed with a per-run token
the solution's process never sees. Reward 1 only on that proof; an exit code proves nothing (a
solution ending in ``os._exit(0)`` used to score 1).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping
from typing import Any

from moscopt.benchmarks.extract import extract_code
from moscopt.benchmarks.tasks import Grade, GradeFn, Task


def _solution_body(gold: Mapping[str, Any], solution: str) -> str:
    prefix = str(gold.get("prefix", ""))
    first = next((ln for ln in solution.split("\n") if ln.strip()), "")
    if prefix and first[:1] in (" ", "\t"):
        return prefix.rstrip("\n") + "\n" + solution  # a function body continuing the prompt
    if prefix:
        return prefix + "\n\n" + solution
    return solution


def _join(parts: list[str]) -> str:
    return "\n\n".join(p.rstrip() for p in parts if p.strip()) + "\n"


def solution_program(gold: Mapping[str, Any], solution: str) -> str:
    """What runs in the solution's process: prompt, solution, setup code."""
    return _join([_solution_body(gold, solution), str(gold.get("setup", ""))])


def build_program(gold: Mapping[str, Any], solution: str) -> str:
    """The whole program as one file (solution program, then the tests), for reading."""
    return _join([solution_program(gold, solution), str(gold.get("tests", ""))])


def entry_points(task: Task) -> list[str]:
    """Top-level names the reference solution defines: the tests may call them even where they
    shadow a builtin (MBPP's ``sum``); other names that shadow builtins stay the builtins."""
    reference = task.meta.get("reference") if isinstance(task.meta, Mapping) else None
    if not isinstance(reference, str):
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in old references
            tree = ast.parse(reference)
    except SyntaxError:
        return []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in tree.body if isinstance(node, defs)]


def make_code_grader(timeout: float, *, allow_unsandboxed: bool = False) -> GradeFn:
    def grade_code(task: Task, response: str) -> Grade:
        from moscopt.agent.tools.sandbox import UNSANDBOXED_REFUSED, TestSpec, run_python

        if not isinstance(task.gold, Mapping):
            raise TypeError(f"gold of {task.id} is not a test description")
        solution = extract_code(response)
        if not solution.strip():
            return Grade(0.0, None, "no code found")
        spec = TestSpec(
            tests=str(task.gold.get("tests", "")),
            prefix=str(task.gold.get("prefix", "")),
            entry_points=entry_points(task),
        )
        result = run_python(
            solution_program(task.gold, solution),
            timeout=timeout,
            tests=spec,
            allow_unsandboxed=allow_unsandboxed,
        )
        if result.tests_passed:
            return Grade(1.0, solution, "tests passed")
        if result.timed_out:
            return Grade(0.0, solution, f"timed out after {timeout:g} s")
        if result.killed_reason == UNSANDBOXED_REFUSED:
            return Grade(0.0, solution, "not run: " + UNSANDBOXED_REFUSED)
        lines = [ln for ln in result.stderr.strip().split("\n") if ln.strip()]
        reason = lines[-1][:200] if lines else (result.killed_reason or f"exit {result.exit_code}")
        return Grade(0.0, solution, f"tests failed: {reason}")

    return grade_code
