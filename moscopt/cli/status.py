"""`moscopt status`: the pool, the config and the counters of a run (the project's latest run
by default), or of the project (`--project`, or when it has no run yet)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer

from moscopt.cli.app import app


@app.command("status")
def status_cmd(
    run: Path | None = typer.Option(
        None, "--run", help="A run directory (default: the project's latest run)."
    ),
    project: bool = typer.Option(
        False, "--project", help="The project instead: its seed pool and its runs."
    ),
    config: Path | None = typer.Option(
        None, "--config", envvar="MOSCOPT_CONFIG", help="Project config (moscopt.yaml)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show Q-scores, activations, synergy, edits and cost of a run (by default the project's
    latest); with --project, or before the first run, the project's seed pool and runs."""
    import json

    from moscopt.app.project import open_project
    from moscopt.errors import UserError
    from moscopt.report.summary import project_summary, run_summary

    if run is not None and project:
        raise UserError("--run and --project show different things: pass one", field="project")
    if run is None and not project:
        runs_dir = open_project(config).runs_dir
        if runs_dir.is_dir():  # none before the first run: the run's models stay unimported
            from moscopt.run.history import latest_run

            run = latest_run(runs_dir)  # None if no run has started
    if run is not None:
        from moscopt.run.rundir import RunDir

        data = run_summary(RunDir.open(run))
    else:
        from moscopt.learn.schedule import describe

        opened = open_project(config)
        data = {**project_summary(opened), "schedule": describe(opened.root)}
    if json_out:
        typer.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        _render(data)


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


SHOWN_SKILLS = 40  # rows of the pool's table; a larger pool shows its best (its rendering grows)


