"""Who an evolution cycle eliminates, reproduces and replaces.

`EvolutionSelection` holds the credit statistics of one cycle (Q-scores, activations, synergy
counts C(i, j) keyed "a|b") and answers pure questions about a list of skill names; it never
calls an LLM and never mutates anything. Vocabulary used by every rule:

- *ranked*: a skill with at least `c_min` activations (its Q-score is trusted);
- *protected*: a member of a pair with C(i, j) > `protect_above`;
- *newborn*: a skill added by this very cycle (it has no Q-score of its own yet);
- *eligible* (may be replaced or eliminated): ranked, not protected, not a newborn.

Ties are broken by name, so every answer is deterministic.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from moscopt.config import Config
from moscopt.core.credit import Q_PRIOR, q_of
from moscopt.run.state import RunState


@dataclass(frozen=True)
class EvolutionSelection:
    q: Mapping[str, float]
    activations: Mapping[str, int]
    synergy: Mapping[str, int]
    c_min: int
    protect_above: int
    prior: float = Q_PRIOR  # credit.q_prior: the Q of a skill never scored

    @classmethod
    def of(cls, state: RunState, config: Config) -> EvolutionSelection:
        """The selection for `state`'s statistics and `config.credit`'s thresholds."""
        return cls(
            q=state.q,
            activations=state.activations,
            synergy=state.synergy,
            c_min=config.credit.c_min,
            protect_above=config.credit.synergy_protect,
            prior=config.credit.q_prior,
        )

    def score(self, name: str) -> float:
        """Q of `name`; the prior for a skill never scored."""
        return q_of(self.q, name, self.prior)

    def ranked(self, name: str) -> bool:
        return self.activations.get(name, 0) >= self.c_min

    def protected(self, names: Collection[str]) -> set[str]:
        """Members of `names` in a pair (both members in `names`) with C(i, j) > protect_above."""
        out: set[str] = set()
        for key, count in self.synergy.items():
            a, b = key.split("|")
            if count > self.protect_above and a in names and b in names:
                out.update((a, b))
        return out

    def eligible(self, names: Sequence[str], newborns: Collection[str] = ()) -> list[str]:
        """Members of `names` that may be eliminated or replaced, lowest Q first."""
        keep = self.protected(names)
        out = [n for n in names if self.ranked(n) and n not in keep and n not in newborns]
        return sorted(out, key=lambda n: (self.score(n), n))

    def eliminate(self, names: Sequence[str], count: int, keep: Collection[str] = ()) -> list[str]:
        """The `count` lowest-Q eligible skills, never one in `keep` (the cycle's parents).

        Fewer (possibly none) when fewer are eligible; `count <= 0` eliminates nothing.
        """
        return [n for n in self.eligible(names) if n not in keep][: max(0, count)]

    def best_pair(self, names: Collection[str]) -> tuple[str, str] | None:
        """The pair of `names` with the highest C(i, j) > 0 (ties by key), None if none: the
        pair co-bred by crossover."""
        best: tuple[int, str] | None = None
        for key, count in self.synergy.items():
            a, b = key.split("|")
            if count > 0 and a in names and b in names and (best is None or (-count, key) < best):
                best = (-count, key)
        if best is None:
            return None
        a, b = best[1].split("|")
        return (a, b)

    def top_skill(self, names: Sequence[str]) -> str | None:
        """The skill reproduced by mutation: the highest Q among ranked skills when any are
        ranked, else the highest Q among all (a young pool); None for no names."""
        pool = [n for n in names if self.ranked(n)] or list(names)
        if not pool:
            return None
        return min(pool, key=lambda n: (-self.score(n), n))

    def forced_mutation_victim(
        self,
        pairs: Sequence[tuple[str, str]],
        names: Sequence[str],
        newborns: Collection[str] = (),
    ) -> str | None:
        """The skill rewritten to restore diversity, given the pairs of `names` most similar
        first: in the first pair with a member that is neither protected nor a newborn, that
        member (the lower-Q one if both qualify). None when no pair has such a member.

        Young (unranked) skills may be victims: the rule is about sameness, not merit.
        """
        keep = self.protected(names)
        for pair in pairs:
            free = [n for n in pair if n not in keep and n not in newborns]
            if free:
                return min(free, key=lambda n: (self.score(n), n))
        return None

    def fresh_victims(
        self, names: Sequence[str], count: int, newborns: Collection[str] = ()
    ) -> list[str]:
        """The skills that fresh seed skills replace: the `count` lowest-Q eligible skills.

        Fewer, possibly none, when fewer are eligible (the caller then injects fewer).
        """
        return self.eligible(names, newborns)[: max(0, count)]
