"""`moscopt learn` (harvest + train, the result staged), `moscopt schedule` / `unschedule`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from moscopt.cli.app import app

SOURCE = typer.Option(..., "--source", help="claude-code, codex or jsonl.")
PROJECT = typer.Option(None, "--project", help="The project folder (default: the current one).")
MAX_CALLS = typer.Option(None, "--max-calls", min=1, help="Hard budget: LLM calls.")
MAX_COST = typer.Option(None, "--max-cost", min=0.0, help="Hard budget: US dollars.")
MODEL = typer.Option(None, "--model", help="The agent's model for training.")


def _budget(max_calls: int | None, max_cost: float | None) -> list[str]:
    from moscopt.errors import UserError

    if not max_calls and not max_cost:
        raise UserError("give a budget: --max-calls N or --max-cost USD", field="max-calls")
    out = ["--max-calls", str(max_calls)] if max_calls else []
    return out + (["--max-cost", str(max_cost)] if max_cost else [])


@app.command(
    "learn",
    help=(
        "Harvest your sessions (deterministic mining), train on the mined tasks with the "
        "held-out ones for the certificate, and stage the result in the run's skills/ for "
        "`moscopt adopt`; a budget is required."
    ),
)
def learn_cmd(
    source: str = SOURCE,
    project: Path | None = PROJECT,
    since: str | None = typer.Option(None, "--since", help="2026-01-31, ISO time, or 7d."),
    path: Path | None = typer.Option(None, "--path", help="Transcript file or folder."),
    max_calls: int | None = MAX_CALLS,
    max_cost: float | None = MAX_COST,
    model: str | None = MODEL,
) -> None:
    import datetime as dt
    import subprocess

    from moscopt.learn.harvest import harvest, parse_since
    from moscopt.learn.mine import mine
    from moscopt.learn.output import write_tasks

    budget = _budget(max_calls, max_cost)
    root = (project or Path.cwd()).expanduser().resolve()
    scope = root if source != "jsonl" or project is not None else None
    got = harvest(source, path=path, project=scope, since=parse_since(since))
    mined = mine(got.sessions)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = root / ".moscopt" / "learn" / stamp / "tasks.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    counts = write_tasks(mined.tasks, out)
    typer.echo(f"harvest: {got.counts.summary()}; mined {sum(counts.values())} task(s): {counts}")
    if not counts["train"] or not counts["val"]:
        typer.echo("nothing to learn: training needs mined train and val tasks; nothing staged")
        return
    held = out.with_name("tasks.heldout.jsonl")
    train = [sys.executable, "-m", "moscopt", "train", "--tasks", str(out)]
    train += ["--held-out", str(held)] if counts["test"] else []
    train += budget + (["--model", model] if model else [])
    typer.echo("train: " + " ".join(train[2:]))
    code = subprocess.call(train, cwd=root)
    if code != 0:
        raise typer.Exit(code)
    typer.echo("staged: review the run's skills and certificate, then `moscopt adopt`")


@app.command(
    "schedule",
    help=(
        "Install a nightly `moscopt learn` for this project (a user crontab line, else a "
        "systemd user timer); refused without a budget; output logged under "
        ".moscopt/schedule/; `moscopt unschedule` removes exactly what it installed."
    ),
)
def schedule_cmd(
    source: str = SOURCE,
    project: Path | None = PROJECT,
    at: str = typer.Option("03:17", "--at", help="Time of day, HH:MM."),
    since: str = typer.Option("2d", "--since", help="Each night, the sessions of this window."),
    max_calls: int | None = MAX_CALLS,
    max_cost: float | None = MAX_COST,
    model: str | None = MODEL,
    via: str | None = typer.Option(None, "--via", help="cron or systemd (default: found)."),
) -> None:
    from moscopt.learn import schedule

    budget = _budget(max_calls, max_cost)
    root = (project or Path.cwd()).expanduser().resolve()
    args = ["--source", source, "--project", str(root), "--since", since, *budget]
    args += ["--model", model] if model else []
    record = schedule.install(root, args, at, via=via)
    typer.echo(f"scheduled ({record['via']}): {record.get('line') or record.get('units')}")
    typer.echo(f"log: {schedule.folder(root) / schedule.LOG}")


@app.command("unschedule", help="Remove the nightly job `moscopt schedule` installed here.")
def unschedule_cmd(project: Path | None = PROJECT) -> None:
    from moscopt.learn import schedule

    root = (project or Path.cwd()).expanduser().resolve()
    record = schedule.remove(root)
    typer.echo(f"removed: {record['id']} ({record['via']})" if record else "nothing scheduled")
