"""Issue 37, item 7: a never-scored skill reads as the prior Q (not 0.0) everywhere, and
`strict` does not take a floating-point tie for an improvement. (The diversity cap is in
tests/optimizer/test_evolve.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import SimpleNamespace

from moscopt.config import load_config
from moscopt.core.evidence import routing_cases
from moscopt.optimizer.engine.context import Context
from moscopt.optimizer.policies.acceptance import make_acceptance
from moscopt.optimizer.policies.evolution_selection import EvolutionSelection
from moscopt.routing.gate import fallback_top_k
from moscopt.run.ledger import RolloutEvent
from moscopt.run.state import RunState


def test_a_newborn_starts_from_the_survivors_mean_with_the_prior_for_a_never_scored_one() -> None:
    state = RunState(q={"a": 0.8, "gone": 0.1}, activations={"a": 9, "gone": 9})
    fake = SimpleNamespace(state=state, config=load_config(None, {}))
    olds = SimpleNamespace(names=["a", "b", "gone"])
    news = SimpleNamespace(names=["a", "b", "kid"])
    Context.renew(fake, olds, news, ["kid"])  # type: ignore[arg-type]
    assert state.q["kid"] == 0.65  # (0.8 + the prior 0.5) / 2, not (0.8 + 0.0) / 2 = 0.40
    assert "gone" not in state.q


def test_evolution_ranks_a_never_scored_skill_at_the_prior() -> None:
    select = EvolutionSelection(
        q={"low": 0.4}, activations={"low": 9, "new": 9}, synergy={}, c_min=5, protect_above=3
    )
    assert select.score("new") == 0.5
    assert select.eligible(["low", "new"]) == ["low", "new"]  # 0.4 goes first, not "new" at 0
    assert select.top_skill(["low", "new"]) == "new"


def test_the_gates_fallback_ranks_a_never_scored_skill_at_the_prior() -> None:
    assert fallback_top_k(["a", "b"], {"a": 0.3}, {"a": 9, "b": 9}, 1, 5) == ("b",)


def test_routing_cases_count_a_never_scored_skill_at_the_prior() -> None:
    r = RolloutEvent(epoch=0, step=0, phase="skills", batch=0, task_id="t", skills=["a"], reward=0)
    text = routing_cases([r], {}, ["a", "b"], {"a": 0.3})
    assert "higher-scoring skills left out: b (0.50)" in text


def test_strict_takes_a_floating_point_tie_for_a_tie() -> None:
    def rewards(values: Sequence[float]):  # type: ignore[no-untyped-def]
        async def of(s: int) -> Sequence[float]:
            return values

        return of

    policy = make_acceptance("strict")
    better = asyncio.run(policy.decide(rewards([1 / 3, 0, 1, 1]), rewards([2 / 3, 2 / 3, 0, 1])))
    assert not better.accepted and better.reason == "tie"
    kept = asyncio.run(
        policy.decide(
            rewards([2 / 3, 2 / 3, 0, 1]), rewards([1 / 3, 0, 1, 1]), direction="non_inferior"
        )
    )
    assert kept.accepted and kept.reason == "tie"
