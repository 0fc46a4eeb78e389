"""Which skills a minibatch edits: the skills active in its failed rollouts, the most implicated
first (most failures, then name), at most `max_targets` of them. Skills no longer in the pool
and the gate are never targets here (the gate has its own phase)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from moscopt.run.ledger import RolloutEvent

SUCCESS = 1.0 - 1e-9


@dataclass(frozen=True)
class EditTargets:
    max_targets: int

    def choose(self, rollouts: Sequence[RolloutEvent], pool: Collection[str]) -> list[str]:
        counts: Counter[str] = Counter()
        for r in rollouts:
            if r.reward >= SUCCESS:
                continue
            # step-level gating: every skill selected during the rollout shares the blame once
            active = set(r.skills).union(*map(set, r.selections)) if r.selections else r.skills
            counts.update(s for s in set(active) if s in pool)
        return sorted(counts, key=lambda s: (-counts[s], s))[: self.max_targets]
