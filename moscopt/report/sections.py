"""The report's views of how a run went, beyond the learning curve (`moscopt.report.page` assembles
them): the gate's fallback rate, acceptance rate, wall time and latency, tokens by purpose,
per-skill Q over time, activations by task niche, and the synergy matrix.

Every view is a function of the run directory. Q over time is replayed from the logged
rollouts with the run's β (a newborn's prior from evolution is not replayed: its curve starts
at its first minibatch). Niches come from the benchmark's niche field (the offline benchmark's
family), else from the run's niche assignments, else every task is in one niche `all`.
The plots are SVG (`moscopt.report.plot`); the HTML report embeds them.
"""

from __future__ import annotations

import base64
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from moscopt.config import Config
from moscopt.core.credit import Q_PRIOR
from moscopt.report.plot import draw_heatmap, draw_lines
from moscopt.report.render import Block
from moscopt.routing.gate import (
    GATE_ANSWERS,
    HIGH_FALLBACK,
    PARSE_FAILURES,
    constrained_gate,
    fallback_hint,
)
from moscopt.run.call_timing import queueing_words
from moscopt.run.ledger import EditEvent, Event, LLMCall, RolloutEvent
from moscopt.run.state import RunState


@dataclass
class RunViews:
    """What the views need, read once from the ledger."""

    rollouts: list[RolloutEvent]
    calls: list[LLMCall]
    edits: list[EditEvent]
    times: list[datetime] = field(default_factory=list)


# the ledger's kinds the views read (the page reads them with the history's, in one pass)
VIEW_KINDS = frozenset({"rollout", "llm_call", "edit", "train_start", "epoch_end", "validation"})


def views_of(events: Sequence[Event]) -> RunViews:
    """The views' data from the run's events (those of `VIEW_KINDS` are used)."""
    events = [e for e in events if e.type in VIEW_KINDS]
    times = sorted(t for t in (_time(e.t) for e in events) if t is not None)
    return RunViews(
        rollouts=[e for e in events if isinstance(e, RolloutEvent)],
        calls=[e for e in events if isinstance(e, LLMCall)],
        edits=[e for e in events if isinstance(e, EditEvent)],
        times=times,
    )


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


# -- numbers -------------------------------------------------------------------------------------


def gate_fallback(rollouts: Sequence[RolloutEvent]) -> tuple[int, int]:
    """(gate answers that fell back or were partial, gate answers) over every selection."""
    failed = answered = 0
    for r in rollouts:
        for source in r.sources or [r.activation]:
            answered += source in GATE_ANSWERS
            failed += source in PARSE_FAILURES
    return failed, answered


def fallback_note(failed: int, answered: int, constrained: bool) -> str | None:
    """The hint to give when the gate's answers fall back too often (None: they do not)."""
    if not answered or failed / answered <= HIGH_FALLBACK:
        return None
    hint = fallback_hint(failed / answered, constrained)
    return f"{failed} of {answered} gate answers fell back: {hint}."


def q_over_time(
    rollouts: Sequence[RolloutEvent], beta: float, prior: float = Q_PRIOR
) -> dict[str, list[tuple[int, float]]]:
    """Per skill, (step, Q) after each skill-editing minibatch, replayed from the rollouts by
    the trainer's own rule (`core.credit.assign_credit`, from the prior `credit.q_prior`), so
    a skill's last point is the Q that `status` and the final pool show (but for a newborn of
    evolution, whose starting Q is not replayed)."""
    from moscopt.core.credit import Outcome, assign_credit
    from moscopt.run.state import RunState

    batches: dict[tuple[int, int, int], list[RolloutEvent]] = defaultdict(list)
    for r in rollouts:
        if r.phase in ("", "skills"):
            batches[(r.epoch, r.step, r.batch)].append(r)
    scratch = RunState()
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for (_, step, _), batch in sorted(batches.items()):
        outcomes = [Outcome(r.skills, r.reward, r.selections) for r in batch]
        for name in assign_credit(scratch, outcomes, beta, prior):
            out[name].append((step, scratch.q[name]))
    return dict(out)


