"""`moscopt compare`: the full method against another optimizer at the same budget."""

from __future__ import annotations

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app
from moscopt.cli.study import StudyArgs, run_study_command, study_options
from moscopt.core import choices as c


@app.command("compare")
@study_options
def compare_cmd(
    opts: o.Shared,
    shape: o.RunShape,
    args: StudyArgs,
    other: c.CompareWith = typer.Option(
        ...,
        "--with",
        help="gepa (GEPA's optimize on the pool's skills; pip install 'moscopt[gepa]'), "
        "skillopt-mode (single-skill optimization), or none (only the no-skill baseline).",
    ),
) -> None:
    """Compare MOSCOPT with another optimizer at the same call budget over seeds (GEPA gets
    the calls the full method made, at most the budget); rerun to continue."""
    from moscopt.study.configurations import compare_names

    run_study_command(opts, shape, args, kind=f"compare-{other}", names=compare_names(other))
