"""Tasks and a grader given as Python objects: a list of dicts and a function (the library API).

    bench, splits = inline_benchmark(
        [{"question": "What is 2 + 3?", "answer": "5"}, ...],
        grader=lambda row, response: row["answer"] in response,
        instructions="End with FINAL ANSWER: <n>",
    )

A row needs `question` (or `prompt`); `id` is optional (default: a hash of the question),
`answer` (or `gold`) is what the built-in graders compare with (a row without one is a
`UserError` unless the grader is a function), and every other key is kept as
the task's `meta` (`niche`, or a `family`, groups tasks for niches and the report). `grader` is
a built-in grader's name (`exact`, `numeric`, `math`, `choice`) or a function
`(row, response) -> Grade | float | bool` that receives the row as given and the agent's reply:
the order of a spec's entry-point grader, `(task, response)`. A function written for the old
order, `(response, row)`, is recognised by its first parameter's name, `response`: it is called
that way with a `FutureWarning`. A function that raises costs that task (reward 0, the
error recorded), never the run; a reward outside [0, 1] is a grader error too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from moscopt.benchmarks.benchmark import Benchmark
from moscopt.benchmarks.spec import BenchmarkSpec, FieldMap, LocalSource, Source
from moscopt.benchmarks.tasks import Grade, Splits, Task
from moscopt.errors import UserError

Row = Mapping[str, Any]
GraderFn = Callable[[Row, str], "Grade | float | bool"]
BUILT_IN = ("exact", "numeric", "math", "choice")
INLINE_SOURCE = "<python>"


class InlineBenchmark(Benchmark):
    """A `Benchmark` over rows held in memory; `rows` maps task id to the row as given."""

    def __init__(self, spec: BenchmarkSpec, rows: Mapping[str, Row], grader: GraderFn | str):
        super().__init__(spec)
        self.rows = dict(rows)
        if callable(grader):
            self._grader = self._wrap(grader)

    def _wrap(self, fn: GraderFn) -> Callable[[Task, str], Grade]:
        from moscopt.benchmarks.extract import extract_answer
        from moscopt.benchmarks.graders.custom import as_grade

        old_order = _takes_response_first(fn)

        def grade(task: Task, response: str) -> Grade:
            row = self.rows.get(task.id, {})
            value = fn(response, row) if old_order else fn(row, response)  # type: ignore[arg-type]
            return as_grade(value, extract_answer(response))

        return grade


def _takes_response_first(fn: Callable[..., object]) -> bool:
    """Whether `fn` was written for the old order `(response, row)` (its first parameter is
    named `response`); warns that the order is now `(row, response)`."""
    import inspect
    import warnings

    try:
        first = next(iter(inspect.signature(fn).parameters), "")
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    if first != "response":
        return False
    code = getattr(fn, "__code__", None)  # the warning points at the grader's definition
    warnings.warn_explicit(
        f"grader {getattr(fn, '__name__', fn)!r} takes (response, row): the order is now "
        "(row, response), as for a spec's (task, response) grader; swap its parameters",
        FutureWarning,  # shown by default: a library user's grader is not in __main__ alone
        filename=code.co_filename if code else "<grader>",
        lineno=code.co_firstlineno if code else 0,
        module=getattr(fn, "__module__", None) or "moscopt",
    )
    return True


def inline_benchmark(
    rows: Sequence[Row] | Mapping[str, Sequence[Row]],
    grader: GraderFn | str = "exact",
    *,
    name: str = "tasks",
    instructions: str = "",
    sizes: Mapping[str, int] | None = None,
    seed: int = 42,
) -> tuple[InlineBenchmark, Splits]:
    """The benchmark and splits of `rows`: a list (split by `sizes`, default 60/20/20 percent,
    shuffled with `seed`) or a mapping `{"train": [...], "val": [...], "test": [...]}`.
    Bad rows are a `UserError` naming the row."""
    from moscopt.benchmarks.splits import split_tasks

    if not callable(grader) and grader not in BUILT_IN:
        raise UserError(
            f"unknown grader {grader!r}: a function (row, response) -> score, or one of "
            + ", ".join(BUILT_IN),
            field="grader",
        )
    kind = "custom" if callable(grader) else grader
    spec = BenchmarkSpec(
        name=name,
        description=f"{name} (Python objects)",
        source=Source(local=LocalSource(files=[INLINE_SOURCE], fields=_fields(kind))),
        grader=kind,
        grader_entry="moscopt.benchmarks.inline:inline_benchmark" if kind == "custom" else None,
        answer_instructions=instructions,
    )
    given = dict(rows) if isinstance(rows, Mapping) else {"all": list(rows)}
    unknown = set(given) - {"all", "train", "val", "test"}
    if unknown:
        raise UserError(f"unknown splits {sorted(unknown)}: use train, val, test", field="tasks")
    built: dict[str, list[Task]] = {}
    by_id: dict[str, Row] = {}
    for split, items in given.items():
        built[split] = []
        for i, row in enumerate(items):
            task = _task(row, name, instructions, where=f"{split}[{i}]", grader=kind)
            if task.id in by_id:
                raise UserError(f"duplicate task id {task.id!r}", field=f"tasks.{split}[{i}]")
            by_id[task.id] = row
            built[split].append(task)
    bench = InlineBenchmark(spec, by_id, grader)
    if "all" in built:
        total = len(built["all"])
        if sizes is None:
            n_val = max(1, round(0.2 * total))
            sizes = {"train": max(1, total - 2 * n_val), "val": n_val, "test": n_val}
        splits = split_tasks(built["all"], sizes, seed, source=INLINE_SOURCE)
    else:
        splits = Splits(
            train=built.get("train", []), val=built.get("val", []), test=built.get("test", [])
        )
    return bench, splits


def _fields(kind: str) -> FieldMap:
    if kind == "choice":
        return FieldMap(question="question", answer="answer", choices="choices")
    return FieldMap(question="question", answer="answer")


def _task(row: Row, bench: str, instructions: str, *, where: str, grader: str) -> Task:
    if not isinstance(row, Mapping):
        raise UserError(f"a task must be a dict, not {type(row).__name__}", field=f"tasks.{where}")
    question = row.get("question", row.get("prompt"))
    if not isinstance(question, str) or not question.strip():
        raise UserError("needs a non-empty 'question' (or 'prompt')", field=f"tasks.{where}")
    task_id = row.get("id")
    if task_id is None:
        task_id = hashlib.sha256(question.encode("utf-8")).hexdigest()[:12]
    prompt = f"{question.strip()}\n\n{instructions}".strip() if instructions else question.strip()
    gold = row.get("answer", row.get("gold"))
    if gold is None and grader != "custom":  # it would score 0.0 with no error, silently
        raise UserError(
            f"has no 'answer' (or 'gold') for the {grader} grader to compare with: give each "
            "task one, or pass a grader function (row, response) -> score",
            field=f"tasks.{where}",
        )
    skip = {"id", "question", "prompt", "answer", "gold"}
    meta = {str(k): v for k, v in row.items() if k not in skip}
    return Task(str(task_id), bench, prompt, gold, meta)


__all__ = ["InlineBenchmark", "inline_benchmark"]
