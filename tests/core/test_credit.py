from __future__ import annotations

import pytest

from moscopt.core.credit import Outcome, assign_credit, forget
from moscopt.optimizer.policies.edit_budget import budget, clamp
from moscopt.run.state import RunState, synergy_key


def synergy_of(state: RunState, a: str, b: str) -> int:
    """C(a, b) as credit counts it (0 for a pair never selected together)."""
    return state.synergy.get(synergy_key(a, b), 0)


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
    # Q starts from the prior 0.5 and moves by beta towards the batch mean
    assert state.q == {n: pytest.approx(0.7 * 0.5 + 0.3 * m) for n, m in means.items()}
    assert state.activations == {"a": 3, "b": 3, "c": 2}
    assert synergy_of(state, "a", "b") == 2 and synergy_of(state, "b", "c") == 1
    assert synergy_of(state, "a", "c") == 0  # the failed rollout adds no synergy
    assign_credit(state, [Outcome(["a"], 0.0)], beta=0.3)
    assert state.q["a"] == pytest.approx(0.7 * (0.35 + 0.3 * 2 / 3))
    forget(state, "a")
    assert "a" not in state.q and synergy_of(state, "a", "b") == 0 and state.synergy


def test_q_starts_from_the_papers_prior() -> None:
    """The paper's worked example (§A.5): with beta 0.3, skills 1 and 3 of a successful rollout
    move to 0.65 and skill 5 of a failed one to 0.35 (a first batch used to set 1.0 and 0.0)."""
    state = RunState()
    assign_credit(state, [Outcome(["s1", "s3"], 1.0), Outcome(["s5"], 0.0)], beta=0.3)
    assert state.q == {"s1": pytest.approx(0.65), "s3": pytest.approx(0.65), "s5": 0.35}
    other = RunState()
    assign_credit(other, [Outcome(["s1"], 1.0)], beta=0.3, prior=0.2)
    assert other.q == {"s1": pytest.approx(0.44)}


def test_schedules() -> None:
    assert [budget("constant", s, 5, 8, 2) for s in range(5)] == [8] * 5
    assert [budget("linear", s, 4, 8, 2) for s in range(4)] == [8, 6, 4, 2]
    cos = [budget("cosine", s, 5, 8, 2) for s in range(5)]
    assert cos[0] == 8 and cos[-1] == 2 and cos == sorted(cos, reverse=True)
    assert budget("autonomous", 0, 5, 8, 2) is None
    assert budget("linear", 0, 1, 8, 2) == 8
    assert clamp(20, 8, 2) == 8 and clamp(0, 8, 2) == 2
