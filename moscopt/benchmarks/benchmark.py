"""`Benchmark`: a loaded spec that produces split tasks and grades responses."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.benchmarks.spec import BenchmarkSpec
from moscopt.benchmarks.tasks import Grade, Splits, Task

if TYPE_CHECKING:
    from moscopt.benchmarks.graders import AgreeFn, GradeFn
    from moscopt.config import DataConfig
    from moscopt.lm.base import LM

log = logging.getLogger(__name__)


class Benchmark:
    """One benchmark: where its tasks come from, how they are split and graded.

    `load` reads or generates the tasks (raising `UserError` on unusable input); `grade`
    never raises: a grader failure comes back as a `Grade` with `error` set and reward 0.
    """

    def __init__(self, spec: BenchmarkSpec, *, spec_path: Path | None = None) -> None:
        self.spec = spec
        self.spec_path = spec_path
        self.name = spec.name
        self.description = spec.description
        self.answer_instructions = spec.answer_instructions
        self.tools: list[str] = list(spec.tools)
        self._grader: GradeFn | None = None
        self._agree: AgreeFn | None = None
        # may model-written code run where nothing isolates reads (`agent.allow_unsandboxed`)
        self.allow_unsandboxed = False
        self.judge_lm: LM | None = None  # scores rubric criteria (`use_judge`)

    def __repr__(self) -> str:
        return f"Benchmark({self.name!r})"

    # --- data ------------------------------------------------------------------------------

    def tasks(self, *, data: str | Path | None = None, count: int | None = None) -> list[Task]:
        """Every task of the source, unsplit (`count` sizes a generated benchmark, which takes
        no `data`: a data file given to it is a `UserError`, never silently ignored)."""
        if self.spec.source.generator == "offline":
            if data is not None:
                from moscopt.errors import UserError

                raise UserError(
                    f"does not apply to the benchmark '{self.name}', which generates its tasks: "
                    "leave out --data (or data.path), or choose a benchmark that reads a file",
                    field="data.path",
                )
            return self._offline_tasks(count or sum(self.spec.splits.sizes().values()))
        from moscopt.benchmarks.loaders import load_rows
        from moscopt.benchmarks.records import build_task

        return [build_task(self.spec, row) for row in load_rows(self.spec, data)]

    def load(
        self,
        *,
        data: str | Path | None = None,
        limit: int | None = None,
        sizes: Mapping[str, int] | None = None,
        seed: int | None = None,
    ) -> Splits:
        """Train/val/test tasks: spec sizes (overridden by `sizes`), first `limit` of each.

        Data: `data` (a file or a folder laid out like `shared/data`), else
        `$MOSCOPT_DATA_DIR`, else the Hugging Face hub at the spec's pinned revision. A
        generated benchmark ignores `$MOSCOPT_DATA_DIR` and refuses `data`.
        """
        from moscopt.benchmarks.splits import split_tasks

        if self.spec.grader != "custom":  # a missing extra (math-verify) before any data is read
            self._ensure_grader()
        wanted = {**self.spec.splits.sizes(), **(sizes or {})}
        split_seed = self.spec.splits.seed if seed is None else seed
        source = str(data) if data is not None else self.name
        if self.spec.source.generator != "offline":  # read as a stream (moscopt.benchmarks.records)
            from moscopt.benchmarks.records import load_splits

            splits = load_splits(self.spec, data, wanted, split_seed, source=source, limit=limit)
        else:
            tasks = self.tasks(data=data, count=sum(wanted.values()))
            splits = split_tasks(tasks, wanted, split_seed, source=source, limit=limit)
        self._ensure_grader()  # a broken custom grader is reported before any run
        if splits.note:  # a small data file: say so, never shrink the splits silently
            log.warning("moscopt: %s: %s", self.name, splits.note)
        return splits

    def load_every(self, *, data: str | Path | None = None, limit: int | None = None) -> list[Task]:
        """Every task of the data, not only the splits' (`eval --split all`): every row (a
        generated benchmark: the spec's split sizes summed), in the splits' seeded order, the
        first `limit`. Data is found as by `load`."""
        from moscopt.benchmarks.splits import split_tasks

        if self.spec.grader != "custom":  # a missing extra before any data is read
            self._ensure_grader()
        tasks = self.tasks(data=data, count=sum(self.spec.splits.sizes().values()))
        source = str(data) if data is not None else self.name
        sizes = {"test": len(tasks)}  # one split holding every task (duplicate ids refused)
        chosen = split_tasks(tasks, sizes, self.spec.splits.seed, source=source, limit=limit).test
        self._ensure_grader()  # a broken custom grader is reported before any run
        return chosen

    def runs_code(self) -> bool:
        """Whether grading runs model-written code (in the sandbox)."""
        return self.spec.grader == "code"

    def load_config(self, config: DataConfig) -> Splits:
        """`load` with the `data` section of a moscopt config (path, limit, split sizes, seed)."""
        sizes = {str(k): v for k, v in config.split_sizes.items()} if config.split_sizes else None
        return self.load(data=config.path, limit=config.limit, sizes=sizes, seed=config.split_seed)

    def _offline_tasks(self, count: int) -> list[Task]:
        from moscopt.benchmarks.offline import generate_items

        tasks = []
        for item in generate_items(count, self.spec.splits.seed):
            prompt = self.spec.prompt_template.format(
                question=item.question,
                answer_instructions=self.answer_instructions,
                family=item.family,
                choices="",
                tests="",
            ).strip()
            tasks.append(Task(item.id, self.name, prompt, item.answer, {"family": item.family}))
        return tasks

    # --- grading ---------------------------------------------------------------------------

    def _ensure_grader(self) -> GradeFn:
        if self._grader is None:
            from moscopt.benchmarks.graders import make_grader

            self._grader = make_grader(self.spec, allow_unsandboxed=self.allow_unsandboxed)
        return self._grader

    def grade(self, task: Task, response: str) -> Grade:
        """Extract the answer from `response` and score it; never raises."""
        try:
            grade = self._ensure_grader()(task, response if isinstance(response, str) else "")
            if not isinstance(grade, Grade):
                return Grade.failed(f"grader returned {type(grade).__name__}, not a Grade")
            return grade
        except Exception as e:  # a grader bug must cost one task, not the run
            message = str(e).splitlines()[0] if str(e) else ""
            return Grade.failed(f"{type(e).__name__}: {message}"[:300])

    async def agrade(self, task: Task, response: str) -> Grade:
        """`grade` as an agent awaits it: string matching on the event loop (a hop to a worker
        thread would cost more), anything slower (math-verify, unit tests, rule checks, custom
        code) in a worker thread; a task-file benchmark scores rubrics with its judge model."""
        from moscopt.benchmarks.graders import INLINE_GRADERS

        if self.spec.grader in INLINE_GRADERS:
            return self.grade(task, response)
        return await asyncio.to_thread(self.grade, task, response)

    def needs_judge_model(self, tasks: list[Task] | None = None) -> bool:
        """Whether grading `tasks` (else every task) needs a judge model (`use_judge`)."""
        return False

    def use_judge(self, lm: LM | None) -> None:
        """The model that scores rubric criteria (None: none)."""
        self.judge_lm = lm

    def proposed_answer(self, reply: str) -> str | None:
        """The answer a reply (any step's, with or without a tool call) states, as this
        benchmark's extractor reads it: `moscopt.benchmarks.extract.stated_answer`, narrowed to
        a letter (choice) or a number (numeric). None when it states none, or where the grader
        compares no answer (code, IFEval)."""
        from moscopt.benchmarks.extract import extract_choice, extract_number, stated_answer

        if self.spec.grader in ("code", "ifeval"):
            return None
        stated = stated_answer(reply)
        if stated is None:
            return None
        if self.spec.grader == "choice":
            return extract_choice(f"FINAL ANSWER: {stated}", self.spec.choice_letters)
        if self.spec.grader == "numeric":
            return extract_number(f"FINAL ANSWER: {stated}")
        return stated

    def same_answer(self, a: str, b: str) -> bool:
        """Whether the grader counts two proposed answers as the same answer (never raises: a
        comparison that fails is a disagreement)."""
        if self._agree is None:
            from moscopt.benchmarks.graders import make_agreement

            self._agree = make_agreement(self.spec) or (lambda x, y: x == y)
        try:
            return bool(self._agree(a, b))
        except Exception:  # math-verify's timeout, a parser bug: not the same
            return False

    # --- description -----------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Where the data comes from and how it is used (for `moscopt benchmarks`)."""
        src = self.spec.source
        return {
            "name": self.name,
            "description": self.description,
            "grader": self.spec.grader,
            "tools": self.tools,
            "splits": self.spec.splits.sizes(),
            "seed": self.spec.splits.seed,
            "local_files": list(src.local.files) if src.local else [],
            "hub": [
                {
                    "path": h.path,
                    "configs": len(h.configs),
                    "split": h.split,
                    "revision": h.revision,
                }
                for h in src.hub
            ],
            "generated": src.generator is not None,
        }
