"""Task files: tasks that carry their own judges, written without Python.

JSONL (one object a line) or YAML (a list of objects, or `{tasks: [...]}`)::

    {"task_id": "brief-1", "task": "Write a brief on ...", "context": "...",
     "judge": {"kind": "rule", "checks": [{"op": "section_present", "arg": "Key Risks"}]}}

`task_id` (unique) and `task` (what the agent is asked) are required, and so is `judge`
(`moscopt.benchmarks.judges`: rule checks, rubric criteria, or an answer key). `context` is
material the task needs, shown to the agent after the task under "## Context"; `split` (train,
val or test) places a task; `niche` groups tasks; any other key is kept as the task's metadata.
A problem is one `UserError` naming the file, the line (JSONL) or entry (YAML), and the field.

`TaskFileBenchmark` is a `Benchmark` over a training file and an optional held-out file
(`moscopt train --tasks FILE --held-out FILE`, or a spec's `source.tasks`): tasks without a
`split` in the training file are split two to one into train and val (seeded, independent of
file order); the held-out file's tasks are the test split the certificate is measured on. The
optimizer is shown a failed training task's prompt, reply and which checks or criteria it
failed (`Grade.detail`); held-out tasks reach no prompt of the optimizer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from moscopt.benchmarks.benchmark import Benchmark
from moscopt.benchmarks.judges import Judge, RubricJudge
from moscopt.benchmarks.spec import BenchmarkSpec, Source, TaskFileSource
from moscopt.benchmarks.tasks import SPLIT_NAMES, Grade, Splits, Task
from moscopt.core.validation import describe
from moscopt.errors import UserError
from moscopt.run.fsio import read_text

FILE_MAX_BYTES = 64 * 1024 * 1024
TASK_MAX_CHARS = 100_000
VAL_SHARE = 1 / 3  # of the training file's unplaced tasks
_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_ROW_KEYS = frozenset({"task_id", "task", "context", "split", "niche", "judge"})


class TaskRow(BaseModel):
    """One task of a task file (unknown keys are kept as metadata)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task_id: str = Field(pattern=_ID_PATTERN)
    task: str = Field(min_length=1, max_length=TASK_MAX_CHARS)
    context: str | None = Field(None, max_length=TASK_MAX_CHARS)
    split: Literal["train", "val", "test"] | None = None
    niche: str | None = Field(None, max_length=200)
    judge: Judge

    def prompt(self) -> str:
        return self.task if not self.context else f"{self.task}\n\n## Context\n\n{self.context}"

    def to_task(self, benchmark: str) -> Task:
        meta = {k: v for k, v in (self.model_extra or {}).items() if k not in _ROW_KEYS}
        if self.niche is not None:
            meta["niche"] = self.niche
        return Task(self.task_id, benchmark, self.prompt(), self.judge, meta)


_ROW = TypeAdapter(TaskRow)


def read_task_file(path: str | Path) -> list[TaskRow]:
    """Every task of a JSONL or YAML task file (see the module docstring); ids unique."""
    path = Path(path)
    if not path.is_file():
        raise UserError("task file not found", path=path)
    if path.stat().st_size > FILE_MAX_BYTES:
        raise UserError(f"a task file may be at most {FILE_MAX_BYTES >> 20} MiB", path=path)
    text = read_text(path)
    entries = _yaml_entries(text, path) if path.suffix in (".yaml", ".yml") else _jsonl(text, path)
    rows: list[TaskRow] = []
    seen: dict[str, int] = {}
    for where, value in entries:
        if not isinstance(value, dict):
            raise UserError(
                "a task must be an object (task_id, task, judge)",
                path=path,
                field=_entry_field(where, "(root)") if "entry" in where else None,
                **_line(where),
            )
        try:
            row = _ROW.validate_python(value)
        except ValidationError as e:
            field, msg = describe(e)
            raise UserError(
                msg, path=path, field=_entry_field(where, field), **_line(where)
            ) from None
        if row.task_id in seen:
            raise UserError(
                f"duplicate task_id '{row.task_id}' (first at {seen[row.task_id]})",
                path=path,
                field=_entry_field(where, "task_id"),
                **_line(where),
            )
        seen[row.task_id] = where.get("line") or where.get("entry") or 0
        rows.append(row)
    if not rows:
        raise UserError("the task file holds no tasks", path=path)
    return rows


def _line(where: Mapping[str, int]) -> dict[str, int]:
    return {"line": where["line"]} if "line" in where else {}


def _entry_field(where: Mapping[str, int], field: str) -> str:
    return f"tasks.{where['entry']}.{field}" if "entry" in where else field


def _jsonl(text: str, path: Path) -> list[tuple[dict[str, int], Any]]:
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(({"line": n}, json.loads(line)))
        except (ValueError, RecursionError) as e:
            raise UserError(f"not valid JSON: {str(e)[:200]}", path=path, line=n) from None
    return out


def _yaml_entries(text: str, path: Path) -> list[tuple[dict[str, int], Any]]:
    import yaml

    from moscopt.core import yamlio

    try:
        data = yamlio.load(text)
    except (yaml.YAMLError, RecursionError) as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise UserError(
            f"not valid YAML: {getattr(e, 'problem', None) or e}", path=path, line=line
        ) from None
    if isinstance(data, dict) and set(data) == {"tasks"}:
        data = data["tasks"]
    if not isinstance(data, list):
        raise UserError(
            "a YAML task file is a list of tasks, or a mapping 'tasks: [...]'", path=path
        )
    return [({"entry": i}, v) for i, v in enumerate(data)]


