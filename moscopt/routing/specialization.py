"""How specialised the skills' work is: the per-niche distribution of activations.

From a run's rollout events (every skill active in a rollout, each counted once) grouped by
the task's niche (its benchmark label: the offline family, MATH's subject, BBH's task; see
`moscopt.extensions.niches.assign.niche_key`). The index is the one `moscopt.extensions.niches`
reports from its
competence counts: one minus the normalised entropy of each skill's activations over the
niches, averaged over skills weighted by their activations. 0: every skill is activated evenly
on every niche; 1: each skill only on one niche. Next to it, per niche, the share of its top
skill (1.0: one skill takes all of the niche's tasks), and the index per epoch (the trend).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from moscopt.extensions.niches.competence import concentration
from moscopt.run.ledger_read import read_events

if TYPE_CHECKING:
    from moscopt.run.ledger import RolloutEvent
    from moscopt.run.rundir import RunDir

Counts = Mapping[str, Mapping[str, int]]  # niche -> skill -> activations


def specialization_index(counts: Counts) -> float:
    """1 - normalised entropy of each skill's activations over the niches, weighted by its
    activations (0.0 with fewer than two niches or no activation)."""
    niches = sorted(n for n, by_skill in counts.items() if any(by_skill.values()))
    if len(niches) < 2:
        return 0.0
    per_skill: dict[str, list[int]] = defaultdict(lambda: [0] * len(niches))
    for j, niche in enumerate(niches):
        for skill, c in counts[niche].items():
            per_skill[skill][j] += c
    return concentration(per_skill.values())


def activation_counts(
    rollouts: Iterable[RolloutEvent], niche_of: Callable[[str], str | None]
) -> dict[str, Counter[str]]:
    """niche -> skill -> activations, over every selection of each rollout."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rollouts:
        niche = niche_of(r.task_id)
        if niche is None:
            continue
        active = dict.fromkeys(s for sel in (r.selections or [r.skills]) for s in sel)
        counts[niche].update(list(active))
    return dict(counts)


def summarize(counts: Counts) -> dict[str, Any]:
    """The index and, per niche, its activations, top skill and that skill's share."""
    niches = {}
    for niche in sorted(counts):
        by_skill = Counter(counts[niche])
        n = sum(by_skill.values())
        if n == 0:
            continue
        top, c = min(by_skill.items(), key=lambda kv: (-kv[1], kv[0]))
        niches[niche] = {"activations": n, "top": top, "share": round(c / n, 4)}
    return {"index": round(specialization_index(counts), 4), "niches": niches}


def run_specialization(
    run: RunDir, niche_of: Callable[[str], str | None] | None = None
) -> dict[str, Any]:
    """The specialization of a run's routing (see the module docstring), as plain data:
    `index`, `niches` (per niche: activations, top skill, its share), `by_epoch` (the index of
    each epoch's rollouts). `niche_of` maps a task id to its niche; by default the run's
    benchmark labels are used, and without labels `index` is None with the `reason`."""
    from moscopt.run.ledger import RolloutEvent

    state = run.load_state()
    if niche_of is None:
        niche_of, reason = _benchmark_niches(run)
        if niche_of is None:
            return {"index": None, "reason": reason, "niches": {}, "by_epoch": {}}
    events = read_events(run.events.path, upto=state.events_bytes or None, kinds={"rollout"})
    rollouts = [e for e in events if isinstance(e, RolloutEvent)]
    by_epoch: dict[int, list[RolloutEvent]] = defaultdict(list)
    for r in rollouts:
        by_epoch[r.epoch].append(r)
    out = summarize(activation_counts(rollouts, niche_of))
    out["by_epoch"] = {
        str(e): round(specialization_index(activation_counts(rs, niche_of)), 4)
        for e, rs in sorted(by_epoch.items())
    }
    return out


def _benchmark_niches(run: RunDir) -> tuple[Callable[[str], str | None] | None, str]:
    from moscopt.app.benchmark import resolve_benchmark
    from moscopt.config import load_config
    from moscopt.errors import UserError
    from moscopt.extensions.niches.assign import niche_key

    try:
        config = load_config(run.config_path)
        bench, splits = resolve_benchmark(config, run.load_state().benchmark)
    except UserError as e:
        return None, f"the run's benchmark cannot be loaded: {e}"
    key = niche_key(bench.spec)
    if key is None:
        return None, f"the tasks of '{bench.name}' have no niche label"
    niches = {t.id: t.meta.get(key) for t in splits["all"]}
    return (lambda task_id: _label(niches.get(task_id))), ""


def _label(value: Any) -> str | None:
    return None if value is None or str(value) == "" else str(value)
