"""The benchmark a command works on, and its splits: a built-in or spec-file benchmark by name, or
the task files of `--tasks FILE [--held-out FILE]`; how a run refers to it.

Kept apart from `moscopt.app.assembly` (agents, LMs, routers): a command that only reads a
benchmark (the report's niches table) does not load the agent's stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from moscopt.config import Config
from moscopt.errors import UserError

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.benchmarks.spec import BenchmarkSpec

TASKS_SPEC = "benchmark.yaml"  # a run on task files: the spec that names them (its benchmark)


def named_benchmark(config: Config, name: str | None) -> Benchmark:
    """The benchmark `name` (else the config's), set up as `config` says, its data not read."""
    from moscopt.benchmarks import get_benchmark

    name = name or config.benchmark
    if not name:
        raise UserError("no benchmark: pass --benchmark NAME (see `moscopt benchmarks`)")
    bench = get_benchmark(name)
    bench.allow_unsandboxed = config.agent.allow_unsandboxed
    from moscopt.app.hub import prepare_hub

    prepare_hub(bool(bench.spec.source.hub), config.data.path)  # fail fast offline, quietly
    return bench


def resolve_benchmark(
    config: Config, name: str | None, *, need: Sequence[str] = ("train", "val")
) -> tuple[Benchmark, Splits]:
    """The benchmark and its splits (those of `need` must not be empty: training needs train
    and val; an evaluation only the split it evaluates)."""
    bench = named_benchmark(config, name)
    return bench, checked_splits(bench, config, need)


def checked_splits(bench: Benchmark, config: Config, need: Sequence[str]) -> Splits:
    """`bench`'s splits under `config.data`; a `UserError` naming the first of `need` that is
    empty, and what would fill it."""
    splits = bench.load_config(config.data)
    for split in need:
        if not splits[split]:
            hint = "more data, or other split sizes (data.split_sizes)"
            if bench.spec.source.tasks is not None:
                hint = {
                    "test": "pass --held-out FILE, or give tasks 'split': 'test'",
                    "val": "add tasks to the task file (a third of them validate)",
                    "train": "add tasks to the task file",
                }.get(split, hint)
            raise UserError(
                f"the {split} split of '{bench.name}' is empty: {hint}",
                field="data" if bench.spec.source.tasks is None else "tasks",
            )
    return splits


def training_benchmark(
    config: Config, benchmark: str | None, tasks: Path | None, held_out: Path | None
) -> tuple[Benchmark, Splits, BenchmarkSpec | None]:
    """What a training run (or its plan) trains on: the benchmark `benchmark` (else the
    config's), or the task file `tasks` with its `held_out` file (then also its spec, which the
    run writes); its splits, train and val not empty."""
    if tasks is None:
        if held_out is not None:
            raise UserError("--held-out goes with --tasks FILE", field="held_out")
        bench, splits = resolve_benchmark(config, benchmark)
        return bench, splits, None
    if benchmark is not None:
        raise UserError("give either --benchmark or --tasks, not both", field="tasks")
    bench, spec = task_file_benchmark(tasks, held_out)
    return bench, checked_splits(bench, config, ("train", "val")), spec


def task_file_benchmark(tasks: Path, held_out: Path | None) -> tuple[Benchmark, BenchmarkSpec]:
    """The benchmark of `--tasks FILE [--held-out FILE]` and its spec (a run writes it in its
    folder, `TASKS_SPEC`, and refers to it, so that it resumes)."""
    from moscopt.benchmarks.taskfile import TaskFileBenchmark, task_file_spec

    spec = task_file_spec(tasks, held_out)
    return TaskFileBenchmark(spec), spec


def benchmark_ref(bench: Benchmark) -> str:
    """How a run refers to its benchmark: the name of a built-in one, else its spec's path (a
    task file named by itself: its path)."""
    from moscopt.core.resources import benchmark_specs_dir

    path = bench.spec_path
    tasks = bench.spec.source.tasks
    if path is None and tasks is not None and tasks.held_out is None:
        return str(Path(tasks.file).resolve())
    if path is None or path.resolve().parent == benchmark_specs_dir().resolve():
        return bench.name
    return str(path.resolve())
