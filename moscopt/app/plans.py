"""What `moscopt plan` (and `moscopt train --dry-run`) computes: the plan of a new run from the
project's config, or of what is left of a stopped run (its frozen config, current skills and
benchmark). The command line prints it; the MCP server returns it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moscopt.config import Config
    from moscopt.planning import Plan


def plan_run(
    config_path: Path | None,
    flags: dict[str, Any],
    *,
    benchmark: str | None,
    pilot: bool,
    propose: bool = True,
    latency: float | None = None,
    run: Path | None = None,
    tasks: Path | None = None,
    held_out: Path | None = None,
) -> tuple[Plan, list[str]]:
    """The plan of `moscopt train` with these flags, and its notes; with `run`, what resuming
    that run may cost, from the epoch it is in; `tasks`, `held_out`: a task file instead of a
    benchmark (a run on task files resumes with the spec it keeps)."""
    from moscopt.planning import make_plan

    notes: list[str] = []
    if run is None:
        from moscopt.app.project import open_project

        project = open_project(config_path, flags)
        config, skills_dir, root, start = project.config, project.skills_dir, project.root, 0
    else:
        config, skills_dir, root, start, benchmark = _resumed(run, flags, notes)
    plan = make_plan(
        config,
        skills_dir=skills_dir,
        benchmark=benchmark,
        project_root=root,
        pilot=pilot,
        propose=propose,
        latency=latency,
        notes=notes,
        start_epoch=start,
        tasks=tasks if run is None else None,
        held_out=held_out if run is None else None,
    )
    return plan, notes


def _resumed(
    path: Path, flags: dict[str, Any], notes: list[str]
) -> tuple[Config, Path, Path, int, str | None]:
    """(config, skills, project root, epochs done, benchmark) of the run at `path`."""
    from moscopt.app.resumption import resumed_config
    from moscopt.errors import UserError
    from moscopt.lm.cache import project_root
    from moscopt.run.rundir import RunDir

    run = RunDir.open(path)
    config = resumed_config(run, run.load_config(), flags)
    state = run.load_state()
    if state.status == "done":
        raise UserError("this run is already finished: nothing to plan", path=run.path)
    epochs = config.training.epochs
    notes.append(
        f"resuming {run.path}: {state.epoch} of {epochs} epochs done, step {state.step}; "
        "the epoch in progress is counted whole (an upper bound)"
    )
    root = project_root(run.path) or run.path.parent
    return config, run.skills_dir, root, min(state.epoch, epochs), state.benchmark
