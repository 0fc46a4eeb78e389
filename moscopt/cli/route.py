"""`moscopt route`: which K skills a deployment picks for a task, and why."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app
from moscopt.core import choices as c


@app.command("route")
@o.shared("model", "api_base", "timeout", "config", "no_cache", "set", "json_out")
def route_cmd(
    opts: o.Shared,
    task: str = typer.Argument(..., help="The task text."),
    run: Path | None = typer.Option(
        None,
        "--run",
        help="A run directory (default: the project's latest finished run, unless --export).",
    ),
    export: Path | None = typer.Option(None, "--export", help="An export folder."),
    mode: c.RouteMode | None = typer.Option(
        None,
        "--mode",
        help="mixture (one gate call), static (the routing table) or router (the familiarity "
        "router: no LLM call).",
    ),
) -> None:
    """Show the skills the gate (mixture) or the routing table (static) activates for TASK."""
    import json

    from moscopt.exports.route import route_task

    result = route_task(
        task,
        run_path=run,
        export_path=export,
        mode=mode,
        overrides=opts.overrides(),
        config_path=opts.config,
    )
    if opts.json_out:
        typer.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    typer.echo(f"ACTIVATE: {', '.join(result['skills'])}")
    if result["mode"] == "router":
        typer.echo(
            "familiarity: " + ", ".join(f"{k} {v:.3f}" for k, v in result["familiarity"].items())
        )
        typer.echo(
            f"cutoff: {len(result['skills'])} skill(s), cumulative familiarity "
            f"{result['cumulative']:.3f} {'>=' if result['reached'] else '<'} theta "
            f"{result['theta']} (K from {result['k_min']} to {result['k_max']}); no LLM call"
        )
        return
    if result["mode"] in ("static", "agents"):
        typer.echo(f"{result['mode']} table {result['export']}: {result['rule_text']}")
        return
    source = result["source"]
    if source == "gate":
        cached = " (cached)" if result["cache_hit"] else ""
        typer.echo(f"chosen by the gate ({result['model']}){cached}")
    elif source == "fallback":
        typer.echo(
            f"fallback to the top K by Q-score: the gate's answer was unusable ({result['error']})"
        )
    else:
        typer.echo(f"no gate call: {source} (the pool routes without a gate)")
