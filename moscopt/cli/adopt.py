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
    from moscopt.app.project import find_config
    from moscopt.learn import adopt as a
    from moscopt.run.fsio import strip_controls

    found = Path(config) if config is not None else find_config()
    root = found.resolve().parent if found is not None else Path.cwd()
    target = to if to is not None else root / "skills"
    backups = root / ".moscopt" / "adopt"
    if undo:
        done = a.undo(backups, target)
        typer.echo(
            f"undone: restored {len(done.replaced)} skill(s), removed {len(done.added)} "
            f"in {done.to} (from {done.backup})"
        )
        return
    from moscopt.run.history import open_run

    rundir = open_run(run, config)
    certificates = rundir.read_events(None, {"certificate"})
    verdict = getattr(certificates[-1], "verdict", None) if certificates else None
    a.check_verdict(verdict, force)
    names = a.choose(a.run_skills(rundir.skills_dir), skill, target)
    if not names:
        typer.echo("nothing to adopt: the run has no skills")
        return
    result = a.adopt(rundir.skills_dir, target, names, backups, run=str(rundir.path))
    if result.diff:
        typer.echo(strip_controls(result.diff), nl=False)
    typer.echo(
        f"adopted {len(names)} skill(s) from {rundir.path} into {result.to} "
        f"({len(result.replaced)} replaced, {len(result.added)} new; certificate: "
        f"{verdict or 'none'}); backup: {result.backup}; undo: moscopt adopt --undo"
        + (f" --to {to}" if to is not None else "")
    )