def shown_skills(skills: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pool's rows to print: all of them up to `SHOWN_SKILLS`, else that many with the
    highest Q (a skill never scored counts as lowest), then activations, in the pool's order."""
    if len(skills) <= SHOWN_SKILLS:
        return skills

    def rank(i: int) -> tuple[float, int, int]:
        q = skills[i]["q"]
        return (-(q if q is not None else -math.inf), -skills[i]["activations"], i)

    best = sorted(sorted(range(len(skills)), key=rank)[:SHOWN_SKILLS])
    return [skills[i] for i in best]


def _render(d: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    if "run" in d:
        from moscopt.run.rundir import RESUMABLE

        console.print(  # soft wrap: a long path is never broken mid-name
            f"[bold]run[/] {d['run']}  ({d['status']}, benchmark {d['benchmark'] or '-'})",
            soft_wrap=True,
        )
        if d["status"] in RESUMABLE:
            console.print(
                f"{d['status']}: continue it with moscopt train --resume --run {d['run']}",
                markup=False,
                soft_wrap=True,
            )
        console.print(f"epoch {d['epoch']}  step {d['step']}  phase {d['phase']}")
        if d.get("unsaved"):
            console.print(unsaved_line(d["unsaved"], d["status"]), markup=False, soft_wrap=True)
    else:
        console.print(f"[bold]project[/] {d['config'] or '(no moscopt.yaml: defaults)'}")
        console.print(f"skills {d['skills_dir']}", soft_wrap=True)
    model = d["model"]
    if d["optimizer_model"] != model:
        model += f" (optimizer: {d['optimizer_model']})"
    console.print(f"model {model}   N={d['n']} K={d['k']}   gate {'yes' if d['gate'] else 'no'}")

    table = Table(show_edge=False, pad_edge=False)
    table.add_column("skill", no_wrap=True)
    table.add_column("Q", justify="right", no_wrap=True)
    table.add_column("act", justify="right", no_wrap=True)
    table.add_column("description", overflow="fold")  # whole, wrapped in its column
    skills = shown_skills(d["skills"])
    for s in skills:
        table.add_row(s["name"], _fmt(s["q"]), str(s["activations"]), s["description"])
    console.print(table)
    if len(skills) < len(d["skills"]):
        console.print(
            f"the {len(skills)} of {len(d['skills'])} skills with the highest Q (then "
            "activations); moscopt status --json lists every one",
            markup=False,
            soft_wrap=True,
        )

    if "run" in d:
        _render_run(console, d)
    elif d.get("runs"):
        console.print("runs:")
        for r in d["runs"]:
            console.print(f"  {r['run']}  {r['status']}  step {_fmt(r['step'])}")
    else:
        console.print("no runs yet")
    for line in d.get("schedule") or ():  # the nightly `moscopt learn`, and its log's last lines
        console.print(line, markup=False, soft_wrap=True)


def _render_run(console: Any, d: dict[str, Any]) -> None:
    from moscopt.run.outcomes import outcome_words
    from moscopt.run.state import calls_words

    t = d["totals"]
    edits = d["edits"]
    console.print(
        f"edits: {outcome_words(edits)}   "
        f"best val: {_fmt(d['best_val_score'])}   checkpoints: {d['checkpoints']}"
    )
    for target, counts in sorted(edits.get("by_target", {}).items()):
        console.print(f"  {target}: {outcome_words(counts, always=())}")
    if d.get("certificate"):
        console.print(d["certificate"]["line"], soft_wrap=True)
    if d.get("best_val_by_epoch"):
        epochs = [f"{p['epoch']}: {_fmt(p['best'])}" for p in d["best_val_by_epoch"]]
        listing(console, "best val per epoch: ", epochs, "  ")
    for e in d.get("evolution", []):
        if e["before"] is None:
            verdict = "no change"
        else:
            verdict = "accepted" if e["accepted"] else "rejected"
            verdict += f" ({_fmt(e['before'])} -> {_fmt(e['after'])})"
        changes = []
        if e["eliminated"]:
            changes.append("eliminated " + ", ".join(e["eliminated"]))
        if e["added"]:
            changes.append("added " + ", ".join(e["added"]))
        if e.get("diversity"):
            changes.append(diversity_words(e["diversity"]))
        console.print(
            f"evolution at step {e['step']} (epoch {e['epoch']}): {verdict}"
            + (f"; {'; '.join(changes)}" if changes else ""),
            soft_wrap=True,
        )
    if d.get("gate_restorations"):
        steps = [
            f"{r['step']} ({'accepted' if r['accepted'] else 'rejected'})"
            for r in d["gate_restorations"]
        ]
        listing(console, "gate restoration at step ", steps)
    if d.get("niches"):
        from moscopt.extensions.niches.summary import summary_lines

        for line in summary_lines(d["niches"]):
            console.print(line, soft_wrap=True)
    spec = d.get("specialization")
    if spec is not None:
        if spec["index"] is None:
            console.print(f"specialization index: - ({spec['reason']})", soft_wrap=True)
        else:
            tops = ", ".join(f"{n} {v['top']} {v['share']:.0%}" for n, v in spec["niches"].items())
            console.print(
                f"specialization index {spec['index']:.3f} (top skill per niche: {tops})",
                soft_wrap=True,
            )
    if d.get("memory"):
        console.print("execution memory:")
        for line in d["memory"]:
            console.print(f"  {line}", soft_wrap=True)
    halting = d.get("halting")
    if halting and halting["rollouts"]:
        console.print(
            f"halting: {halting['halted_early']} of {halting['rollouts']} rollouts halted early "
            f"({halting['share']:.0%}); agent calls saved: {halting['calls_saved_min']} to "
            f"{halting['calls_saved_max']} (the pending step of each, up to the budget left)",
            soft_wrap=True,
        )
    rate = d.get("gate_fallback_recent")
    if rate is not None:
        from moscopt.routing.gate import HIGH_FALLBACK, fallback_hint

        console.print(f"gate fallback rate (recent steps): {rate:.0%}")
        if rate > HIGH_FALLBACK:
            hint = fallback_hint(rate, bool(d.get("gate_constrained")))
            console.print("note: " + hint, soft_wrap=True, markup=False)
    a = d.get("acceptance") or {}
    if a.get("decisions"):
        diff = a["mean_diff_accepted"]
        console.print(
            f"acceptance ({', '.join(a['policies'])}): {a['accepted']} of {a['decisions']} "
            f"decisions accepted, {a['mean_samples']:.2f} samples per decision"
            + (f", mean paired gain of the accepted {diff:+.3f}" if diff is not None else "")
        )
    for name, dep in sorted((d.get("deployments") or {}).items()):
        now = f"down since {dep['since']}" if dep["down"] else "back up"
        console.print(
            f"deployment {name}: went down {dep['went_down']}x, {now} (down {dep['down_for']:.1f}"
            f" s in all before coming back); last error: {dep['error'] or '-'}",
            markup=False,
            soft_wrap=True,
        )
    console.print(
        f"{calls_words(t['calls'], t['cache_hits'])}   tokens "
        f"{t['prompt_tokens']}+{t['completion_tokens']}   cost ${t['cost']:.4f}"
    )
    for w in d.get("export_warnings", []):
        line = f"warning: {w['mode']} export {w['export']}: {w['warning']}"
        console.print(line, markup=False, soft_wrap=True)
    if d["synergy_top"]:
        pairs = [
            f"{a}+{b}: {c}" for (a, b), c in ((p["pair"], p["count"]) for p in d["synergy_top"])
        ]
        listing(console, "synergy: ", pairs)


def listing(console: Any, head: str, items: list[str], sep: str = ", ") -> None:
    """`head` and `items` on as few lines of the console's width as fit, broken only between
    items (never inside one), the lines after the first indented by two spaces."""
    mark = sep.rstrip()  # "," after every item but the last
    gap = sep[len(mark) :]  # what separates items on a line
    lines = [head]
    fresh = True  # the current line holds no item yet
    for i, item in enumerate(items):
        piece = item + (mark if i < len(items) - 1 else "")
        joined = lines[-1] + ("" if fresh else gap) + piece
        if not fresh and len(joined) > console.width:
            lines.append("  " + piece)
        else:
            lines[-1] = joined
        fresh = False
    for text in lines:
        console.print(text, markup=False, soft_wrap=True)


def unsaved_line(u: dict[str, Any], status: str) -> str:
    """The work logged after the run's last save: where it was, the calls it made."""
    from moscopt.run.state import calls_words

    where = ", ".join(f"{k} {u[k]}" for k in ("epoch", "step", "phase") if u.get(k) is not None)
    redo = (
        "a resume redoes it, with these answers from the cache"
        if status != "running"
        else "saved at the next checkpoint"
    )
    return (
        f"since the last save: {calls_words(u['calls'], u['cache_hits'])}"
        + (f", up to {where}" if where else "")
        + f" ({redo}; not in the figures below)"
    )


def diversity_words(d: dict[str, Any]) -> str:
    """A diversity check in words: `pool similarity 0.62 by minilm (rediversified above 0.85)`."""
    sim, limit = d.get("similarity"), d.get("threshold")
    sim_text = f"{sim:.2f}" if isinstance(sim, int | float) else "?"
    limit_text = f" (rediversified above {limit:.2f})" if isinstance(limit, int | float) else ""
    return f"pool similarity {sim_text} by {d.get('method') or '?'}{limit_text}"
