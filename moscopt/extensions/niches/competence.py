"""Per skill and niche: competence (an EMA of reward, with a count), style overlap between
skills (cosine of their competence vectors, a missing niche counting as 0), pair synergy per
niche (mean reward of the pair's shared rollouts there, 0 until it has `min_shared` of them),
and the pool's specialization index.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from itertools import combinations

from moscopt.embedding import cosine
from moscopt.extensions.niches.records import Competence, NicheState, Shared
from moscopt.run.state import synergy_key

MIN_SHARED = 5  # shared rollouts on a niche before a pair's synergy there is trusted


def observe(
    state: NicheState, niche: str, skills: Iterable[str], reward: float, beta: float
) -> None:
    """One rollout on `niche` in which `skills` were active (each counted once)."""
    active = sorted(set(skills))
    for name in active:
        c = state.competence.setdefault(name, {}).setdefault(niche, Competence())
        c.ema = reward if c.count == 0 else (1 - beta) * c.ema + beta * reward
        c.count += 1
    for a, b in combinations(active, 2):
        s = state.shared.setdefault(synergy_key(a, b), {}).setdefault(niche, Shared())
        s.total += reward
        s.count += 1


def competence(state: NicheState, skill: str, niche: str) -> Competence:
    return state.competence.get(skill, {}).get(niche) or Competence()


def niches_of(state: NicheState) -> list[str]:
    return sorted({n for by_niche in state.competence.values() for n in by_niche})


def vector(state: NicheState, skill: str, niches: Sequence[str]) -> list[float]:
    return [competence(state, skill, n).ema for n in niches]


def style_overlap(state: NicheState, a: str, b: str) -> float:
    """Cosine of the two skills' competence vectors over every niche seen."""
    niches = niches_of(state)
    return cosine(vector(state, a, niches), vector(state, b, niches))


def synergy(state: NicheState, a: str, b: str, niche: str, min_shared: int = MIN_SHARED) -> float:
    """Mean reward of the pair's shared rollouts on `niche`; 0.0 until there are `min_shared`."""
    s = state.shared.get(synergy_key(a, b), {}).get(niche)
    if s is None or s.count < min_shared:
        return 0.0
    return s.total / s.count


def specialization_index(state: NicheState, skills: Collection[str]) -> float:
    """How concentrated each skill's work is on few niches, in [0, 1]: one minus the normalised
    entropy of its rollouts over the niches, averaged over `skills` weighted by their rollouts.
    0: every skill works evenly on every niche; 1: each skill works on one niche only."""
    niches = niches_of(state)
    if len(niches) < 2:
        return 0.0
    return concentration(
        [[competence(state, name, n).count for n in niches] for name in sorted(skills)]
    )


def concentration(rows: Iterable[Sequence[int]]) -> float:
    """One minus the normalised entropy of each row (a skill's counts over the same niches, at
    least two), averaged over the rows weighted by their totals; 0.0 when every row is empty."""
    total, weighted = 0, 0.0
    for counts in rows:
        n = sum(counts)
        if n == 0:
            continue
        entropy = -sum(c / n * math.log(c / n) for c in counts if c)
        weighted += n * (1 - entropy / math.log(len(counts)))
        total += n
    return weighted / total if total else 0.0


def competence_gap(state: NicheState, skills: Collection[str], niche: str, min_count: int) -> float:
    """Best minus mean competence on `niche` among `skills` with `min_count` rollouts there."""
    seen = [competence(state, s, niche) for s in skills]
    values = [c.ema for c in seen if c.count >= min_count]
    return max(values) - sum(values) / len(values) if values else 0.0
