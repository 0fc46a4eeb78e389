"""What an evaluation evaluates, chosen once for `moscopt eval` and the MCP server's `evaluate`:
the config (the run's, else the project's), the benchmark (a task file's path stands for its
benchmark), the split and the deployment mode."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.errors import UserError

if TYPE_CHECKING:
    from moscopt.config import Config


@dataclass(frozen=True)
class EvalChoice:
    config: Config
    benchmark: str | None
    split: str
    mode: str


def choose_eval(
    *,
    flags: dict[str, Any],
    config_path: Path | None,
    run: Path | None,
    skills: Path | None,
    export: Path | None,
    benchmark: str | None,
    tasks: Path | None,
    split: str | None,
    mode: str | None,
) -> EvalChoice:
    """A task file (`tasks`) instead of a benchmark is evaluated whole unless `split` says;
    without `mode`, an export's own mode, else `mixture` for a run or a skills folder and
    `none` (no skills) otherwise."""
    if tasks is not None:
        if benchmark is not None:
            raise UserError("give either --benchmark or --tasks, not both", field="tasks")
        benchmark = str(tasks.resolve())
    if run is not None:
        from moscopt.config import load_config
        from moscopt.run.rundir import RunDir

        config = load_config(RunDir.open(run).config_path, flags)
    else:
        from moscopt.app.project import open_project

        config = open_project(config_path, flags).config
    if mode is None and export is not None:
        from moscopt.exports import open_export

        mode = open_export(export).mode
    chosen = mode or ("mixture" if (run is not None or skills is not None) else "none")
    return EvalChoice(config, benchmark, split or ("all" if tasks is not None else "test"), chosen)
