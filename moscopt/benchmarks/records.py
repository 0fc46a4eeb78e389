"""Turning a raw `Row` into a `Task` following the spec's field map and prompt template, and
loading a benchmark's splits from its rows in memory that does not grow with the data.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from moscopt.benchmarks.loaders import Row, load_rows
from moscopt.benchmarks.spec import BenchmarkSpec
from moscopt.benchmarks.splits import split_tasks
from moscopt.benchmarks.tasks import SPLIT_NAMES, Splits, Task
from moscopt.errors import UserError

_TEMPLATE_FIELD = re.compile(r"\{([^{}]+)\}")


def stable_seed(text: str) -> int:
    """A seed derived from text (the same on every machine and Python run)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def build_task(spec: BenchmarkSpec, row: Row) -> Task:
    fm = row.fields
    question = _text(row, fm.question)
    task_id = _task_id(spec, row, question)
    meta: dict[str, Any] = dict(row.values or {})
    for key, column in fm.meta.items():
        meta[key] = row.config if column == "_config" else _get(row, column)
    gold: Any
    choices_block = ""
    tests_block = ""
    if spec.grader == "choice":
        options, letter = _choices(spec, row, task_id)
        meta["choices"] = options
        gold = letter
        choices_block = "\n".join(
            f"({spec.choice_letters[i]}) {opt}" for i, opt in enumerate(options)
        )
    elif spec.grader == "code":
        gold, tests_block = _code_gold(row, question)
        if fm.answer is not None:
            meta["reference"] = _text(row, fm.answer)
        if fm.entry_point is not None:
            meta["entry_point"] = _text(row, fm.entry_point)
    elif spec.grader == "ifeval":
        gold = _ifeval_gold(row)
    elif fm.answer is not None:
        gold = _text(row, fm.answer, allow_number=True)
    else:  # custom graders may need no answer column
        gold = dict(row.data)
    variables = {
        **{k: v for k, v in meta.items() if isinstance(v, str | int | float)},
        "question": question,
        "choices": choices_block,
        "tests": tests_block,
        "answer_instructions": spec.answer_instructions,
    }
    prompt = spec.prompt_template.format(**variables).strip()
    return Task(id=task_id, benchmark=spec.name, prompt=prompt, gold=gold, meta=meta)


def load_splits(
    spec: BenchmarkSpec,
    data: str | Path | None,
    sizes: Mapping[str, int],
    seed: int,
    *,
    source: str,
    limit: int | None = None,
) -> Splits:
    """The splits `split_tasks` makes of every row's task, reading the rows as a stream.

    Every row is turned into its task (so a bad row anywhere is still a `UserError` naming it),
    but only its id and origin are kept. With `limit`, the rows of the tasks kept (the first
    `limit` of each split) are then read again and only those tasks are built: memory holds
    one small stub per row, never the data.
    """
    stubs: list[Task] = []
    origin: dict[str, tuple[str, int]] = {}
    keep_all = limit is None
    for row in load_rows(spec, data):
        task = build_task(spec, row)
        if keep_all:
            stubs.append(task)
        else:
            stubs.append(Task(task.id, spec.name, "", None, _NO_META))
            if task.id not in origin:  # split_tasks reports a duplicate id
                origin[task.id] = (row.path, row.line or 0)
    splits = split_tasks(stubs, sizes, seed, source=source, limit=limit)
    if keep_all:
        return splits
    wanted = {origin[t.id]: t.id for name in SPLIT_NAMES for t in splits[name]}
    built: dict[str, Task] = {}
    for row in load_rows(spec, data, only=wanted):
        task = build_task(spec, row)
        if wanted.get((row.path, row.line or 0)) != task.id:
            raise UserError("the data changed while it was being read", path=row.path)
        built[task.id] = task
    missing = [i for i in wanted.values() if i not in built]
    if missing:
        raise UserError(f"the data changed while it was being read ({missing[0]})", path=source)
    parts = {name: [built[t.id] for t in splits[name]] for name in SPLIT_NAMES}
    return Splits(train=parts["train"], val=parts["val"], test=parts["test"], note=splits.note)


_NO_META: dict[str, Any] = {}


