"""`moscopt mcp`: serve moscopt's commands as MCP tools over stdio (the `mcp` extra)."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli.app import app


@app.command("mcp")
def mcp_cmd(
    project: Path | None = typer.Option(
        None, "--project", help="Serve this project folder (default: the current folder)."
    ),
) -> None:
    """Serve moscopt as a Model Context Protocol server over stdio: plan, train (in the
    background, with a budget), status, log, diff, eval, export and route as tools."""
    import os

    from moscopt.errors import UserError

    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UserError(
            "moscopt mcp needs the MCP SDK: pip install 'moscopt[mcp]'", field="mcp"
        ) from None
    if project is not None:
        if not project.is_dir():
            raise UserError("is not a folder", path=project)
        os.chdir(project)
    from moscopt.mcp.server import run_stdio

    run_stdio()
