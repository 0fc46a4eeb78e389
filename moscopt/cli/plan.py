"""`moscopt plan` (and `moscopt train --dry-run`): a run's expected calls, tokens, cost and
time per phase, and the calls it may not exceed, before it is started."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app
from moscopt.core import choices as c

if TYPE_CHECKING:
    from moscopt.config import Config


def show_plan(
    opts: o.Shared,
    flags: dict[str, Any],
    *,
    benchmark: str | None,
    pilot: bool,
    propose: bool = True,
    latency: float | None = None,
    run: Path | None = None,
) -> None:
    """Plan `moscopt train` with these options and print the plan (a table, or JSON); with
    `run`, what resuming that run may cost: its frozen config, current skills and benchmark,
    from the epoch it is in."""
    import json

    from moscopt.planning import make_plan
    from moscopt.planning.render import render_table

    notes: list[str] = []
    if run is None:
        from moscopt.app.project import open_project

        project = open_project(opts.config, flags)
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
    )
    if opts.json_out:
        typer.echo(json.dumps({**plan.to_json(), "notes": notes}, indent=2))
        return
    for note in notes:
        typer.echo(f"note: {note}")
    typer.echo(render_table(plan))


def _resumed(
    path: Path, flags: dict[str, Any], notes: list[str]
) -> tuple[Config, Path, Path, int, str | None]:
    """(config, skills, project root, epochs done, benchmark) of the run at `path`."""
    from moscopt.app.runner import resumed_config
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


@app.command("plan")
@o.shared(*o.MODEL_OPTIONS, "json_out")
@o.run_shape
def plan_cmd(
    opts: o.Shared,
    shape: o.RunShape,
    acceptance: c.Acceptance | None = typer.Option(None, "--acceptance", help="paired or strict."),
    no_evolution: bool = typer.Option(False, "--no-evolution", help="No collective evolution."),
    no_pilot: bool = typer.Option(
        False, "--no-pilot", help="Count from the config alone: no LLM call (the worst case)."
    ),
    no_propose: bool = typer.Option(
        False, "--no-propose", help="Pilot the minibatch's rollouts only, not its proposals."
    ),
    latency: float | None = typer.Option(
        None, "--latency", min=0.0, help="Seconds per call to assume where none was measured."
    ),
) -> None:
    """Expected calls, tokens, cost and time per phase of `moscopt train`, and the calls it may
    not exceed; from the config, the splits and one pilot minibatch (real calls, cached)."""
    flags = opts.overrides(
        **{
            **shape.config_keys(),
            "optimizer.acceptance": acceptance,
            "evolution.enabled": False if no_evolution else None,
        }
    )
    show_plan(
        opts, flags, benchmark=shape.benchmark, pilot=not no_pilot, propose=not no_propose,
        latency=latency,
    )  # fmt: skip
