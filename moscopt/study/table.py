"""The study's table: rows are configurations, each against the full method, as JSON and Markdown.

Columns: test accuracy with its 95% interval; the paired difference to `full` with its
interval, its verdict and how many seeds agree in sign; training calls, tokens and cost (means
over seeds); how many seeds stopped at the budget; wall time. Every field but `wall_seconds`
is a function of the runs' results, so two studies with the same seeds give the same table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moscopt.run.fsio import atomic_write_json, atomic_write_text
from moscopt.study.configurations import FULL, get
from moscopt.study.layout import Manifest, StudyDir, run_name
from moscopt.study.paired import Rows, accuracy, difference, load_rows

CONFIDENCE = 0.95
SECTIONS = (
    ("ablation", "Ablations (the paper's Table 2)"),
    ("deployment", "Deployment modes and the no-skill baseline (the paper's Table 3)"),
)


def build_table(study: StudyDir, manifest: Manifest) -> dict[str, Any]:
    observations: dict[str, dict[int, Rows]] = {}
    records: dict[str, list[dict[str, Any]]] = {}
    failures: dict[str, list[str]] = {}
    for name in manifest.configurations:
        records[name] = []
        observations[name] = {}
        for seed in manifest.seeds:
            record = study.record(run_name(name, seed))
            if record is None:
                continue
            if "failed" in record:
                failures.setdefault(name, []).append(f"s{seed}: {record['failed']}")
                continue
            records[name].append(record)
            observations[name][seed] = load_rows(study.path / record["rows"])
    rows = []
    for name in manifest.configurations:
        row = _row(name, records[name], observations[name], observations.get(FULL, {}), manifest)
        if failures.get(name):
            row["failed"] = failures[name]
            if not records[name]:
                row["summary"] = f"{name}: failed ({'; '.join(failures[name])})"
        rows.append(row)
    return {
        "kind": manifest.kind,
        "benchmark": manifest.benchmark,
        "budget_calls": manifest.budget_calls,
        "seeds": manifest.seeds,
        "repeats": manifest.repeats,
        "reference": FULL,
        "confidence": CONFIDENCE,
        "rows": rows,
    }


def _row(
    name: str,
    records: list[dict[str, Any]],
    mine: dict[int, Rows],
    full: dict[int, Rows],
    manifest: Manifest,
) -> dict[str, Any]:
    conf = get(name)
    row: dict[str, Any] = {
        "configuration": name,
        "what": conf.what,
        "table": conf.table,
        "kind": conf.kind,
        "seeds_finished": sorted(r["seed"] for r in records),
    }
    if not records:
        row["summary"] = f"{name}: not run yet"
        return row
    row["accuracy"] = accuracy(mine).to_json()
    diff = None if name == FULL else difference(mine, full, confidence=CONFIDENCE)
    row["difference"] = diff.to_json() if diff is not None else None
    n = len(records)
    training = [r["training"] for r in records]
    row["training"] = {
        "calls": sum(t["calls"] for t in training) / n,
        "calls_per_seed": {str(r["seed"]): r["training"]["calls"] for r in records},
        "tokens": sum(t["prompt_tokens"] + t["completion_tokens"] for t in training) / n,
        "cost": sum(t["cost"] for t in training) / n,
        "budget": max(int(t.get("budget", 0)) for t in training),
        "stopped_at_budget": sum(bool(t.get("stopped_at_budget")) for t in training),
        "derived_from": FULL if training[0].get("derived_from") else None,
    }
    row["wall_seconds"] = sum(float(r.get("wall_seconds", 0.0)) for r in records) / n
    row["summary"] = summary_line(name, diff)
    stalled = [f"s{r['seed']}" for r in records if r["training"].get("stalled")]
    if stalled:
        row["summary"] += (
            f"; stopped before its budget on {', '.join(stalled)}: every answer it asked for "
            "was already in its cache"
        )
    return row


def summary_line(name: str, diff: Any) -> str:
    """One line: is the difference to the full method distinguishable from noise?"""
    if diff is None:
        return f"{name}: the reference (MOSCOPT as configured)"
    if diff.verdict == "no data":
        return f"{name}: no paired observations with full yet"
    if diff.verdict == "identical":
        return f"{name}: identical to full on every paired task and sample index"
    span = f"{diff.mean:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}] vs full"
    agree = (
        f"{diff.seeds_agreeing}/{len(diff.per_seed)} seeds {'higher' if diff.mean > 0 else 'lower'}"
    )
    if diff.verdict == "indistinguishable":
        return f"{name}: {span}: not distinguishable from noise ({agree}; p={diff.p_value:.2g})"
    word = "better" if diff.verdict == "better" else "worse"
    return f"{name}: {span}: {word} than full, beyond the noise ({agree}; p={diff.p_value:.2g})"


# -- output ---------------------------------------------------------------------------------------


def write_outputs(study: StudyDir, table: dict[str, Any]) -> list[Path]:
    """table.json, table.md and table.svg in the study folder."""
    from moscopt.study.plot import plot_table

    json_path, md_path = study.path / "table.json", study.path / "table.md"
    atomic_write_json(json_path, table)
    plot = plot_table(table, study.path / "table.svg")
    atomic_write_text(md_path, render_markdown(table, plot=plot.name if plot else None))
    return [p for p in (md_path, json_path, plot) if p is not None]


def _pct(v: float) -> str:
    return f"{v:.3f}"


def render_markdown(table: dict[str, Any], *, plot: str | None = None) -> str:
    seeds = table["seeds"]
    lines = [
        f"# Study: {table['kind']} on {table['benchmark']}",
        "",
        f"Training budget: {table['budget_calls']} LLM calls per configuration and seed; "
        f"seeds {', '.join(map(str, seeds))}; test split evaluated with repeats "
        f"`{table['repeats']}`. Differences are paired with `{table['reference']}` (same seed, "
        f"task and sample index); intervals are {int(table['confidence'] * 100)}%.",
        "",
    ]
    header = (
        "| configuration | test accuracy (95% CI) | Δ vs full (95% CI) | verdict | seeds agree "
        "| training calls | tokens | cost | stopped at budget | wall time |"
    )
    for title, rows in _sections(table):
        lines += [f"## {title}", "", header, "|" + "---|" * 10]
        lines += [_markdown_row(r, len(seeds)) for r in rows]
        lines.append("")
    lines += ["## Reading the table", ""]
    lines += [f"- {r['summary']}" for r in table["rows"]]
    lines += [
        "",
        "The interval of a difference covers the evaluation noise of the trained pools (units: "
        "one test task under one seed); `seeds agree` shows whether the seeds, which carry the "
        "training noise, point the same way. A row derived from the full run (static, "
        "distilled) shows the full run's training.",
    ]
    if plot:
        lines += ["", f"![accuracy and paired differences]({plot})"]
    return "\n".join(lines) + "\n"


def _sections(table: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Ablate: Table 2 (with full), then Table 3. Compare: one head-to-head table."""
    rows = table["rows"]
    if table["kind"] != "ablate":
        return [("Head to head at the same budget", rows)]
    out = []
    for key, title in SECTIONS:
        mine = [r for r in rows if r["table"] == key and r["configuration"] != FULL]
        if key == "ablation":
            mine = [r for r in rows if r["configuration"] == FULL] + mine
        if mine:
            out.append((title, mine))
    return out


