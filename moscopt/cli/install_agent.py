"""`moscopt install-agent`: moscopt's skill, slash commands and MCP server for Claude Code or
Codex, written where the agent reads them (`moscopt.app.agents`)."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli.app import app


@app.command("install-agent")
def install_agent_cmd(
    agent: str = typer.Argument(..., metavar="AGENT", help="claude-code or codex."),
    user: bool = typer.Option(
        False, "--user", help="For every project (your home folder's), not this project."
    ),
    project: bool = typer.Option(
        False, "--project", help="For this project (the default for claude-code)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what would be written; write nothing."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace a file or a moscopt entry of yours that differs."
    ),
) -> None:
    """Install moscopt into Claude Code (skill, slash commands, MCP server in .mcp.json) or
    Codex (skill and [mcp_servers.moscopt]); idempotent, says what it wrote."""
    from moscopt.app.agents import install_agent
    from moscopt.errors import UserError

    if user and project:
        raise UserError("--user and --project: pass one", field="user")
    scope_user = user or (agent == "codex" and not project)
    planned, steps = install_agent(
        agent, user=scope_user, root=Path.cwd(), home=Path.home(), force=force, dry_run=dry_run
    )
    verb = {"create": "would create", "update": "would replace", "keep": "unchanged"}
    if not dry_run:
        verb = {"create": "created", "update": "replaced", "keep": "unchanged"}
    for p in planned:
        typer.echo(f"{verb[p.action]}: {p.path}")
    if dry_run:
        typer.echo("dry run: nothing was written")
    for step in steps:
        typer.echo(f"next: {step}")
