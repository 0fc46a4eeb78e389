"""`moscopt report`: a Markdown (or HTML) page about one run, with a learning-curve plot.

The page holds the run's settings and totals, the learning curve (validation score per step and
cumulative LLM calls and cost per step, a PNG next to the page), the best validation score per
epoch, the comparison of evaluated deployment modes (from `<run>/exports/eval-*.jsonl`), every
edit decision, every evolution cycle, the run's health and routing (`moscopt.report.sections`,
`moscopt.report.routing`) and the final pool with its Q-scores. Apart from the
generation time in its second line, the output is a function of the run directory.

matplotlib is optional (`pip install moscopt[report]`) and imported only to draw; without it
the page is written without the plot and says so.
"""

from __future__ import annotations

import io
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from moscopt.core.stats import mean_ci, repeats_half_width
from moscopt.errors import UserError
from moscopt.report.render import Block, render_html, render_markdown
from moscopt.report.routing import routing_blocks
from moscopt.report.sections import embed_images, extra_blocks, write_images
from moscopt.report.tables import edits_table, evolution_table
from moscopt.report.tables import fmt as _f
from moscopt.run.fsio import atomic_write_bytes, atomic_write_text, iter_jsonl
from moscopt.run.history import CORE_KINDS, History
from moscopt.run.ledger import LLMCall
from moscopt.run.outcomes import outcome_counts, outcome_words
from moscopt.run.rundir import RunDir


@dataclass
class ReportResult:
    path: Path
    plot: Path | None
    notes: list[str] = field(default_factory=list)


@dataclass
class Curve:
    """The learning curve: the current pool's validation score and the spending, per step."""

    val: list[tuple[int, float]]  # (step, score) in order, from state.val_history
    accepted: list[tuple[int, float]]  # validation score of accepted candidates
    rejected: list[tuple[int, float]]  # ... and of rejected ones
    steps: list[int]  # 0..state.step
    calls: list[int]  # cumulative LLM calls (cache hits excluded) at the end of each step
    cost: list[float]  # cumulative cost ($) at the end of each step
    logged_calls: bool  # False: the run logged no llm_call events (nothing to plot)
    evolutions: list[int] = field(default_factory=list)  # steps of kept evolution cycles


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

    A file `out` names (the page or its plot) that exists is overwritten only with `force`;
    the run's own report (no `out`) always is."""
    state = run.load_state()
    history = History.load(run, state, kinds=CORE_KINDS | {"llm_call"})
    path = default_output(run, out, html_out)
    plot_path = path.with_name(f"{path.stem}-curve.png")
    if out is not None and not force:
        for existing in (p for p in (path, plot_path) if p.exists()):
            raise UserError("exists: pass --force to overwrite it", path=existing)
    curve = learning_curve(history)
    notes = list(history.warnings)
    png = draw_curve(curve)
    if png is None:
        notes.append(
            "matplotlib is not installed: report written without the learning-curve plot "
            "(pip install 'moscopt[report]')"
        )
        plot: Path | None = None
    else:
        atomic_write_bytes(plot_path, png)
        plot = plot_path
    blocks = build_blocks(run, history, plot, now or datetime.now(UTC))
    # the HTML page stands alone (images embedded); Markdown links PNGs written beside it
    place = embed_images if html_out else write_images
    blocks = place(blocks, path.parent, run.path.name)
    text = render_html(blocks, run.path.name) if html_out else render_markdown(blocks)
    atomic_write_text(path, text)
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
        parts = path.stem[len("eval-") :].rsplit("-", 2)
        bench, split, mode = parts if len(parts) == 3 else ("?", "?", path.stem)
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


