"""`moscopt export`: a run as a mixture, a static routing table or one distilled skill."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app


@app.command("export")
@o.shared(
    "model",
    "optimizer_model",
    "api_base",
    "max_tokens",
    "timeout",
    "data",
    "max_calls",
    "max_cost",
    "no_cache",
    "set",
    "json_out",
)
def export_cmd(
    opts: o.Shared,
    mode: str = typer.Option(
        ..., "--mode", help="mixture, static, topq, distilled, router, agents or plugin."
    ),
    run: Path | None = typer.Option(
        None, "--run", help="The run directory (default: the project's latest finished run)."
    ),
    out: Path | None = typer.Option(
        None, "-o", "--out", help="Export folder (default: <run>/exports/<mode>)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing export."),
    top: int | None = typer.Option(
        None, "--top", help="distilled: how many top skills (by Q-score) to merge (default: K)."
    ),
) -> None:
    """Export a run for deployment: mixture (skills + gate), static (a routing table, no gate
    call), topq (the paper's static mode: the K skills of highest Q for every task), distilled
    (one SKILL.md merging the top skills, validated), router (the mixture and the familiarity
    router's heads: no gate call), agents (for Agent Skills agents: the routing in the
    descriptions and a skill-router skill) or plugin (the agents export as a Claude Code
    plugin, with the certificate in its README)."""
    import json

    from moscopt.exports import export_run
    from moscopt.run.history import open_run

    flags = opts.overrides()

    def progress(line: str) -> None:  # the distilled export's steps, as they start (stderr)
        typer.echo(f"export: {line}", err=True)

    run_dir = open_run(run, finished=True).path
    result = export_run(
        run_path=run_dir,
        mode=mode,
        out=out,
        force=force,
        overrides=flags,
        top=top,
        progress=None if opts.json_out else progress,
    )
    m = result.manifest
    table = m.static if m.static is not None else (m.agents or {}).get("static")
    if table and table.get("default_only"):
        typer.echo(f"warning: {table['default_only']}", err=True)
    if opts.json_out:
        data_out = {"out": str(result.out), "files": result.files, **m.model_dump(mode="json")}
        typer.echo(json.dumps(data_out, indent=2, sort_keys=True))
        return
    typer.echo(f"{m.mode} export of run {m.provenance.run} (K={m.k}, N={m.n}): {result.out}")
    if m.static is not None and m.mode == "topq":
        typer.echo(f"top-Q routing: every task activates {', '.join(m.static['default'])}")
    elif m.static is not None:
        s = m.static
        typer.echo(
            f"routing table: {s['word_rules']} word rules; routes {s['agreeing']} of "
            f"{s['gate_decisions']} gate-routed training tasks as the gate did "
            f"({s['by_words']} by words, {s['by_default']} by DEFAULT)"
        )
    if m.distilled is not None:
        d = m.distilled
        mix = d["mixture_validation_score"]
        typer.echo(
            f"distilled skill '{d['skill']}' merging {', '.join(d['merged'])}: validation "
            f"{d['validation_score']:.3f} vs mixture "
            f"{'n/a' if mix is None else f'{mix:.3f}'} ({d['validation_tasks']} tasks)"
        )
        if d.get("note"):
            typer.echo(f"warning: {d['note']}", err=True)
    if m.router is not None:
        r = m.router
        typer.echo(
            f"router: heads for {r['skills']} skills over {r['embedding_model']} in {r['file']}; "
            f"K from {r['k_min']} to {r['k_max']} (theta {r['theta']}), "
            f"trained on {r['routed']} rollouts"
        )
    if m.agents is not None:
        a = m.agents
        typer.echo(
            f"for Agent Skills agents: {a['word_rules']} word rules in the descriptions of "
            f"{len(a['hinted'])} skills and in {a['router_skill']}/SKILL.md (read it first); "
            f"copy {result.out / 'skills'}/* into .claude/skills/ or .agents/skills/"
        )
    if m.plugin is not None:
        typer.echo(
            f"Claude Code plugin '{m.plugin['name']}': claude --plugin-dir {result.out} "
            f"(certificate: {m.plugin['certificate'] or 'none'})"
        )
    typer.echo(f"evaluate it: {eval_command(result.out, run_dir)}")


def eval_command(export: Path, run_dir: Path) -> str:
    """The `moscopt eval` that scores an export in a minute or two: on at most the tasks per
    split the run trained with (`--limit`, 20 without one), with the run's data."""
    import shlex

    from moscopt.config import load_config
    from moscopt.run.rundir import RunDir

    data = load_config(RunDir.open(run_dir).config_path).data
    limit = data.limit or 20
    given = f" --data {shlex.quote(data.path)}" if data.path else ""
    return (
        f"moscopt eval --export {shlex.quote(str(export))} --split test --limit {limit}{given}"
        f"  (the whole split: without --limit)"
    )
