"""Credit assignment after a rollout batch: Q-scores, activation counts and synergy C(i, j).

A rollout has one selection of skills with task-level gating and one per agent step with
step-level gating (`Rollout.selections`; the first is `Rollout.skills`). A skill is *active* in
a rollout when it is in at least one of its selections. For each batch:

- activations_i += 1 per selection that contains s_i: a count of the gate's choices (what
  c_min and the gate's table measure), so a skill chosen at 3 of 4 steps has 3 activations.
- Q_i <- (1 - beta) * Q_i + beta * mean(reward of the batch's rollouts where s_i was active).
  Each rollout counts once per active skill, however many of its steps selected it: a rollout
  is one outcome with one reward, and weighting it by the number of steps a skill was selected
  would let long trajectories (which are often the failing ones) dominate the mean. Q_i starts
  from the prior `credit.q_prior` (0.5, as in the paper's worked example, §A.5: a success and a
  failure move a new skill to 0.65 and 0.35 with beta = 0.3), so a skill's first batch of one to
  four rollouts cannot set its Q to 0 or 1 and drive the gate's fallback, the exports, the choice
  of parent and elimination on one lucky or unlucky draw. A newborn of evolution or of the
  lifecycle starts instead from the survivors' mean Q (`Context.renew`): it enters a pool whose
  level is known, and a prior of 0.5 would rank it above or below every survivor for no reason.
- C(i, j) += 1 for each *successful* rollout in which i and j were co-active, i.e. in the same
  selection (in the agent's context together) at some step; once per rollout, like Q. Two
  skills selected at different steps but never together are not co-active.

With one selection per rollout (task-level gating) these are exactly the paper's rules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from moscopt.run.state import RunState, synergy_key

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout

SUCCESS = 1.0 - 1e-9  # a rollout is successful when its reward is (numerically) 1
Q_PRIOR = 0.5  # credit.q_prior: a skill's Q before its first batch (the paper's example)


@dataclass(frozen=True)
class Outcome:
    """What credit assignment needs from a rollout: the skills, every selection, the reward.

    `selections` empty means one selection, `skills`; when given, its first is `skills`.
    """

    skills: Sequence[str]
    reward: float
    selections: Sequence[Sequence[str]] = ()

    @classmethod
    def of(cls, rollout: Rollout) -> Outcome:
        return cls(rollout.skills, rollout.reward, rollout.selections)

    def all_selections(self) -> list[frozenset[str]]:
        return [frozenset(s) for s in (self.selections or (self.skills,))]


def assign_credit(
    state: RunState, outcomes: Iterable[Outcome], beta: float, prior: float = Q_PRIOR
) -> dict[str, float]:
    """Update `state.q` (from `prior` for a skill never scored), `state.activations` and
    `state.synergy`; return the batch means."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        selections = o.all_selections()
        for selection in selections:
            for name in selection:
                state.activations[name] = state.activations.get(name, 0) + 1
        for name in sorted(frozenset().union(*selections)):
            rewards[name].append(o.reward)
        if o.reward >= SUCCESS:
            pairs = {synergy_key(a, b) for s in selections for a, b in combinations(sorted(s), 2)}
            for key in sorted(pairs):
                state.synergy[key] = state.synergy.get(key, 0) + 1
    means = {name: sum(rs) / len(rs) for name, rs in rewards.items()}
    for name, mean in means.items():
        state.q[name] = (1 - beta) * state.q.get(name, prior) + beta * mean
    return means


def q_of(q: Mapping[str, float], name: str, prior: float = Q_PRIOR) -> float:
    """`name`'s Q-score as every rule reads it: the prior for a skill never scored (a skill
    absent from `q` has had no batch yet, not a batch that all failed)."""
    return q.get(name, prior)


def forget(state: RunState, name: str) -> None:
    """Drop an eliminated skill's statistics (its name stays used: slugs are never reused)."""
    state.q.pop(name, None)
    state.activations.pop(name, None)
    for key in [k for k in state.synergy if name in k.split("|")]:
        del state.synergy[key]
