"""`moscopt harvest`: mine tasks with judges from the user's own agent sessions."""

from __future__ import annotations

from pathlib import Path

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

    from moscopt.app.learning import harvest_tasks

    summary, counts_line = harvest_tasks(
        source, output, project=project, since=since, path=path, held_out=held_out,
        min_occurrences=min_occurrences, config_path=opts.config, flags=opts.overrides(),
        use_model=bool(opts.model or opts.optimizer_model),
    )  # fmt: skip
    counts, calls, miner = summary["tasks"], summary["calls"], summary["miner"]
    output, held = Path(summary["output"]), Path(summary["held_out"])
    if opts.json_out:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"harvest: {counts_line}")
    typer.echo(
        f"mined ({miner}): {sum(counts.values())} task(s): "
        + (
            f"{counts['unsplit']} (too few to split: train splits them) -> {output}"
            if counts["unsplit"]
            else f"{counts['train']} train, {counts['val']} val -> {output}; "
            f"{counts['test']} test -> {held}"
        )
        + (f"; {calls} model call(s)" if calls else "")
    )
    if sum(counts.values()) and not counts["test"]:
        typer.echo(f"  no task held out: train without --held-out ({held} is empty)")
    for r in summary["recurring_corrections"][:5]:
        typer.echo(f"  recurring correction ({r['sessions']} sessions): {r['said']}")
    if summary["contradictory"]:
        n = summary["contradictory"]
        typer.echo(f"  {n} request(s) left out: the corrections contradict")
    typer.echo(
        "Read and edit the task files before training: nothing has been sent to a provider"
        + (" but the mining calls." if calls else ".")
    )