def _task_id(spec: BenchmarkSpec, row: Row, question: str) -> str:
    ref = row.fields.id
    if ref is None:
        digest = hashlib.sha256(question.strip().encode("utf-8")).hexdigest()[:12]
        return f"{spec.name}-{digest}"
    if "{" in ref:

        def sub(m: re.Match[str]) -> str:
            key = m.group(1)
            if key == "_index":
                if row.index is None:
                    raise UserError(
                        "id template uses {_index}, only available for hub sources",
                        path=row.path,
                        field="fields.id",
                    )
                return str(row.index)
            if key == "_config":
                return str(row.config)
            return str(_get(row, key))

        return _TEMPLATE_FIELD.sub(sub, ref)
    value = _get(row, ref)
    if not isinstance(value, str | int) or str(value).strip() == "":
        raise UserError(
            "the id must be a non-empty string or integer", path=row.path, line=row.line, field=ref
        )
    return str(value)


def _get(row: Row, column: str) -> Any:
    if column not in row.data:
        raise UserError("missing field", path=row.path, line=row.line, field=column)
    return row.data[column]


def _text(row: Row, column: str, *, allow_number: bool = False) -> str:
    value = _get(row, column)
    if allow_number and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise UserError(
            f"expected text, got {type(value).__name__}", path=row.path, line=row.line, field=column
        )
    if not value.strip() and column == row.fields.question:
        raise UserError("empty question", path=row.path, line=row.line, field=column)
    return value


def _choices(spec: BenchmarkSpec, row: Row, task_id: str) -> tuple[list[str], str]:
    """The options (possibly shuffled with a per-question RNG) and the gold letter."""
    fm = row.fields
    assert fm.answer is not None
    letters = spec.choice_letters
    answer = str(_get(row, fm.answer)).strip()
    if fm.choices is not None:
        options = _get(row, fm.choices)
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise UserError(
                "expected a list of strings", path=row.path, line=row.line, field=fm.choices
            )
        options = [o.strip() for o in options]
        if len(answer) == 1 and answer in letters and letters.index(answer) < len(options):
            correct = options[letters.index(answer)]
        elif answer in options:
            correct = answer
        else:
            raise UserError(
                "the answer is neither a choice letter nor one of the choices",
                path=row.path,
                line=row.line,
                field=fm.answer,
            )
    else:
        correct = answer
        options = [correct, *(_text(row, c).strip() for c in fm.incorrect)]
    if len(options) > len(letters):
        raise UserError(
            f"{len(options)} choices but only {len(letters)} letters",
            path=row.path,
            line=row.line,
            field=fm.choices or fm.answer,
        )
    # Two identical wrong options occur in the data (GPQA diamond); only an ambiguous correct
    # option makes the question ungradable.
    if options.count(correct) != 1:
        raise UserError(
            "the correct choice appears more than once",
            path=row.path,
            line=row.line,
            field=fm.choices or fm.answer,
        )
    if spec.shuffle_choices:
        # Sorting first makes the order independent of how the source listed the options, so
        # the hub and a local copy give the same letters.
        options = sorted(options)
        random.Random(stable_seed(f"choices:{task_id}")).shuffle(options)
    return options, letters[options.index(correct)]


def _code_gold(row: Row, question: str) -> tuple[dict[str, str], str]:
    """{"prefix", "setup", "tests"}: the program run is prefix + solution + setup + tests."""
    fm = row.fields
    tests_block = ""
    if fm.test is not None:
        tests = _text(row, fm.test)
        prefix = question  # HumanEval: the prompt holds imports and the signature
        if fm.entry_point is not None:
            tests += f"\n\ncheck({_text(row, fm.entry_point)})\n"
    else:
        assert fm.test_list is not None
        items = _get(row, fm.test_list)
        if not isinstance(items, list) or not all(isinstance(t, str) for t in items) or not items:
            raise UserError(
                "expected a non-empty list of test statements",
                path=row.path,
                line=row.line,
                field=fm.test_list,
            )
        tests = "\n".join(items) + "\n"
        tests_block = tests.strip()
        prefix = ""
    setup = _text(row, fm.test_setup) if fm.test_setup is not None else ""
    return {"prefix": prefix, "setup": setup, "tests": tests}, tests_block


def _ifeval_gold(row: Row) -> dict[str, Any]:
    fm = row.fields
    assert fm.instructions is not None and fm.instruction_kwargs is not None
    ids = _get(row, fm.instructions)
    kwargs = _get(row, fm.instruction_kwargs)
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or not ids:
        raise UserError(
            "expected a non-empty list of instruction ids",
            path=row.path,
            line=row.line,
            field=fm.instructions,
        )
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise UserError(
            "expected one kwargs object per instruction",
            path=row.path,
            line=row.line,
            field=fm.instruction_kwargs,
        )
    # The hub copy fills every possible argument with null; drop those.
    clean = [{k: v for k, v in (kw or {}).items() if v is not None} for kw in kwargs]
    return {"instruction_id_list": ids, "kwargs": clean}
