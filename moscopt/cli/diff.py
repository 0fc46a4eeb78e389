"""`moscopt diff`: a unified diff of one skill's SKILL.md between two steps of a run."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli.app import app
from moscopt.cli.log import STEP_HELP


@app.command(
    "diff",
    help=(
        "Unified diff of a skill's SKILL.md between two steps (default: from the start of the "
        f"run to now). {STEP_HELP} The pool at step S is the initial pool with every accepted "
        "edit, evolution cycle and gate restoration logged at steps <= S applied; rejected edits "
        "never appear."
    ),
)
def diff_cmd(
    skill: str = typer.Argument(..., metavar="SKILL", help="A skill name, or 'gate'."),
    from_step: int | None = typer.Option(
        None, "--from", help="Step whose pool is the old side (default: the initial pool)."
    ),
    to_step: int | None = typer.Option(
        None, "--to", help="Step whose pool is the new side (default: the current pool)."
    ),
    run: Path | None = typer.Option(
        None, "--run", help="A run directory (default: the project's latest run)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    from moscopt.run.history import History, diff_json, open_run, skill_diff

    history = History.load(open_run(run))
    if json_out:
        import json

        typer.echo(json.dumps(diff_json(history, skill, from_step, to_step), indent=2))
        return
    result = skill_diff(history, skill, from_step, to_step)
    from moscopt.run.fsio import strip_controls

    # SKILL.md text a model wrote (an old run's may hold escape sequences): never shown raw
    for note in (*history.warnings, *result.notes):
        typer.echo(f"moscopt: {strip_controls(note)}", err=True)
    if result.text:
        typer.echo(strip_controls(result.text), nl=False)