def is_task_file(path: str | Path) -> bool:
    """Whether `path` names a task file rather than a benchmark spec: a .jsonl file, or a YAML
    file that is a list or holds only `tasks`."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return True
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    head = read_text(path)[:4096].lstrip()
    return head.startswith("-") or head.startswith("tasks:")


def task_file_spec(file: str | Path, held_out: str | Path | None = None) -> BenchmarkSpec:
    """The benchmark spec of `--tasks FILE [--held-out FILE]` (paths made absolute)."""
    from moscopt.core.skill_format import slugify

    file = Path(file)
    name = slugify(file.stem) or "tasks"
    return BenchmarkSpec(
        name=name,
        description=f"Tasks of {file.name}, judged by their own checks and rubrics",
        source=Source(
            tasks=TaskFileSource(
                file=str(file.resolve()),
                held_out=str(Path(held_out).resolve()) if held_out is not None else None,
            )
        ),
        grader="judge",
    )


class TaskFileBenchmark(Benchmark):
    """A `Benchmark` over task files whose tasks carry their own judges (module docstring).

    Rubric tasks need a judge model (`use_judge`); until one is set their grade is a grader
    error that says so."""

    _read: tuple[tuple[tuple[str, int, int] | None, ...], tuple[TaskRow, ...]] | None = None

    def _files(self) -> tuple[Path, Path | None]:
        source = self.spec.source.tasks
        assert source is not None
        base = self.spec_path.parent if self.spec_path is not None else Path.cwd()
        held = base / source.held_out if source.held_out else None
        return base / source.file, held

    def tasks(self, *, data: str | Path | None = None, count: int | None = None) -> list[Task]:
        if data is not None:
            raise UserError(
                f"does not apply to '{self.name}', whose tasks come from its task files: leave "
                "out --data (or data.path)",
                field="data.path",
            )
        return [r.to_task(self.name) for r in self._rows()]

    def _rows(self) -> list[TaskRow]:
        """Every task of the files, the held-out file's placed in test; an id in both refused.
        Read once while the files are unchanged (their size and time as the key): a run asks
        for its tasks, then whether any needs the judge model."""
        file, held = self._files()
        key = tuple(_signature(p) for p in (file, held) if p is not None)
        if self._read is not None and self._read[0] == key:
            return list(self._read[1])
        rows = self._read_rows(file, held)
        self._read = (key, tuple(rows))
        return rows

    @staticmethod
    def _read_rows(file: Path, held: Path | None) -> list[TaskRow]:
        rows = read_task_file(file)
        if held is not None:
            ids = {r.task_id for r in rows}
            for row in read_task_file(held):
                if row.task_id in ids:
                    raise UserError(
                        f"task_id '{row.task_id}' is in both task files", path=held, field="task_id"
                    )
                rows.append(row.model_copy(update={"split": "test"}))
        return rows

    def load(
        self,
        *,
        data: str | Path | None = None,
        limit: int | None = None,
        sizes: Mapping[str, int] | None = None,
        seed: int | None = None,
    ) -> Splits:
        """train/val from the training file (its `split` keys first), test from the held-out
        file (and any `split: test` row); `limit`: the first N of each split."""
        placed: dict[str, list[Task]] = {name: [] for name in SPLIT_NAMES}
        unplaced: list[Task] = []
        for row in self._rows():
            task = row.to_task(self.name)
            (placed[row.split] if row.split else unplaced).append(task)
        ordered = sorted(unplaced, key=lambda t: t.id)
        random.Random(self.spec.splits.seed if seed is None else seed).shuffle(ordered)
        n_val = 0
        if len(ordered) > 1 and not placed["val"]:  # at least one task each way
            n_val = max(1, min(round(len(ordered) * VAL_SHARE), len(ordered) - 1))
        placed["val"] += ordered[:n_val]
        placed["train"] += ordered[n_val:]
        parts = {k: (v[:limit] if limit is not None else v) for k, v in placed.items()}
        return Splits(train=parts["train"], val=parts["val"], test=parts["test"])

    def load_every(self, *, data: str | Path | None = None, limit: int | None = None) -> list[Task]:
        every = self.tasks(data=data)
        return every[:limit] if limit is not None else every

    def needs_judge_model(self, tasks: list[Task] | None = None) -> bool:
        """Whether any task (of `tasks`, else of the files) is judged by a rubric."""
        chosen = tasks if tasks is not None else self.tasks()
        return any(isinstance(t.gold, RubricJudge) for t in chosen)

    async def agrade(self, task: Task, response: str) -> Grade:
        """A rubric by the judge model (`use_judge`), anything else as `grade` does."""
        if not isinstance(task.gold, RubricJudge):
            return await super().agrade(task, response)
        if self.judge_lm is None:
            return Grade.failed("no judge model is set for this rubric")
        from moscopt.benchmarks.rubric import judge_rubric

        return await judge_rubric(self.judge_lm, task.gold, response)

    def proposed_answer(self, reply: str) -> str | None:
        """None unless the benchmark is all answer keys: a reply is judged as a whole."""
        return None


def _signature(path: Path) -> tuple[str, int, int] | None:
    """A file's identity for `_rows`' cache: path, size, modification time (None: unreadable,
    so the read itself reports it)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (str(path), info.st_size, info.st_mtime_ns)
