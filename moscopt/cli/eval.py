"""`moscopt eval`: score the no-skill baseline or a pool on a benchmark split."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app
from moscopt.core import choices as c


@app.command("eval")
@o.shared(*(n for n in o.MODEL_OPTIONS if n != "optimizer_model"), "json_out")
def eval_cmd(
    opts: o.Shared,
    benchmark: str | None = typer.Option(
        None, "--benchmark", "-b", help="Benchmark name or spec file."
    ),
    tasks: Path | None = typer.Option(
        None,
        "--tasks",
        help="A task file (JSONL or YAML) whose tasks carry their own judges, instead of "
        "--benchmark; every task of it is evaluated unless --split says otherwise.",
    ),
    split: c.Split | None = typer.Option(
        None, "--split", help="train, val, test or all (default: test; all with --tasks)."
    ),
    mode: c.EvalMode | None = typer.Option(
        None,
        "--mode",
        help="none, mixture, static, topq, distilled or router (default: the export's mode with "
        "--export, mixture with --run/--skills, else none). static, topq, distilled and router use "
        "--export or the run's exports/<mode>/.",
    ),
    run: Path | None = typer.Option(
        None, "--run", help="A run directory: its pool, gate, config and cache."
    ),
    skills: Path | None = typer.Option(
        None, "--skills", help="A skills folder to evaluate as a mixture."
    ),
    export: Path | None = typer.Option(
        None, "--export", help="An export folder (from `moscopt export`) to evaluate."
    ),
    repeats: str = typer.Option(
        "1", "--repeats", help="Repeat N times, or 'auto' (3..50 until the CI is narrow)."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Per-task results (JSONL). Default: eval-<benchmark>-<split>-<mode>.jsonl in the "
        "run's exports/ (with --run) or here, or the next free ...-2.jsonl, -3, ...: never an "
        "earlier evaluation's file.",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
) -> None:
    """Evaluate the no-skill baseline or a skill pool on a benchmark split."""
    import json

    from moscopt.app import runner
    from moscopt.app.eval_choice import choose_eval

    flags, json_out = opts.overrides(), opts.json_out
    choice = choose_eval(
        flags=flags, config_path=opts.config, run=run, skills=skills, export=export,
        benchmark=benchmark, tasks=tasks, split=split, mode=mode,
    )  # fmt: skip
    cfg = choice.config
    bar = _Bar(quiet=json_out)
    try:
        outcome = runner.evaluate(
            config=cfg,
            benchmark=choice.benchmark,
            split=choice.split,
            mode=choice.mode,
            run_path=run,
            skills_dir=skills,
            repeats=repeats,
            out=out,
            on_rollout=bar.advance,
            on_start=bar.start,
            export_path=export,
            force=force,
        )
    except KeyboardInterrupt:
        bar.close()
        print("moscopt: interrupted; nothing was summarized (rerun to evaluate)", file=sys.stderr)
        raise typer.Exit(130) from None
    finally:
        bar.close()
    summary = {
        "benchmark": outcome.benchmark,
        "split": outcome.split,
        "mode": outcome.mode,
        "model": cfg.model,
        "results": str(outcome.out),
        **outcome.result.summary(),
    }
    if json_out:
        typer.echo(json.dumps(summary, indent=2))
        _exit_if_errored(summary)
        return
    lo, hi = summary["ci95"]
    typer.echo(
        f"{outcome.benchmark} [{outcome.split}] mode={outcome.mode} model={cfg.model}: "
        f"score {summary['score']:.3f} (95% CI {lo:.3f}-{hi:.3f}) on {summary['tasks']} tasks"
        + (f" x {summary['repeats']} repeats" if summary["repeats"] > 1 else "")
    )
    tokens = f"{summary['prompt_tokens']}+{summary['completion_tokens']}"
    typer.echo(
        f"calls {summary['calls']}  tokens {tokens}"
        f"  cost ${summary['cost']:.4f}  errors {summary['errors']}  gate fallbacks "
        f"{summary['gate_fallbacks']}"
    )
    kept = ""
    if out is None and outcome.out.stem.rsplit("-", 1)[-1].isdigit():
        kept = " (a new name: the results of an earlier evaluation keep theirs)"
    typer.echo(f"per-task results: {outcome.out}{kept}")
    _exit_if_errored(summary)


# exit code of an evaluation that finished with tasks that errored (docs/reference/exit-codes.md)
TASKS_ERRORED = 3


def _exit_if_errored(summary: dict[str, Any]) -> None:
    """Exit 3 when a rollout errored (an LLM request or the grader failed): its 0 is no grade."""
    errors = int(summary["errors"])
    if errors:
        typer.echo(
            f"moscopt: {errors} of {summary['rollouts']} rollouts errored "
            f"(their 'error' is in {summary['results']}); exit code {TASKS_ERRORED}",
            err=True,
        )
        raise typer.Exit(TASKS_ERRORED)


class _Bar:
    """A rich progress bar on stderr when it is a terminal: tasks done and the running score.

    Elsewhere (a pipe, a log file, CI) there is no bar, and rich is not imported."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet or not sys.stderr.isatty()
        self.progress: Any = None
        self.task: Any = None
        self.done = 0
        self.reward = 0.0

    def start(self, total: int) -> None:
        if self.quiet:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task("eval", total=total)

    def advance(self, rollout: Any) -> None:
        self.done += 1
        self.reward += rollout.reward
        if self.progress is not None:
            self.progress.update(
                self.task, advance=1, description=f"eval  score {self.reward / self.done:.3f}"
            )

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
