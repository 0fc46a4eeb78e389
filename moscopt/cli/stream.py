"""`moscopt stream`: learn on a task stream, each task answered once, in order (resumable)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app


@app.command("stream")
# no --batch: a stream answers each task before the next arrives, so nothing can wait
@o.shared(*(n for n in o.MODEL_OPTIONS if n != "batch"), "json_out")
def stream_cmd(
    opts: o.Shared,
    benchmark: str | None = typer.Option(
        None, "--benchmark", "-b", help="Benchmark name or spec file: its tasks are the stream."
    ),
    tasks: Path | None = typer.Option(
        None,
        "--tasks",
        help="A JSONL file of tasks (question, answer; optional id, niche) with --grader, or a "
        "task file whose tasks carry their own judges (task_id, task, judge).",
    ),
    grader: str | None = typer.Option(
        None, "--grader", help="With --tasks: exact, numeric, math, choice, or module:function."
    ),
    run: Path | None = typer.Option(
        None, "--run", help="Run directory (default runs/stream-<time>)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue the stream in --run."),
    n: int | None = typer.Option(None, "--n", help="Pool size N."),
    k: int | None = typer.Option(None, "--k", help="Skills activated per task K."),
    window: int = typer.Option(8, "--window", min=1, help="Past tasks replayed to decide an edit."),
    order: str = typer.Option("given", "--order", help="given (the data's order) or shuffled."),
    no_transfer: bool = typer.Option(False, "--no-transfer", help="No CODREAM transfer."),
    lifecycle: bool = typer.Option(
        False, "--lifecycle", help="Fork, merge, prune and seed skills as the stream goes."
    ),
    no_baselines: bool = typer.Option(
        False, "--no-baselines", help="Skip the no-skill and frozen-pool baselines."
    ),
) -> None:
    """Learn on a stream of tasks: each answered once by the current pool, whose credit,
    niches, insight transfer and lifecycle update online (no validation split)."""
    import json

    from moscopt.app import stream as stream_run
    from moscopt.app.project import open_project
    from moscopt.errors import UserError
    from moscopt.lm.errors import LMFatalError
    from moscopt.run.rundir import new_run_path

    if order not in ("given", "shuffled"):
        raise UserError("--order must be given or shuffled", field="order")
    if grader is not None and tasks is None:  # a flag that does not apply is never ignored
        raise UserError("--grader grades a --tasks file; a --benchmark has its own grader")
    flags = opts.overrides(
        **{
            "pool.n": n,
            "pool.k": k,
            "niches.enabled": True,
            "niches.transfer": not no_transfer,
            "evolution.policy": "lifecycle" if lifecycle else None,
        }
    )
    settings = stream_run.StreamSettings(window=window, order=order, baselines=not no_baselines)
    progress = _progress if not opts.json_out else None
    where = f" --run {run}" if run else ""
    try:
        if resume:
            if run is None:
                raise UserError("--resume needs --run DIR", field="run")
            outcome = stream_run.resume(run_path=run, progress=progress)
        else:
            project = open_project(opts.config, flags)
            path = run or new_run_path(project.root / project.config.runs_dir, "stream")
            where = f" --run {path}"
            outcome = stream_run.start(
                config=project.config,
                skills_dir=project.skills_dir,
                benchmark=benchmark,
                tasks_file=tasks,
                grader=grader,
                run_path=path,
                settings=settings,
                progress=progress,
                notes=lambda m: print(f"note: {m}", file=sys.stderr),
            )
    except LMFatalError as e:
        print(
            f"moscopt: stopped: {e}\ncontinue with: moscopt stream --resume{where}", file=sys.stderr
        )
        raise typer.Exit(1) from None
    summary: dict[str, Any] = {
        "run": str(outcome.run.path),
        "tasks": outcome.tasks,
        "accuracy": outcome.accuracy,
        "baselines": outcome.baselines,
        "by_niche": outcome.by_niche,
        "resumed": outcome.resumed,
    }
    if opts.json_out:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"run: {summary['run']}")
    typer.echo(f"stream accuracy over {outcome.tasks} tasks: {outcome.accuracy:.3f}")
    for name, value in outcome.baselines.items():
        label = {"none": "no skill", "frozen": "frozen starting pool"}.get(name, name)
        typer.echo(f"  baseline {label}: {value:.3f}")
    for niche, value in outcome.by_niche.items():
        typer.echo(f"  niche {niche}: {value:.3f}")
    typer.echo(f"skills: {outcome.run.skills_dir}  (moscopt export --run {summary['run']})")


def _progress(e: dict[str, Any]) -> None:
    if e.get("event") == "step":
        print(f"chunk {e['step']} done | {e['calls']} calls, ${e['cost']:.4f}", file=sys.stderr)
