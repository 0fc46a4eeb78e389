"""The lifecycle evolution policy (`evolution.policy: lifecycle`): fork, merge, prune and seed
skills under performance pressure, the pool's size staying within [floor, n_max], the floor being
`n_min` and, unless the gate activates everything (`gating.policy: all`), K + 1: a pool of K
skills or fewer leaves the gate nothing to choose (the K = N case the paper warns about).

Per cycle, at most one operator of each kind, in this order (removals before additions), each
planned against the pool the previous one left and validated like an evolution cycle (the
acceptance policy, `non_inferior`):
- prune: a skill whose Q stayed below `prune_ratio` x the pool's mean Q for `prune_window`
  consecutive evaluations (minibatches in which it was active); the longest streak first;
- merge: two skills whose competence profiles have cosine > `merge_cosine`, each with at least
  `merge_min_tasks` rollouts: one child (the crossover prompt) replaces both;
- fork: a skill of the top `fork_top` share by Q that dominates a niche (its competence there
  leads every other skill working on it by `fork_lead`) gets a specialist for that niche beside
  it (the `lifecycle_fork` prompt), unless the niche already has a forked specialist;
- seed: a niche where no skill working on it reaches `seed_below` gets a new skill written for
  it (the `lifecycle_seed` prompt).
Planning is pure (`plan_*`); `lifecycle_cycle` asks for the new skills, validates and records a
`lifecycle` event per operator. Accepted: removed skills lose their statistics, newborns start
from the survivors' mean Q with no activations, as after an evolution cycle.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from moscopt.config import Config, LifecycleConfig
from moscopt.extensions.niches.competence import competence, niches_of, style_overlap
from moscopt.extensions.niches.records import NicheState

if TYPE_CHECKING:
    from moscopt.core.skills import Pool

OpKind = Literal["prune", "merge", "fork", "seed"]
EXAMPLES = 3  # tasks of the niche shown to a fork or seed request


@dataclass(frozen=True)
class Op:
    kind: OpKind
    skills: tuple[str, ...]  # acted on (pruned, merged, forked); empty for seed
    niche: str | None
    reason: str


def update_streaks(
    state: NicheState,
    q: Mapping[str, float],
    pool: Sequence[str],
    active: Collection[str],
    ratio: float,
) -> None:
    """One evaluation of each `active` skill: its streak of Q below `ratio` x the pool's mean."""
    scored = [q[n] for n in pool if n in q]
    mean = sum(scored) / len(scored) if scored else 0.0
    for name in sorted(set(active) & set(pool)):
        state.evaluations[name] = state.evaluations.get(name, 0) + 1
        weak = name in q and q[name] < ratio * mean
        state.below[name] = state.below.get(name, 0) + 1 if weak else 0


def min_size(config: Config) -> int:
    """The smallest pool the lifecycle may leave: `n_min`, and more than K unless the gate
    activates every skill anyway (`gating.policy: all`)."""
    n_min = config.niches.lifecycle.n_min
    return n_min if config.gating.policy == "all" else max(n_min, config.pool.k + 1)


def plan_prune(
    state: NicheState, pool: Sequence[str], cfg: LifecycleConfig, floor: int
) -> Op | None:
    """`floor`: `min_size` (the pool keeps at least that many skills)."""
    if len(pool) <= floor:
        return None
    due = [n for n in pool if state.below.get(n, 0) >= cfg.prune_window]
    if not due:
        return None
    name = min(due, key=lambda n: (-state.below[n], n))
    reason = f"Q below {cfg.prune_ratio} x the pool's mean for {state.below[name]} evaluations"
    return Op("prune", (name,), None, reason)


def plan_merge(
    state: NicheState, pool: Sequence[str], cfg: LifecycleConfig, floor: int
) -> Op | None:
    if len(pool) <= floor:
        return None
    mature = [n for n in pool if rollouts(state, n) >= cfg.merge_min_tasks]
    best: tuple[float, str, str] | None = None
    for i, a in enumerate(mature):
        for b in mature[i + 1 :]:
            cos = style_overlap(state, a, b)
            if cos > cfg.merge_cosine and (best is None or (-cos, a, b) < best):
                best = (-cos, a, b)
    if best is None:
        return None
    return Op("merge", (best[1], best[2]), None, f"competence profiles alike ({-best[0]:.3f})")


def plan_fork(
    state: NicheState,
    q: Mapping[str, float],
    pool: Sequence[str],
    cfg: LifecycleConfig,
    min_count: int,
    forked: Collection[str] = (),
) -> Op | None:
    if len(pool) >= cfg.n_max:
        return None
    ranked = sorted((n for n in pool if n in q), key=lambda n: (-q[n], n))
    top = ranked[: max(1, math.ceil(cfg.fork_top * len(ranked)))]
    for name in top:
        for niche in niches_of(state):
            mine = competence(state, name, niche)
            if mine.count < min_count or niche in forked:
                continue
            others = [competence(state, o, niche) for o in pool if o != name]
            rivals = [c.ema for c in others if c.count >= min_count]
            lead = mine.ema - max(rivals, default=0.0)
            if lead >= cfg.fork_lead:
                return Op("fork", (name,), niche, f"leads niche {niche} by {lead:.2f}")
    return None


def plan_seed(
    state: NicheState, pool: Sequence[str], cfg: LifecycleConfig, min_count: int
) -> Op | None:
    if len(pool) >= cfg.n_max:
        return None
    for niche in niches_of(state):
        working = [competence(state, n, niche) for n in pool]
        seen = sum(c.count for c in working)
        best = max((c.ema for c in working if c.count >= min_count), default=None)
        if seen >= min_count and (best is None or best < cfg.seed_below):
            shown = "none" if best is None else f"{best:.2f}"
            return Op("seed", (), niche, f"no competent skill (best {shown})")
    return None


def forked(pool: Pool) -> set[str]:
    """Niches that already have a specialist forked for them in `pool` (never forked twice)."""
    origins = [str((s.metadata or {}).get("origin", "")) for s in pool]
    return {o.split(":", 1)[1] for o in origins if o.startswith("fork:")}


def rollouts(state: NicheState, name: str) -> int:
    return sum(c.count for c in state.competence.get(name, {}).values())