def draw_curve(curve: Curve) -> bytes | None:
    """The learning curve as PNG bytes; None if matplotlib is not installed."""
    fig = curve_figure(curve)
    if fig is None:
        return None
    buf = io.BytesIO()
    # no Software/date metadata: the same run gives the same bytes
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def curve_figure(curve: Curve) -> Any:
    """The learning curve's matplotlib `Figure` (None without matplotlib). Counts and cost
    start at zero; a run of a single step has no curve to draw, so its calls and cost are
    written as values."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    fig = Figure(figsize=(7.5, 5.5), dpi=100)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    if curve.val:
        xs, ys = zip(*curve.val, strict=True)
        top.step(xs, ys, where="post", color="tab:blue", label="current pool", marker=".")
    if curve.rejected:
        xs, ys = zip(*curve.rejected, strict=True)
        top.scatter(xs, ys, marker="x", color="tab:gray", label="rejected candidate", zorder=3)
    if curve.accepted:
        xs, ys = zip(*curve.accepted, strict=True)
        top.scatter(xs, ys, marker="o", color="tab:green", label="accepted edit", zorder=4)
    for i, step in enumerate(curve.evolutions):
        label = "evolution accepted" if i == 0 else None
        top.axvline(step, color="tab:red", linestyle=":", alpha=0.6, label=label)
    top.set_ylabel("validation score")
    top.set_ylim(-0.05, 1.05)  # a score at 0 or 1 stays visible
    top.grid(alpha=0.3)
    if top.get_legend_handles_labels()[0]:
        top.legend(loc="lower right", fontsize="small")
    if not curve.logged_calls:
        _say(bottom, "no LLM calls logged")
    elif len(curve.steps) < 2:  # one point is a value, not a curve
        _say(bottom, f"{curve.calls[-1]} LLM calls, ${curve.cost[-1]:.4f} (one step: no curve)")
    else:
        bottom.plot(curve.steps, curve.calls, color="tab:purple", label="LLM calls", marker=".")
        bottom.set_ylabel("cumulative calls")
        bottom.set_ylim(0, max(1, max(curve.calls)) * 1.05)  # from zero: step 0 is seen
        twin = bottom.twinx()
        twin.plot(curve.steps, curve.cost, color="tab:orange", linestyle="--", label="cost")
        twin.set_ylabel("cumulative cost ($)")
        most = max(curve.cost)
        twin.set_ylim(0, most * 1.05 if most > 0 else 1.0)  # no cost: $0, never below
        lines = bottom.get_lines() + twin.get_lines()
        bottom.legend(
            lines, [str(x.get_label()) for x in lines], loc="upper left", fontsize="small"
        )
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    from matplotlib.ticker import MaxNLocator

    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    if curve.steps:
        bottom.set_xlim(-0.2, max(1, max(curve.steps)) + 0.2)
    fig.tight_layout()
    return fig


def _say(ax: Any, text: str) -> None:
    """`text` in the middle of `ax`, instead of a plot."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_yticks([])


# -- the page ------------------------------------------------------------------------------------


def build_blocks(run: RunDir, history: History, plot: Path | None, now: datetime) -> list[Block]:
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
                ["edits", outcome_words(outcome_counts(edits))],
                [
                    "evolution cycles",
                    f"{sum(e.accepted for e in evolutions)} accepted of {len(evolutions)}",
                ],
                ["LLM calls", f"{t.calls} (cache hits {t.cache_hits})"],
                ["tokens", f"{t.prompt_tokens} prompt + {t.completion_tokens} completion"],
                ["cost", f"${t.cost:.4f}"],
            ],
        ),
        ("h2", "Learning curve"),
    ]
    if plot is not None:
        blocks.append(("img", "learning curve", plot.name))
        blocks.append(
            (
                "p",
                "Top: validation score of the current pool per step (line), of accepted edits "
                "(dots) and of rejected candidates (crosses). Bottom: cumulative LLM calls "
                "and cost.",
            )
        )
    else:
        blocks.append(
            ("p", "(no plot: matplotlib is not installed; `pip install 'moscopt[report]'`)")
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
    if evolutions:
        blocks.append(("h2", "Evolution"))
        blocks.append(evolution_table(evolutions))
    blocks.extend(extra_blocks(run, state, config))  # moscopt.report.sections
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
    return blocks


def _since(history: History, name: str) -> str:
    for v in history.versions:
        if name in v.pool or (name == "gate" and v.pool.gate is not None):
            return "start" if v.step is None else f"step {v.step}"
    return "-"
