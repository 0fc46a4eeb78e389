from __future__ import annotations

import pytest

from moscopt.core.credit import Outcome, assign_credit, forget, synergy_of
from moscopt.optimizer.policies.edit_budget import budget, clamp
from moscopt.run.state import RunState


def test_credit_matches_the_papers_rules() -> None:
    state = RunState()
    outcomes = [
        Outcome(["a", "b"], 1.0),
        Outcome(["b", "c"], 1.0),
        Outcome(["a", "c"], 0.0),
        Outcome(["b", "a"], 1.0),
    ]
    means = assign_credit(state, outcomes, beta=0.3)
    assert means == {"a": pytest.approx(2 / 3), "b": 1.0, "c": 0.5}
    assert state.q == means  # first batch sets Q to the mean
    assert state.activations == {"a": 3, "b": 3, "c": 2}
    assert synergy_of(state, "a", "b") == 2 and synergy_of(state, "b", "c") == 1
    assert synergy_of(state, "a", "c") == 0  # the failed rollout adds no synergy
    assign_credit(state, [Outcome(["a"], 0.0)], beta=0.3)
    assert state.q["a"] == pytest.approx(0.7 * (2 / 3))
    forget(state, "a")
    assert "a" not in state.q and synergy_of(state, "a", "b") == 0 and state.synergy


def test_schedules() -> None:
    assert [budget("constant", s, 5, 8, 2) for s in range(5)] == [8] * 5
    assert [budget("linear", s, 4, 8, 2) for s in range(4)] == [8, 6, 4, 2]
    cos = [budget("cosine", s, 5, 8, 2) for s in range(5)]
    assert cos[0] == 8 and cos[-1] == 2 and cos == sorted(cos, reverse=True)
    assert budget("autonomous", 0, 5, 8, 2) is None
    assert budget("linear", 0, 1, 8, 2) == 8
    assert clamp(20, 8, 2) == 8 and clamp(0, 8, 2) == 2