def activations_by_niche(
    rollouts: Sequence[RolloutEvent], niche_of: Mapping[str, str]
) -> tuple[list[str], list[str], dict[tuple[str, str], int]]:
    """(skills, niches, count per (skill, niche)) of the training rollouts' selections."""
    counts: Counter[tuple[str, str]] = Counter()
    for r in rollouts:
        niche = niche_of.get(r.task_id, "all")
        for selection in r.selections or [r.skills]:
            for name in selection:
                counts[(name, niche)] += 1
    skills = sorted({s for s, _ in counts})
    niches = sorted({n for _, n in counts})
    return skills, niches, dict(counts)


def task_niches(config: Config, state: RunState) -> tuple[dict[str, str], str]:
    """Task id -> niche, and where the niches come from (for the report's text)."""
    assigned = dict(getattr(getattr(state, "niches", None), "assigned", {}) or {})
    try:
        from moscopt.app.benchmark import checked_splits, named_benchmark
        from moscopt.extensions.niches.assign import niche_key

        bench = named_benchmark(config, state.benchmark)
        key = niche_key(bench.spec)
        if key is not None:  # the data is read only for a benchmark whose tasks name a niche
            tasks = checked_splits(bench, config, ())["all"]
            return {t.id: str(t.meta.get(key, "unknown")) for t in tasks}, (
                f"the benchmark's `{key}` field"
            )
    except Exception:  # no data here, a Python-task run, ...: fall back to what the run has
        pass
    if assigned:
        return {k: str(v) for k, v in assigned.items()}, "the run's niche assignments"
    return {}, "none (every task is in `all`)"


def calls_by_purpose(calls: Sequence[LLMCall]) -> list[list[str]]:
    groups: dict[str, list[LLMCall]] = defaultdict(list)
    for c in calls:
        groups[c.purpose.split("-", 1)[0] if c.purpose.startswith("evolve") else c.purpose].append(
            c
        )
    rows = []
    for purpose, group in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        made = [c for c in group if not c.cache_hit]
        lat = sorted(c.latency for c in made)
        rows.append(
            [
                purpose,
                str(len(made)),
                str(len(group) - len(made)),
                str(sum(c.prompt_tokens for c in group)),
                str(sum(c.completion_tokens for c in group)),
                f"${sum(c.cost for c in group):.4f}",
                f"{sum(lat) / len(lat):.2f}" if lat else "-",
                f"{lat[min(len(lat) - 1, int(0.95 * len(lat)))]:.2f}" if lat else "-",
            ]
        )
    return rows


# -- blocks --------------------------------------------------------------------------------------


