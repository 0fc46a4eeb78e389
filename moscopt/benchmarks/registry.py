"""The benchmark registry: the spec files shipped with moscopt, or a user's own spec file."""

from __future__ import annotations

from pathlib import Path

from moscopt.benchmarks.benchmark import Benchmark
from moscopt.benchmarks.spec import load_spec
from moscopt.core.resources import benchmark_specs_dir
from moscopt.errors import UserError


def _spec_files(directory: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(directory.glob("*.yaml"))}


def load_benchmark_file(path: str | Path) -> Benchmark:
    """The benchmark of a spec file, or of a task file (`moscopt.benchmarks.taskfile`)."""
    from moscopt.benchmarks.taskfile import TaskFileBenchmark, is_task_file, task_file_spec

    path = Path(path)
    if is_task_file(path):
        return TaskFileBenchmark(task_file_spec(path))
    spec = load_spec(path)
    if spec.source.tasks is not None:
        return TaskFileBenchmark(spec, spec_path=path)
    return Benchmark(spec, spec_path=path)


def list_benchmarks(directory: Path | None = None) -> list[Benchmark]:
    """The built-in benchmarks (or those of `directory`), sorted by name."""
    files = _spec_files(directory or benchmark_specs_dir())
    out = []
    for stem, path in files.items():
        bench = load_benchmark_file(path)
        if bench.name != stem:
            raise UserError(
                f"spec name '{bench.name}' differs from its file name", path=path, field="name"
            )
        out.append(bench)
    return sorted(out, key=lambda b: b.name)


def get_benchmark(name: str, directory: Path | None = None) -> Benchmark:
    """A built-in benchmark by name, or a spec file when `name` is a path to a .yaml file.

    An unknown name is a `UserError` listing the known ones.
    """
    if name.endswith((".yaml", ".yml", ".jsonl")) or Path(name).is_file():
        return load_benchmark_file(name)
    files = _spec_files(directory or benchmark_specs_dir())
    if name not in files:
        known = ", ".join(files) or "(none)"
        raise UserError(f"unknown benchmark '{name}'; known benchmarks: {known}", field="benchmark")
    bench = load_benchmark_file(files[name])
    if bench.name != name:
        raise UserError(
            f"spec name '{bench.name}' differs from its file name", path=files[name], field="name"
        )
    return bench
