"""`moscopt init [DIR]`: scaffold a project with a config and the seed skill library."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from moscopt.cli.app import app


@app.command("init")
def init_cmd(
    directory: Path = typer.Argument(Path("."), help="Project folder (created if missing)."),
    force: bool = typer.Option(False, "--force", help="Replace moscopt.yaml and the seed skills."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Scaffold a project: moscopt.yaml, skills/ (the seed library, gate included), .gitignore."""
    from moscopt.app.project import init_project

    result = init_project(directory, force=force)
    if json_out:
        import json

        data = {"project": str(directory), "created": [str(p) for p in result.created]}
        typer.echo(json.dumps(data, indent=2))
        return
    for path in result.created:
        typer.echo(f"wrote {path}")
    here = directory.resolve() == Path.cwd().resolve()
    go = "" if here else f"cd {shlex.quote(str(directory))} && "  # `init .`: no `cd .`
    typer.echo(
        f"\nNext: {go}moscopt status    "
        "(edit skills/*/SKILL.md and moscopt.yaml, then moscopt train --benchmark NAME)"
    )
