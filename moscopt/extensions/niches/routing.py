"""Who gives and who receives an insight on a niche: pure questions over `NicheState`.

Only skills that work on the niche take part: a skill with fewer than `min_count` rollouts
there is neither a giver nor a recipient (an insight is not sent to a skill whose niche it is
not). Among the rest, `best` is the highest competence; givers are within `margin` of it (the
strongest first), recipients are below `best - margin`. Ties are broken by name.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from moscopt.extensions.niches.competence import competence
from moscopt.extensions.niches.records import NicheState


@dataclass(frozen=True)
class TransferRouting:
    margin: float
    min_count: int

    def working(self, state: NicheState, niche: str, pool: Collection[str]) -> list[str]:
        return sorted(s for s in pool if competence(state, s, niche).count >= self.min_count)

    def best(self, state: NicheState, niche: str, pool: Collection[str]) -> float | None:
        values = [competence(state, s, niche).ema for s in self.working(state, niche, pool)]
        return max(values) if values else None

    def givers(self, state: NicheState, niche: str, pool: Collection[str]) -> list[str]:
        """Skills strong on `niche`, strongest first (empty when no skill has any success)."""
        best = self.best(state, niche, pool)
        if best is None or best <= 0:
            return []
        strong = [
            s
            for s in self.working(state, niche, pool)
            if competence(state, s, niche).ema >= best - self.margin
        ]
        return sorted(strong, key=lambda s: (-competence(state, s, niche).ema, s))

    def recipients(self, state: NicheState, niche: str, pool: Collection[str]) -> list[str]:
        """Skills weak on `niche`: below the niche's best by more than the margin."""
        best = self.best(state, niche, pool)
        if best is None:
            return []
        return [
            s
            for s in self.working(state, niche, pool)
            if competence(state, s, niche).ema < best - self.margin
        ]