def extra_blocks(state: RunState, config: Config, views: RunViews) -> list[Block]:
    """The report's sections after the evaluated modes (see the module docstring)."""
    beta = config.credit.beta
    blocks: list[Block] = []
    failed, answered = gate_fallback(views.rollouts)
    decided = [e for e in views.edits if e.status in ("accepted", "rejected")]
    accepted = sum(e.status == "accepted" for e in decided)
    wall = (views.times[-1] - views.times[0]).total_seconds() if len(views.times) > 1 else 0.0
    made = [c for c in views.calls if not c.cache_hit]
    lat = sorted(c.latency for c in made)
    rows = [
        [
            "gate fallback rate",
            f"{failed}/{answered}" + (f" ({failed / answered:.0%})" if answered else ""),
        ],
        [
            "acceptance rate",
            f"{accepted}/{len(decided)}" + (f" ({accepted / len(decided):.0%})" if decided else ""),
        ],
        ["wall time (first to last event)", _duration(wall)],
        [
            "LLM call latency (asked to answered)",
            f"mean {sum(lat) / len(lat):.2f} s, p95 {lat[int(0.95 * (len(lat) - 1))]:.2f} s"
            if lat
            else "-",
        ],
    ]
    if (queueing := queueing_words(made)) is not None:
        rows.append(["of which, queueing", queueing])
    blocks += [("h2", "Run health"), ("table", ["measure", "value"], rows)]
    note = fallback_note(failed, answered, constrained_gate(config.model, config.gating.output))
    if note:
        blocks.append(("p", f"Note: {note}"))
    if views.calls:
        blocks.append(("h2", "LLM calls and tokens by purpose"))
        headers = ["purpose", "calls", "+ from the cache", "prompt tok", "completion tok", "cost"]
        blocks.append(("table", [*headers, "mean s", "p95 s"], calls_by_purpose(views.calls)))
    curves = q_over_time(views.rollouts, beta, config.credit.q_prior)
    if curves:
        blocks.append(("h2", "Q-scores over time"))
        steps = {step for points in curves.values() for step, _ in points}
        svg = draw_lines(curves, "step", "Q") if len(steps) > 1 else None
        if svg is not None:
            blocks.append(("img", "Q-scores over time", "q-over-time.svg", svg))
        elif len(steps) == 1:  # one point per skill is a value, not a curve: the table has it
            blocks.append(("p", f"One skill-editing minibatch (step {min(steps)}): no curve."))
        blocks.append(
            (
                "p",
                "Q of each skill after each skill-editing minibatch, replayed from the logged "
                f"rollouts by the trainer's rule (β = {beta}, from the prior "
                f"{config.credit.q_prior}): `last` is the Q of the final pool and of `status` "
                "(a newborn of evolution starts from the survivors' mean, not replayed here).",
            )
        )
        blocks.append(
            (
                "table",
                ["skill", "first", "last", "minibatches"],
                [
                    [n, f"{c[0][1]:.3f}", f"{c[-1][1]:.3f}", str(len(c))]
                    for n, c in sorted(curves.items())
                ],
            )
        )
    niche_of, source = task_niches(config, state)
    skills, niches, counts = activations_by_niche(views.rollouts, niche_of)
    if skills:
        blocks.append(("h2", "Activations by task niche"))
        svg = draw_heatmap(skills, niches, counts)
        blocks.append(("img", "activations by niche", "activations.svg", svg))
        blocks.append(
            (
                "p",
                f"Selections per skill and niche over the training rollouts; niches from {source}.",
            )
        )
        blocks.append(
            (
                "table",
                ["skill", *niches],
                [[s, *(str(counts.get((s, n), 0)) for n in niches)] for s in skills],
            )
        )
    if state.synergy:
        names = sorted({n for key in state.synergy for n in key.split("|")})
        blocks.append(("h2", "Synergy"))
        blocks.append(("p", "C(i, j): successful rollouts in which both skills were active."))
        grid = [
            [
                a,
                *(
                    "-" if a == b else str(state.synergy.get("|".join(sorted((a, b))), 0))
                    for b in names
                ),
            ]
            for a in names
        ]
        blocks.append(("table", ["", *names], grid))
    return blocks


def _duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h {m:02d}m {s:02d}s" if h else f"{m}m {s:02d}s"


# -- plots and embedding -------------------------------------------------------------------------


def embed_images(blocks: list[Block], folder: Path, stem: str = "") -> list[Block]:
    """Every image as a `data:` URI, so that the HTML page stands alone (mail it, attach it)."""
    out: list[Block] = []
    for block in blocks:
        if block[0] == "img":
            data = block[3] if len(block) > 3 else _read(folder / block[2])
            if data is not None:
                uri = "data:image/svg+xml;base64," + base64.b64encode(data).decode()
                block = ("img", block[1], uri)
        out.append(block)
    return out


def with_image(blocks: list[Block], plot: Path, svg: bytes) -> list[Block]:
    """`blocks` with the learning curve's image carrying its bytes (not read back from disk)."""
    return [(*b, svg) if b[0] == "img" and len(b) == 3 and b[2] == plot.name else b for b in blocks]


def side_images(blocks: Sequence[Block], stem: str) -> tuple[list[Block], dict[str, bytes]]:
    """For Markdown: the blocks linking the views' images as `<stem>-<name>` (the page's stem, as
    its learning curve `<stem>-curve.svg`: two reports in one folder never share an image), and
    those files' names and bytes, for the caller to check and write beside the page."""
    out: list[Block] = []
    files: dict[str, bytes] = {}
    for block in blocks:
        if block[0] == "img" and len(block) > 3:
            name = f"{stem}-{block[2]}"
            files[name] = block[3]
            block = ("img", block[1], name)
        out.append(block)
    return out, files


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
