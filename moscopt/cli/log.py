"""`moscopt log`: the history of a run's edits, evolution cycles and gate restorations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from moscopt.cli.app import app

STEP_HELP = (
    "Steps are the trainer's step counter (state.step): it starts at 0 and goes up after each "
    "minibatch of the skills phase and each gate-editing step; evolution happens at the step "
    "the counter shows then, so one step can hold several events."
)


@app.command("log", help=f"History of edits with before/after scores and reasons. {STEP_HELP}")
def log_cmd(
    run: Path | None = typer.Option(
        None, "--run", help="A run directory (default: the project's latest run)."
    ),
    skill: str | None = typer.Option(
        None, "--skill", help="Only what concerns this skill (or 'gate')."
    ),
    full: bool = typer.Option(
        False,
        "--full",
        help="Each edit in full: every operation (anchor, old and new text) as a unified diff "
        "against the skill it targeted, its whole reasoning, and the decision with the "
        "validation samples of both pools.",
    ),
    edit: int | None = typer.Option(
        None, "--edit", min=1, help="Only edit number N (the `edit N` of `log`); implies --full."
    ),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output (a JSON list)."),
) -> None:
    import json

    from moscopt.errors import UserError
    from moscopt.run.history import EditEntry, History, open_run

    history = History.load(open_run(run))
    entries = history.entries
    numbers = {id(e): i for i, e in enumerate(history.edits, 1)}  # edit N, in log order
    full = full or edit is not None
    if edit is not None:
        if edit > len(numbers):
            raise UserError(
                f"no edit {edit} in this run (it has {len(numbers)} edit(s))", field="edit"
            )
        entries = [e for e in entries if numbers.get(id(e)) == edit]
    if skill is not None:
        if skill not in history.known_names():
            raise UserError(
                f"unknown skill '{skill}' in this run (known: {', '.join(history.known_names())})",
                field="skill",
            )
        entries = [e for e in entries if e.touches(skill)]
    for warning in history.warnings:
        typer.echo(f"moscopt: warning: {' '.join(warning.split())}", err=True)
    rows = []
    for e in entries:
        n = numbers.get(id(e))
        row = e.to_json(full=True) if full and isinstance(e, EditEntry) else e.to_json()
        if n is not None:
            row["edit"] = n
        rows.append(row)
    if json_out:
        typer.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    if not rows:
        typer.echo("no edits, evolution cycles or gate restorations logged yet")
        return
    from moscopt.run.fsio import strip_controls

    for row in rows:  # model-written text: no escape sequence reaches the terminal
        text = render_full(row) if full and row["kind"] == "edit" else render_entry(row)
        typer.echo(strip_controls(text))


def _score(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


def render_entry(row: dict[str, Any]) -> str:
    """One entry as text: a head line, then indented details."""
    from moscopt.run.outcomes import outcome_word

    where = f"step {row['step']:>3}  epoch {row['epoch']}"
    if row["kind"] == "edit":
        scores = (
            f"{_score(row['before'])} -> {_score(row['after'])}"
            if row["before"] is not None
            else "not validated"
        )
        number = f"  (edit {row['edit']})" if "edit" in row else ""
        lines = [
            f"{where}  {row['phase']:<6} {row['target']}  {outcome_word(row['status'])}  "
            f"{scores}{number}",
            f"    {row['summary']}",
        ]
        if row["reasoning"]:
            lines.append(f"    reasoning: {' '.join(row['reasoning'].split())}")
        lines.extend(_decision(row.get("decision")))
        return "\n".join(lines)
    if row["kind"] == "evolution":
        verdict = "accepted" if row["accepted"] else "rejected"
        if row["before"] is None:
            verdict = "no change"
        lines = [
            f"{where}  evolve evolution  {verdict}  {_score(row['before'])} -> "
            f"{_score(row['after'])}"
            if row["before"] is not None
            else f"{where}  evolve evolution  {verdict}"
        ]
        if row["eliminated"]:
            lines.append(f"    eliminated: {', '.join(row['eliminated'])}")
        if row["added"]:
            lines.append(f"    added: {', '.join(row['added'])}")
        if row["similarity"] is not None:
            lines.append(f"    mean pairwise similarity: {row['similarity']:.3f}")
        lines.extend(_decision(row.get("decision")))
        return "\n".join(lines)
    source = "the seed gate" if row.get("source") == "seed" else "its last good version"
    verdict = "accepted" if row.get("accepted", True) else "rejected"
    head = f"{where}  gate restoration from {source} (repeated parse failures)  {verdict}"
    return "\n".join([head, *_decision(row.get("decision"))])


def render_full(row: dict[str, Any]) -> str:
    """`log`'s entry for one edit, then the edit in full (`run.edit_detail`), indented."""
    from moscopt.run.edit_detail import full_lines

    head = render_entry({**row, "decision": None, "reasoning": ""})
    return "\n".join([head, *(f"    {line}" for line in full_lines(row)), ""])


def _decision(d: dict[str, Any] | None) -> list[str]:
    """The evidence behind a verdict: samples, paired mean difference and its interval."""
    if not d:
        return []
    return [
        f"    decision ({d['policy']}): {d['samples']} sample(s), {d['n']} paired, "
        f"difference {d['mean_diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]: {d['reason']}"
    ]
