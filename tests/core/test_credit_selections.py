"""Credit over every selection of a rollout, and what a `Rollout` carries for the engine."""

from __future__ import annotations

import pytest

from moscopt.agent.harness import Rollout
from moscopt.core.credit import Outcome, assign_credit
from moscopt.run.state import RunState, synergy_key


def synergy_of(state: RunState, a: str, b: str) -> int:
    """C(a, b) as credit counts it (0 for a pair never selected together)."""
    return state.synergy.get(synergy_key(a, b), 0)


def test_every_selection_is_credited() -> None:
    state = RunState()
    outcomes = [
        # a success: a at both steps, b then c
        Outcome(["a", "b"], 1.0, [["a", "b"], ["a", "c"]]),
        # a failure: d then b
        Outcome(["d"], 0.0, [["d"], ["b"]]),
    ]
    means = assign_credit(state, outcomes, beta=0.3)
    # one activation per selection that holds the skill
    assert state.activations == {"a": 2, "b": 2, "c": 1, "d": 1}
    # each rollout's reward counts once per active skill, however many steps selected it
    assert means == {"a": 1.0, "b": 0.5, "c": 1.0, "d": 0.0}
    assert state.q == {n: pytest.approx(0.35 + 0.3 * m) for n, m in means.items()}
    # co-active = in the same selection; once per successful rollout
    assert synergy_of(state, "a", "b") == 1 and synergy_of(state, "a", "c") == 1
    assert synergy_of(state, "b", "c") == 0  # selected at different steps, never together
    assert synergy_of(state, "b", "d") == 0  # a failed rollout adds no synergy


def test_a_pair_co_selected_at_several_steps_counts_once() -> None:
    state = RunState()
    assign_credit(state, [Outcome(["a", "b"], 1.0, [["a", "b"], ["b", "a"], ["a", "b"]])], 0.3)
    assert synergy_of(state, "a", "b") == 1 and state.activations == {"a": 3, "b": 3}
    assert state.q == {"a": pytest.approx(0.65), "b": pytest.approx(0.65)}


def test_one_selection_is_the_papers_rule() -> None:
    with_selection, without = RunState(), RunState()
    assign_credit(with_selection, [Outcome(["a", "b"], 1.0, [["a", "b"]])], 0.3)
    assign_credit(without, [Outcome(["a", "b"], 1.0)], 0.3)
    assert with_selection == without


def test_outcome_of_a_rollout() -> None:
    rollout = Rollout(
        "t", ("a",), "gate", [], "", None, 1.0, selections=(("a",), ("b",)), sources=("gate",) * 2
    )
    outcome = Outcome.of(rollout)
    assert outcome.skills == ("a",) and outcome.reward == 1.0
    assert outcome.selections == (("a",), ("b",))


def test_rollout_defaults_to_one_selection() -> None:
    rollout = Rollout("t", ("a", "b"), "fallback", [], "", None, 0.0)  # the positional form
    assert rollout.selections == (("a", "b"),) and rollout.sources == ("fallback",)
    assert rollout.active == ("a", "b")
    data = rollout.to_json()
    assert data["selections"] == [["a", "b"]] and data["sources"] == ["fallback"]


def test_active_is_every_selected_skill_in_order() -> None:
    r = Rollout("t", ("b",), "gate", [], "", None, 0.0, selections=(("b",), ("a", "b"), ("c",)))
    assert r.active == ("b", "a", "c") and r.sources == ("gate",) * 3


def test_a_rollout_is_solved_only_at_full_reward_and_keeps_its_partial_credit() -> None:
    solved, partial = (Rollout(str(i), (), "none", [], "", None, r) for i, r in enumerate([1, 0.5]))
    assert solved.success and solved.soft == 1.0
    assert partial.soft == 0.5 and not partial.success
