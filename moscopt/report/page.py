"""`moscopt report`: a Markdown (or HTML) page about one run, with a learning-curve plot. It holds
the run's settings and totals, the learning curve (validation score per step and cumulative LLM
calls and cost per step, an SVG next to the page), the best validation score per epoch, the
comparison of evaluated deployment modes (from `<run>/exports/eval-*.jsonl`), every edit decision,
every evolution cycle, the run's health and routing (`report.sections`,
`report.routing`) and the final pool with its Q-scores. Apart from the generation time in its
second line, the output is a function of the run directory. The charts are SVG the report writes
itself (`report.plot`): no plotting library is needed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from moscopt.core.stats import mean_ci, repeats_half_width
from moscopt.errors import UserError
from moscopt.report.plot import Curve, draw_curve
from moscopt.report.render import Block, render_html, render_markdown
from moscopt.report.routing import routing_blocks
from moscopt.report.sections import (
    VIEW_KINDS,
    RunViews,
    embed_images,
    extra_blocks,
    side_images,
    views_of,
    with_image,
)
from moscopt.report.tables import edit_links, edits_table, evolution_table, full_edit_blocks
from moscopt.report.tables import fmt as _f
from moscopt.run.eval_files import parse_name
from moscopt.run.fsio import atomic_write_all, check_output_path, iter_jsonl, scrub
from moscopt.run.history import CORE_KINDS, History
from moscopt.run.ledger import LLMCall
from moscopt.run.ledger_read import collector_paused
from moscopt.run.outcomes import outcome_counts, outcome_words
from moscopt.run.rundir import RunDir
from moscopt.run.state import calls_words


@dataclass
class ReportResult:
    path: Path
    plot: Path
    notes: list[str] = field(default_factory=list)


def default_output(run: RunDir, out: Path | None, html_out: bool) -> Path:
    """`out` if it names a file (it has a suffix); `out/report.EXT` for a directory (an existing
    one, or a path without suffix); without `out`, `<run>/report.EXT`."""
    name = "report.html" if html_out else "report.md"
    if out is None:
        return run.path / name
    if out.is_dir() or not out.suffix:
        return out / name
    return out


def write_report(
    run: RunDir,
    out: Path | None = None,
    *,
    html_out: bool = False,
    now: datetime | None = None,
    force: bool = False,
) -> ReportResult:
    """Write the report (and its plot) for `run`; what was written and notes for the user.

    Every file it writes (the page, its plot, the views' images beside a Markdown page) is
    made in memory first: with `out`, any of them that exists is overwritten only with `force`,
    and an `out` that is a symbolic link or lies under a file is refused, before anything is
    written; the run's own report (no `out`) is always overwritten. A write that fails removes
    the files this call had created, so a failed report leaves no stray image."""
    with collector_paused():
        return _write_report(run, out, html_out=html_out, now=now, force=force)


def _write_report(
    run: RunDir, out: Path | None, *, html_out: bool, now: datetime | None, force: bool
) -> ReportResult:
    state = run.load_state()
    # the ledger is read once, for the history (the curve's calls too) and the views
    events = run.read_events(state, CORE_KINDS | VIEW_KINDS)
    history = History(
        run, state, [e for e in events if e.type in CORE_KINDS or e.type == "llm_call"]
    )
    path = default_output(run, out, html_out)
    if out is not None:
        check_output_path(out)
        check_output_path(path)
    plot = path.with_name(f"{path.stem}-curve.svg")
    notes = list(history.warnings)
    svg = draw_curve(learning_curve(history))
    files: dict[Path, bytes] = {plot: svg}
    blocks = build_blocks(run, history, views_of(events), plot, now or datetime.now(UTC))
    if html_out:  # the page stands alone: every image embedded
        blocks = embed_images(with_image(blocks, plot, svg), path.parent)
    else:  # Markdown links the images written beside it
        blocks, images = side_images(blocks, path.stem)
        files.update({path.parent / name: data for name, data in images.items()})
    text = render_html(blocks, run.path.name) if html_out else render_markdown(blocks)
    files[path] = scrub(text).encode("utf-8")
    if out is not None and not force:
        for existing in (p for p in files if p.exists() or p.is_symlink()):
            raise UserError("exists: pass --force to overwrite it", path=existing)
    atomic_write_all(files)
    return ReportResult(path, plot, notes)


# -- data ----------------------------------------------------------------------------------------


def learning_curve(history: History) -> Curve:
    state = history.state
    last = state.step
    calls = [0] * (last + 1)
    cost = [0.0] * (last + 1)
    # llm_call events carry the step they were made at; in v1 logs they carry none, and each
    # call counts towards the step of the next event that names one (the work the call was part
    # of); calls after the last such event, the last step.
    pending_calls, pending_cost, logged = 0, 0.0, False
    for e in history.events:
        if isinstance(e, LLMCall):
            logged = True
            if e.step is not None:
                s = min(max(e.step, 0), last)
                calls[s] += 0 if e.cache_hit else 1
                cost[s] += e.cost
                continue
            pending_calls += 0 if e.cache_hit else 1
            pending_cost += e.cost
        elif isinstance(step := getattr(e, "step", None), int):
            s = min(max(step, 0), last)
            calls[s] += pending_calls
            cost[s] += pending_cost
            pending_calls, pending_cost = 0, 0.0
    calls[last] += pending_calls
    cost[last] += pending_cost
    for s in range(1, last + 1):
        calls[s] += calls[s - 1]
        cost[s] += cost[s - 1]
    edits = [e for e in history.edits if e.after is not None]
    return Curve(
        val=[(p.step, p.score) for p in state.val_history],
        accepted=[
            (e.step, e.after) for e in edits if e.status == "accepted" and e.after is not None
        ],
        rejected=[
            (e.step, e.after) for e in edits if e.status == "rejected" and e.after is not None
        ],
        steps=list(range(last + 1)),
        calls=calls,
        cost=cost,
        logged_calls=logged,
        evolutions=[e.step for e in history.evolutions if e.accepted],
    )


def eval_rows(run: RunDir) -> list[dict[str, Any]]:
    """One row per `exports/eval-<benchmark>-<split>-<mode>.jsonl`: score, 95% CI, tasks, cost."""
    rows = []
    for path in sorted(run.exports_dir.glob("eval-*.jsonl")):
        bench, split, mode = parse_name(path.stem)
        results = list(iter_jsonl(path))
        if not results:
            continue
        by_sample: dict[int, list[float]] = defaultdict(list)
        for r in results:
            by_sample[int(r.get("sample", 0))].append(float(r.get("reward", 0.0)))
        if len(by_sample) > 1:  # repeats: the interval of the repeats' mean (as eval reports it)
            scores = [sum(v) / len(v) for _, v in sorted(by_sample.items())]
            mean = sum(scores) / len(scores)
            half = repeats_half_width(scores)
            low, high = max(0.0, mean - half), min(1.0, mean + half)
        else:
            mean, low, high = mean_ci([float(r.get("reward", 0.0)) for r in results])
        rows.append(
            {
                "file": path.name,
                "benchmark": bench,
                "split": split,
                "mode": mode,
                "score": mean,
                "ci95": [low, high],
                "tasks": len({r.get("task_id") for r in results}),
                "repeats": len(by_sample),
                "calls": sum(int(r.get("calls", 0)) for r in results),
                "cost": sum(float(r.get("cost", 0.0)) for r in results),
            }
        )
    return rows


# -- the plot ------------------------------------------------------------------------------------


def build_blocks(
    run: RunDir, history: History, views: RunViews, plot: Path, now: datetime
) -> list[Block]:
    state = history.state
    config = run.load_config()
    pool = run.load_pool(state)
    edits, evolutions = history.edits, history.evolutions
    first = state.val_history[0].score if state.val_history else None
    final = history.state.cursor.best_val
    best = max((p.score for p in state.val_history), default=None)
    t = state.totals
    blocks: list[Block] = [
        ("h1", f"moscopt report: {run.path.name}"),
        ("p", f"Generated {now.isoformat(timespec='seconds')} from `{run.path}`."),
        (
            "table",
            ["setting", "value"],
            [
                ["benchmark", state.benchmark or "-"],
                ["status", run.condition(state)],
                ["model", config.model],
                ["optimizer model", config.effective_optimizer_model],
                ["N / K", f"{config.pool.n} / {config.pool.k}"],
                ["epochs / steps", f"{state.epoch} / {state.step}"],
                ["validation score", f"{_f(first)} -> {_f(final)} (best {_f(best)})"],
                ["certificate (held-out tasks)", _certificate_cell(run, history)],
                ["edits", outcome_words(outcome_counts(edits))],
                [
                    "evolution cycles",
                    f"{sum(e.accepted for e in evolutions)} accepted of {len(evolutions)}",
                ],
                ["LLM calls", calls_words(t.calls, t.cache_hits)],
                ["tokens", f"{t.prompt_tokens} prompt + {t.completion_tokens} completion"],
                ["cost", f"${t.cost:.4f}"],
            ],
        ),
        ("h2", "Learning curve"),
    ]
    blocks.append(("img", "learning curve", plot.name))
    blocks.append(
        (
            "p",
            "Top: validation score of the current pool per step (line), of accepted edits "
            "(dots) and of rejected candidates (crosses). Bottom: cumulative LLM calls "
            "and cost.",
        )
    )
    per_epoch: dict[int, list[float]] = defaultdict(list)
    for p in state.val_history:
        per_epoch[p.epoch].append(p.score)
    if per_epoch:
        blocks.append(("h2", "Best validation score per epoch"))
        blocks.append(
            (
                "table",
                ["epoch", "best", "last"],
                [[str(e), _f(max(v)), _f(v[-1])] for e, v in sorted(per_epoch.items())],
            )
        )
    evals = eval_rows(run)
    if evals:
        blocks.append(("h2", "Evaluated modes"))
        blocks.append(
            (
                "table",
                [
                    "mode",
                    "benchmark",
                    "split",
                    "score",
                    "95% CI",
                    "tasks",
                    "repeats",
                    "calls",
                    "cost",
                ],
                [
                    [
                        r["mode"],
                        r["benchmark"],
                        r["split"],
                        _f(r["score"]),
                        f"{_f(r['ci95'][0])}-{_f(r['ci95'][1])}",
                        str(r["tasks"]),
                        str(r["repeats"]),
                        str(r["calls"]),
                        f"${r['cost']:.4f}",
                    ]
                    for r in evals
                ],
            )
        )
    blocks.append(("h2", "Edits"))
    blocks.append(edits_table(edits) if edits else ("p", "No edits were proposed."))
    links = edit_links(edits)
    if links is not None:
        blocks.append(links)
    if evolutions:
        blocks.append(("h2", "Evolution"))
        blocks.append(evolution_table(evolutions))
    blocks.extend(extra_blocks(state, config, views))  # moscopt.report.sections
    blocks.extend(routing_blocks(run, state))  # specialization, memory, transfer channels
    blocks.append(("h2", "Final pool"))
    blocks.append(
        (
            "table",
            ["skill", "Q", "activations", "in the pool since"],
            [
                [
                    s.name,
                    _f(state.q.get(s.name)),
                    str(state.activations.get(s.name, 0)),
                    _since(history, s.name),
                ]
                for s in pool
            ]
            + ([["gate", "-", "-", _since(history, "gate")]] if pool.gate is not None else []),
        )
    )
    blocks.extend(full_edit_blocks(edits))
    return blocks


def _since(history: History, name: str) -> str:
    for v in history.versions:
        if name in v.pool or (name == "gate" and v.pool.gate is not None):
            return "start" if v.step is None else f"step {v.step}"
    return "-"


def _certificate_cell(run: RunDir, history: History) -> str:
    """The run's last certificate line (final vs seed pool on held-out tasks), or why none."""
    from moscopt.run.ledger import CertificateEvent

    found = [e for e in history.events if isinstance(e, CertificateEvent)]
    if not found:
        return "none (the run has not ended, or ran with --no-certificate)"
    from moscopt.optimizer.engine.certificate import line

    return line(found[-1], run).removeprefix("certificate: ")
