"""`moscopt ablate`: the full method, the paper's ablations and deployment modes, at one budget."""

from __future__ import annotations

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app
from moscopt.cli.study import StudyArgs, run_study_command, study_options


@app.command("ablate")
@study_options
def ablate_cmd(
    opts: o.Shared,
    shape: o.RunShape,
    args: StudyArgs,
    only: str | None = typer.Option(
        None, "--only", help="Comma-separated configurations (full is always run)."
    ),
) -> None:
    """Run the full method and each ablation (Tables 2 and 3) at one call budget over seeds;
    rerun the same command to continue a study that stopped."""
    from moscopt.study.configurations import ablate_names

    chosen = [s.strip() for s in only.split(",") if s.strip()] if only else None
    run_study_command(opts, shape, args, kind="ablate", names=ablate_names(chosen))
