"""`moscopt plan` (and `moscopt train --dry-run`): a run's expected calls, tokens, cost and
time per phase, and the calls it may not exceed, before it is started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app


def show_plan(
    opts: o.Shared,
    flags: dict[str, Any],
    *,
    benchmark: str | None,
    pilot: bool,
    propose: bool = True,
    latency: float | None = None,
    run: Path | None = None,
    tasks: Path | None = None,
    held_out: Path | None = None,
) -> None:
    """Plan `moscopt train` with these options and print the plan (a table, or JSON); with
    `run`, what resuming that run may cost (`moscopt.app.plans.plan_run`)."""
    import json

    from moscopt.app.plans import plan_run
    from moscopt.planning.render import render_table

    plan, notes = plan_run(
        opts.config, flags, benchmark=benchmark, pilot=pilot, propose=propose, latency=latency,
        run=run, tasks=tasks, held_out=held_out,
    )  # fmt: skip
    if opts.json_out:
        typer.echo(json.dumps({**plan.to_json(), "notes": notes}, indent=2))
        return
    for note in notes:
        typer.echo(f"note: {note}")
    typer.echo(render_table(plan))


@app.command("plan")
@o.shared(*o.MODEL_OPTIONS, "json_out")
@o.run_shape
def plan_cmd(
    opts: o.Shared,
    shape: o.RunShape,
    acceptance: str | None = typer.Option(None, "--acceptance", help="paired or strict."),
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
    shape.check_tasks()
    show_plan(
        opts, flags, benchmark=shape.benchmark, pilot=not no_pilot, propose=not no_propose,
        latency=latency, tasks=shape.tasks, held_out=shape.held_out,
    )  # fmt: skip
