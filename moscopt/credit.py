"""Credit assignment after a rollout batch: Q-scores, activation counts and synergy C(i, j).

- Q_i <- (1 - beta) * Q_i + beta * mean(reward of the batch's rollouts where s_i was active).
  A skill's first batch sets Q_i to that mean (no bias towards an arbitrary prior).
- activations_i += 1 per rollout in which s_i was active.
- C(i, j) += 1 for each *successful* rollout in which i and j were both active.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from moscopt.state import RunState, synergy_key

SUCCESS = 1.0 - 1e-9  # a rollout is successful when its reward is (numerically) 1


@dataclass(frozen=True)
class Outcome:
    """What credit assignment needs from a rollout: the active skills and the reward."""

    skills: Sequence[str]
    reward: float


def assign_credit(state: RunState, outcomes: Iterable[Outcome], beta: float) -> dict[str, float]:
    """Update `state.q`, `state.activations` and `state.synergy`; return the batch means."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        active = sorted(set(o.skills))
        for name in active:
            rewards[name].append(o.reward)
            state.activations[name] = state.activations.get(name, 0) + 1
        if o.reward >= SUCCESS:
            for a, b in combinations(active, 2):
                key = synergy_key(a, b)
                state.synergy[key] = state.synergy.get(key, 0) + 1
    means = {name: sum(rs) / len(rs) for name, rs in rewards.items()}
    for name, mean in means.items():
        old = state.q.get(name)
        state.q[name] = mean if old is None else (1 - beta) * old + beta * mean
    return means


def synergy_of(state: RunState, a: str, b: str) -> int:
    return state.synergy.get(synergy_key(a, b), 0)


def forget(state: RunState, name: str) -> None:
    """Drop an eliminated skill's statistics (its name stays used: slugs are never reused)."""
    state.q.pop(name, None)
    state.activations.pop(name, None)
    for key in [k for k in state.synergy if name in k.split("|")]:
        del state.synergy[key]
