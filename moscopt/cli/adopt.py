"""`moscopt adopt`: write a run's trained skills into the agent's skills folder; `--undo`."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli.app import app


@app.command(
    "adopt",
    help=(
        "Write a run's trained skills (default: the project's latest run) into the agent's "
        "skills folder (default: the project's skills/; e.g. --to .claude/skills), each skill "
        "folder whole, after backing up what it replaces, and print the git diff; --undo puts "
        "the backup back. A run whose certificate says WORSE is refused unless --force."
    ),
)
def adopt_cmd(
    run: Path | None = typer.Option(None, "--run", help="A run directory."),
    skill: list[str] = typer.Option(
        [], "--skill", help="Adopt only this skill (repeatable; default: all)."
    ),
    to: Path | None = typer.Option(None, "--to", help="The agent's skills folder."),
    undo: bool = typer.Option(False, "--undo", help="Restore the latest adoption's backup."),
    force: bool = typer.Option(False, "--force", help="Adopt even if the certificate says worse."),
    config: Path | None = typer.Option(None, "--config", help="Project config (moscopt.yaml)."),
) -> None:
    from moscopt.app.learning import adopt_run, undo_adoption
    from moscopt.run.fsio import strip_controls

    if undo:
        done = undo_adoption(to, config)
        typer.echo(
            f"undone: restored {len(done['restored'])} skill(s), removed {len(done['removed'])} "
            f"in {done['to']} (from {done['backup']})"
        )
        return
    result = adopt_run(run, skill, to, force=force, config=config)
    names = result["adopted"]
    if not names:
        typer.echo("nothing to adopt: the run has no skills")
        return
    if result["diff"]:
        typer.echo(strip_controls(result["diff"]), nl=False)
    typer.echo(
        f"adopted {len(names)} skill(s) from {result['run']} into {result['to']} "
        f"({len(result['replaced'])} replaced, {len(result['added'])} new; certificate: "
        f"{result['certificate'] or 'none'}); backup: {result['backup']}; undo: moscopt adopt "
        "--undo" + (f" --to {to}" if to is not None else "")
    )