def _markdown_row(r: dict[str, Any], seeds: int) -> str:
    name = f"`{r['configuration']}`"
    if "accuracy" not in r:
        return f"| {name} | {'failed' if r.get('failed') else 'not run yet'} |" + " |" * 8
    acc = r["accuracy"]
    lo, hi = acc["ci95"]
    cells = [name, f"{_pct(acc['mean'])} [{_pct(lo)}, {_pct(hi)}]"]
    d = r.get("difference")
    if d is None:
        cells += ["reference", "—", "—"]
    else:
        dl, dh = d["ci95"]
        agree = (
            "—" if d["verdict"] == "identical" else f"{d['seeds_agreeing']}/{len(d['per_seed'])}"
        )
        cells += [f"{d['mean']:+.3f} [{dl:+.3f}, {dh:+.3f}]", d["verdict"], agree]
    t = r["training"]
    done = len(r["seeds_finished"])
    derived = " (full's)" if t.get("derived_from") else ""
    cells += [
        f"{t['calls']:g}{derived}",
        f"{t['tokens']:g}",
        f"${t['cost']:.4f}",
        f"{t['stopped_at_budget']}/{done}"
        + ("" if done == seeds else f" ({done}/{seeds} seeds run)"),
        f"{r['wall_seconds']:.1f} s",
    ]
    return "| " + " | ".join(cells) + " |"
