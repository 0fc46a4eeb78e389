"""`moscopt compare`: the full method against another optimizer at the same budget."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli import options as o
from moscopt.cli.ablate import STUDY_OPTIONS, run_study_command
from moscopt.cli.app import app


@app.command("compare")
@o.shared(*STUDY_OPTIONS, "json_out")
def compare_cmd(
    opts: o.Shared,
    other: str = typer.Option(
        ...,
        "--with",
        help="gepa (GEPA's optimize on the pool's skills; pip install 'moscopt[gepa]'), "
        "skillopt-mode (single-skill optimization), or none (only the no-skill baseline).",
    ),
    benchmark: str | None = typer.Option(
        None, "--benchmark", "-b", help="Benchmark name or spec file."
    ),
    budget_calls: int = typer.Option(
        ..., "--budget-calls", help="Training budget in LLM calls, per side and seed."
    ),
    seeds: str = typer.Option(
        "3", "--seeds", help="How many seeds (counting up from --seed), or a list: 1,2,3."
    ),
    study: Path | None = typer.Option(
        None, "--study", help="Study folder (default studies/compare-<with>-<benchmark>)."
    ),
    repeats: str = typer.Option("auto", "--repeats", help="Test repeats: N or auto (3..50)."),
    n: int | None = typer.Option(None, "--n", help="Pool size N."),
    k: int | None = typer.Option(None, "--k", help="Skills activated per task K."),
    epochs: int | None = typer.Option(None, "--epochs", help="Epochs."),
    steps_per_epoch: int | None = typer.Option(
        None, "--steps-per-epoch", help="Cap on skill-editing minibatches per epoch."
    ),
) -> None:
    """Compare MOSCOPT with another optimizer at the same call budget over seeds (GEPA gets
    the calls the full method made, at most the budget); rerun to continue."""
    from moscopt.study.configurations import compare_names

    run_study_command(
        opts,
        kind=f"compare-{other}",
        names=compare_names(other),
        benchmark=benchmark,
        budget_calls=budget_calls,
        seeds=seeds,
        study=study,
        repeats=repeats,
        extra={"pool.n": n, "pool.k": k, "training.epochs": epochs,
               "training.max_steps_per_epoch": steps_per_epoch},
    )  # fmt: skip
