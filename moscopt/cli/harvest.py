"""`moscopt harvest`: mine tasks with judges from the user's own agent sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app


@app.command(
    "harvest",
    help=(
        "Mine tasks with judges from your Claude Code, Codex or generic JSONL sessions into a "
        "task file for `moscopt train --tasks` (read-only; secrets scrubbed before anything is "
        "stored). Without --model/--optimizer-model the miner is deterministic and nothing is "
        "sent anywhere; with one, the optimizer model writes the judges (one call per corrected "
        "request). The held-out (test) tasks go to a file of their own (--held-out)."
    ),
)
@o.shared("model", "optimizer_model", "api_base", "config", "max_calls", "max_cost", "json_out")
def harvest_cmd(
    opts: o.Shared,
    source: str = typer.Option(..., "--source", help="claude-code, codex or jsonl."),
    output: Path = typer.Option(..., "--output", "-o", help="Task file to write (JSONL)."),
    project: Path | None = typer.Option(
        None,
        "--project",
        help="Only sessions run in this folder or inside it (default: the current folder; "
        "for --source jsonl, no filter).",
    ),
    since: str | None = typer.Option(
        None, "--since", help="Only sessions that ended on or after: 2026-01-31, ISO time, 7d."
    ),
    path: Path | None = typer.Option(
        None,
        "--path",
        help="Transcript file or folder (default: ~/.claude/projects or ~/.codex/sessions).",
    ),
    held_out: Path | None = typer.Option(
        None, "--held-out", help="Where the test tasks go (default: <output>.heldout.jsonl)."
    ),
    min_occurrences: int = typer.Option(
        1,
        "--min-occurrences",
        min=1,
        help="Keep a task only when its request and the user's corrections and re-asks of it "
        "add up to this many.",
    ),
) -> None:
    import json

    from moscopt.learn.harvest import harvest, parse_since
    from moscopt.learn.output import held_out_path, write_tasks

    if project is None and source != "jsonl":
        project = Path.cwd()
    scope = project.expanduser().resolve() if project is not None else None
    got = harvest(source, path=path, project=scope, since=parse_since(since))
    calls = 0
    if opts.model or opts.optimizer_model:
        mined, calls, miner = _mine_with_model(opts, got.sessions, min_occurrences)
    else:
        from moscopt.learn.mine import mine

        mined, miner = mine(got.sessions, min_occurrences=min_occurrences), "deterministic"
    held = held_out or held_out_path(output)
    if held.expanduser().resolve() == output.expanduser().resolve():
        from moscopt.errors import UserError

        raise UserError("--held-out must name another file than -o", field="held-out")
    counts = write_tasks(mined.tasks, output, held)
    summary = {
        "output": str(output),
        "held_out": str(held),
        "miner": miner,
        "calls": calls,
        "sessions": got.counts.sessions,
        "files": got.counts.files,
        "skipped": dict(got.counts.skipped),
        "bad_lines": got.counts.bad_lines,
        "tasks": counts,
        "recurring_corrections": [{"said": s, "sessions": n} for s, n in mined.recurring],
        "contradictory": mined.contradictory,
    }
    if opts.json_out:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"harvest: {got.counts.summary()}")
    typer.echo(
        f"mined ({miner}): {sum(counts.values())} task(s): {counts['train']} train, "
        f"{counts['val']} val -> {output}; {counts['test']} test -> {held}"
        + (f"; {calls} model call(s)" if calls else "")
    )
    for said, n in mined.recurring[:5]:
        typer.echo(f"  recurring correction ({n} sessions): {said}")
    if mined.contradictory:
        typer.echo(f"  {mined.contradictory} request(s) left out: the corrections contradict")
    typer.echo(
        "Read and edit the task files before training: nothing has been sent to a provider"
        + (" but the mining calls." if calls else ".")
    )


def _mine_with_model(opts: o.Shared, sessions: list[Any], min_occurrences: int) -> Any:
    from moscopt.app.project import open_project
    from moscopt.learn.mine_llm import mine_with_model
    from moscopt.lm import build_lm

    config = open_project(opts.config, opts.overrides()).config
    lm = build_lm(config, role="optimizer")
    try:
        mined, calls = mine_with_model(sessions, lm, min_occurrences=min_occurrences)
    finally:
        lm.close()
    return mined, calls, f"model:{config.effective_optimizer_model}"
