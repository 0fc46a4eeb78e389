"""What `moscopt ablate` and `moscopt compare` share: their options, declared once, and running
a study with its progress (`moscopt.cli.study_display`) and table."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from moscopt.cli import options as o

# --budget-calls is the study's budget (per configuration and seed), not a shared --max-calls
SHARED = (*(n for n in o.MODEL_OPTIONS if n != "max_calls"), "json_out")


@dataclass(frozen=True)
class StudyArgs:
    """A study's own options (None: not given)."""

    budget_calls: int
    seeds: str
    study: Path | None
    repeats: str
    runs_at_once: int | None


OPTIONS: dict[str, tuple[Any, Any]] = {
    "budget_calls": (
        int,
        typer.Option(
            ..., "--budget-calls", help="Training budget in LLM calls, per configuration and seed."
        ),
    ),
    "seeds": (
        str,
        typer.Option(
            "3", "--seeds", help="How many seeds (counting up from --seed), or a list: 1,2,3."
        ),
    ),
    "study": (
        Path | None,
        typer.Option(None, "--study", help="Study folder (default studies/<kind>-<benchmark>)."),
    ),
    "repeats": (str, typer.Option("auto", "--repeats", help="Test repeats: N or auto (3..50).")),
    "runs_at_once": (
        int | None,
        typer.Option(
            None,
            "--runs-at-once",
            min=1,
            help="At most this many runs at once (default: --concurrency); all of them share "
            "the --concurrency requests in flight.",
        ),
    ),
}


def study_options(fn: Any) -> Any:
    """The shared model options (as `opts`), the run's shape (as `shape: RunShape`) and the
    study's own (as `args: StudyArgs`)."""
    with_args = o.options_group(OPTIONS, tuple(OPTIONS), "args", StudyArgs)(fn)
    return o.shared(*SHARED)(o.run_shape(with_args))


def run_study_command(
    opts: o.Shared, shape: o.RunShape, args: StudyArgs, *, kind: str, names: list[str]
) -> None:
    """What `ablate` and `compare` share: build the spec, run the study, print the table."""
    import json

    from moscopt.app.project import open_project
    from moscopt.cli.study_display import StudyDisplay
    from moscopt.lm.errors import LMFatalError
    from moscopt.study import StudySpec, run_study

    benchmark, study = shape.benchmark_or_tasks(), args.study
    flags = opts.overrides(**shape.config_keys())
    project = open_project(opts.config, flags)
    name = benchmark or project.config.benchmark or "study"
    path = study or project.root / "studies" / f"{kind}-{Path(name).stem}"
    spec = StudySpec(
        kind=kind,
        benchmark=benchmark,
        budget_calls=args.budget_calls,
        seeds=parse_seeds(args.seeds, project.config.seed),
        configurations=names,
        repeats=args.repeats,
        config_path=project.config_path,
        overrides=flags,
        runs_at_once=args.runs_at_once,
    )
    display = StudyDisplay(json_lines=opts.json_out)  # live on a terminal, plain lines elsewhere
    try:
        outcome = run_study(spec, path, notify=display)
    except LMFatalError as e:
        display.close()
        print(
            f"moscopt: stopped: {e}\nthe finished runs are kept; rerun the same command to "
            f"continue the study in {path}",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        display.close()
        print(f"moscopt: interrupted; rerun the same command to continue {path}", file=sys.stderr)
        raise typer.Exit(130) from None
    finally:
        display.close()
    if opts.json_out:
        typer.echo(json.dumps({**outcome.table, "study": str(outcome.path)}, indent=2))
        return
    for row in outcome.table["rows"]:
        typer.echo(row["summary"])
    ran, skipped = len(outcome.ran), len(outcome.skipped)
    typer.echo(f"study: {outcome.path} ({ran} runs now, {skipped} finished before)")
    typer.echo("table: " + ", ".join(str(p) for p in outcome.outputs))


def parse_seeds(text: str, base: int) -> list[int]:
    """`3` -> three seeds from `base`; `1,5,9` -> those seeds."""
    from moscopt.errors import UserError

    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise UserError(
            f"--seeds {text!r}: a count or a comma-separated list", field="seeds"
        ) from None
    if len(values) == 1 and "," not in text:
        if values[0] < 1:
            raise UserError("--seeds must be at least 1", field="seeds")
        return [base + i for i in range(values[0])]
    if not values or len(set(values)) != len(values):
        raise UserError(f"--seeds {text!r}: seeds must be distinct", field="seeds")
    return values
