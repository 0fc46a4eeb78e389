"""The engine's small policies: edit budget, edit targets, gate restoration."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from moscopt.optimizer.policies.edit_budget import EditBudget
from moscopt.optimizer.policies.edit_targets import EditTargets
from moscopt.optimizer.policies.gate_restoration import GateRestoration
from moscopt.run.ledger import RolloutEvent


@given(
    schedule=st.sampled_from(["constant", "linear", "cosine"]),
    l_min=st.integers(1, 4),
    extra=st.integers(0, 8),
    total=st.integers(1, 40),
)
def test_budgets_stay_in_range_and_decay(schedule: str, l_min: int, extra: int, total: int) -> None:
    b = EditBudget(schedule, l_min + extra, l_min, total)  # type: ignore[arg-type]
    values = [b.fixed(s) for s in range(total)]
    assert all(v is not None and l_min <= v <= l_min + extra for v in values)
    assert values == sorted(values, reverse=True)  # never rises
    assert values[0] == l_min + extra
    if schedule != "constant" and total > 1:
        assert values[-1] == l_min  # L_min is reached at the last skill step, not before it


def test_autonomous_budget_is_asked_and_clamped() -> None:
    b = EditBudget("autonomous", 8, 2, 10)
    assert b.fixed(3) is None and b.clamp(50) == 8 and b.clamp(0) == 2


def rollout(skills: list[str], reward: float, selections: list[list[str]] | None = None) -> Any:
    return RolloutEvent(batch=0, task_id="t", skills=skills, reward=reward,
                        selections=selections or [])  # fmt: skip


def test_targets_are_the_most_implicated_skills_in_failures() -> None:
    rollouts = [
        rollout(["a", "b"], 0.0),
        rollout(["a", "c"], 0.0),
        rollout(["b", "c"], 1.0),  # a success blames nobody
        rollout(["gone", "a"], 0.0),  # a skill no longer in the pool is no target
    ]
    assert EditTargets(2).choose(rollouts, {"a", "b", "c"}) == ["a", "b"]
    assert EditTargets(5).choose(rollouts, {"a", "b", "c"}) == ["a", "b", "c"]


def test_every_selection_of_a_step_gated_rollout_shares_the_blame_once() -> None:
    rollouts = [rollout(["a"], 0.0, [["a"], ["b"], ["a"]])]
    assert EditTargets(3).choose(rollouts, {"a", "b"}) == ["a", "b"]


def test_restoration_is_due_after_window_steps_above_threshold() -> None:
    g = GateRestoration(threshold=0.3, window=2)
    assert not g.observe(["fallback", "gate", "gate", "gate"])  # 25%: fine
    assert not g.observe(["fallback", "fallback", "gate", "gate"])  # 50%: one bad step
    assert g.observe(["fallback", "partial", "gate", "gate"])  # two in a row: due
    assert g.history == []  # the window restarts


def test_llm_errors_at_the_gate_are_not_parse_failures() -> None:
    g = GateRestoration(threshold=0.3, window=1)
    assert not g.observe(["gate_error"] * 4)  # the gate never answered: nothing to judge
    assert g.healthy(["gate_error", "gate_error", "gate", "gate"])
    assert not g.healthy(["random", "random"])  # no gate answers: not evidence of a good gate
