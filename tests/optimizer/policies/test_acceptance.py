"""Acceptance policies: strict (the paper) and paired (sequential sign-flip test)."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.optimizer.policies.acceptance import (
    Acceptance,
    SequentialSignFlip,
    Verdict,
    make_acceptance,
)
from moscopt.optimizer.policies.noninferiority import NonInferiorityTest

P, M, Z = (1.0, 0.0), (0.0, 1.0), (0.0, 0.0)  # (candidate, incumbent): ahead, behind, tie


class Scripted:
    """`Rewards` from a list of samples (sample s = the s-th list), logging every request."""

    def __init__(self, samples: Sequence[Sequence[float]]) -> None:
        self.samples = [list(s) for s in samples]
        self.asked: list[int] = []

    async def __call__(self, s: int) -> Sequence[float]:
        self.asked.append(s)
        return self.samples[s]


def pair(*looks: Sequence[tuple[float, float]]) -> tuple[Scripted, Scripted]:
    """(incumbent, candidate) from looks of (candidate, incumbent) reward pairs."""
    return (
        Scripted([[i for _, i in look] for look in looks]),
        Scripted([[c for c, _ in look] for look in looks]),
    )


def decide(
    policy: Acceptance,
    inc: Scripted,
    cand: Scripted,
    direction: str = "better",
    *,
    fresh: bool = False,
) -> Verdict:
    """`fresh`: every look meets tasks not seen before (else the same tasks at every look)."""
    width = len(inc.samples[0])
    tasks = (lambda s: [1000 * s + i for i in range(width)]) if fresh else None
    return asyncio.run(policy.decide(inc, cand, direction=direction, tasks=tasks))  # type: ignore[arg-type]


STRICT = make_acceptance("strict")
PAIRED = make_acceptance("paired")

# -- strict ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("look", "direction", "accepted", "reason"),
    [
        ([P, P, M, Z], "better", True, "improved"),
        ([P, M, Z, Z], "better", False, "tie"),
        ([M, M, P, Z], "better", False, "not better"),
        ([P, M, Z, Z], "non_inferior", True, "tie"),
        ([P, P, M, Z], "non_inferior", True, "not worse"),
        ([M, M, P, Z], "non_inferior", False, "worse"),
    ],
)
def test_strict_compares_the_means_of_sample_zero(
    look: list[tuple[float, float]], direction: str, accepted: bool, reason: str
) -> None:
    inc, cand = pair(look, [P] * 4, [P] * 4)
    verdict = decide(STRICT, inc, cand, direction)
    assert (verdict.accepted, verdict.reason) == (accepted, reason)
    assert (verdict.samples, verdict.n) == (1, 4)
    assert inc.asked == cand.asked == [0]
    assert verdict.mean_diff == pytest.approx(verdict.candidate_score - verdict.incumbent_score)


def test_strict_accepts_a_one_task_lucky_draw() -> None:
    """The noise the paired policy exists for: 1 task ahead out of 10 is enough for strict."""
    lucky, even = [P] + [Z] * 9, [M] + [Z] * 9
    assert decide(STRICT, *pair(lucky)).accepted
    verdict = decide(PAIRED, *pair(lucky, even, even, even, even))
    assert not verdict.accepted and verdict.samples == 2


# -- paired: better ------------------------------------------------------------------------------


def test_paired_accepts_a_clear_improvement_at_the_first_look() -> None:
    inc, cand = pair([P] * 6 + [Z] * 4)
    verdict = decide(PAIRED, inc, cand)
    assert verdict.accepted and verdict.reason.startswith("improved (p=")
    assert (verdict.samples, verdict.n) == (1, 10)
    assert verdict.low > 0 and verdict.mean_diff == pytest.approx(0.6)
    assert inc.asked == cand.asked == [0]


def test_paired_adds_samples_while_open_then_accepts() -> None:
    look = [P] * 5 + [M] + [Z] * 4  # ahead, but 10 tasks are not enough evidence
    inc, cand = pair(look, look, look)
    verdict = decide(PAIRED, inc, cand, fresh=True)
    assert verdict.accepted and verdict.samples == 2 and verdict.n == 20
    assert cand.asked == [0, 1]


def test_repeats_of_the_same_tasks_are_not_new_evidence() -> None:
    """Issue 37, item 4: the same 10 tasks answered the same way again are one block each, not
    new observations: what crossed on 20 fresh tasks does not cross on 10 tasks seen twice."""
    look = [P] * 5 + [M] + [Z] * 4
    verdict = decide(PAIRED, *pair(*[look] * 5))
    assert not verdict.accepted and verdict.samples >= 2


def test_a_consistent_no_op_is_accepted_in_at_most_alpha_of_decisions() -> None:
    """Issue 37, item 4: a model that keeps each task's answer across samples (here: always),
    and a reworded prompt that redraws it (a no-op: the same rate on every task). Counting
    repeats as new observations accepted 14-16% of such no-ops."""
    rng, accepted, trials = random.Random(37), 0, 300
    for _ in range(trials):
        rates = [rng.random() for _ in range(10)]
        inc_answers = [float(rng.random() < r) for r in rates]
        cand_answers = [float(rng.random() < r) for r in rates]
        look = list(zip(cand_answers, inc_answers, strict=True))
        accepted += decide(PAIRED, *pair(*[look] * 5)).accepted
    assert accepted / trials <= 0.05 + 0.03


def test_paired_rejects_early_when_the_candidate_is_not_better() -> None:
    look = [P, M, M] + [Z] * 7
    inc, cand = pair(look, look, look, look, look)
    verdict = decide(PAIRED, inc, cand)
    assert not verdict.accepted and verdict.reason == "not better"
    assert verdict.samples == 1 and verdict.low <= 0


def test_paired_stops_at_the_sample_cap() -> None:
    look = [P, P, P, M] + [Z] * 6  # stays promising, never conclusive
    inc, cand = pair(*[look] * 5)
    verdict = decide(make_acceptance("paired", max_samples=3), inc, cand)
    assert not verdict.accepted and verdict.reason == "cap reached"
    assert (verdict.samples, verdict.n) == (3, 30)
    assert cand.asked == [0, 1, 2]


def test_paired_with_one_sample_is_a_one_look_exact_test() -> None:
    policy = make_acceptance("paired", max_samples=1)
    assert decide(policy, *pair([P] * 5 + [Z] * 5)).accepted  # p = 1/32
    verdict = decide(policy, *pair([P] * 4 + [Z] * 6))  # p = 1/16 > 0.05
    assert not verdict.accepted and verdict.reason == "cap reached"


# -- ties ------------------------------------------------------------------------------------------


def test_tie_rule_decides_at_once() -> None:
    inc, cand = pair(*[[Z] * 10] * 5)
    verdict = decide(PAIRED, inc, cand)
    assert (verdict.accepted, verdict.reason, verdict.samples) == (False, "tie", 1)
    assert verdict.low == verdict.high == verdict.mean_diff == 0.0


# -- non-inferiority -----------------------------------------------------------------------------


def test_identical_answers_bound_the_loss_within_the_margin_after_forty_observations() -> None:
    """All ties are the best evidence of no loss there is, but ten of them are not enough: the
    margin 0.1 is bounded after 4 looks of 10 tasks (the old "not worse" test kept it at once)."""
    inc, cand = pair(*[[Z] * 10] * 5)
    verdict = decide(PAIRED, inc, cand, "non_inferior", fresh=True)
    assert verdict.accepted and verdict.samples == 4
    assert verdict.reason.startswith("non-inferior: loss bounded within 0.1 (p=")
    assert -0.1 <= verdict.low < 0 < verdict.high and verdict.mean_diff == 0.0
    one_look = decide(make_acceptance("paired", max_samples=1), *pair([Z] * 10), "non_inferior")
    assert not one_look.accepted and one_look.reason.startswith("cap reached")


def test_identical_answers_on_the_same_ten_tasks_never_bound_a_population_loss() -> None:
    """Issue 37, items 4 and 6: ten tasks seen five times are ten blocks, and ten tasks cannot
    rule out that a tenth of the tasks a pool will meet got worse; 40 can, at the first look."""
    verdict = decide(PAIRED, *pair(*[[Z] * 10] * 5), "non_inferior")
    assert not verdict.accepted and verdict.reason.startswith("cap reached")
    verdict = decide(PAIRED, *pair(*[[Z] * 40] * 5), "non_inferior")
    assert verdict.accepted and verdict.samples == 1


def test_a_candidate_behind_by_the_margin_stops_at_once() -> None:
    inc, cand = pair(*[[M, M, P] + [Z] * 7] * 5)  # mean difference -0.1
    verdict = decide(PAIRED, inc, cand, "non_inferior")
    assert not verdict.accepted and verdict.samples == 1
    assert verdict.reason == "behind by the margin 0.1 or more"


def test_a_small_loss_within_the_margin_is_kept_on_enough_evidence() -> None:
    look = [M] + [Z] * 19  # mean difference -0.05 on 20 tasks
    verdict = decide(PAIRED, *pair(*[look] * 5), "non_inferior", fresh=True)
    assert not verdict.accepted  # 100 observations cannot bound it within 0.1 at 95%
    wide = make_acceptance("paired", margin=0.2)
    verdict = decide(wide, *pair(*[look] * 5), "non_inferior", fresh=True)
    assert verdict.accepted and verdict.low >= -0.2


def test_the_old_not_worse_loophole_is_closed() -> None:
    """A candidate behind on 3 of 10 tasks and ahead on 1 (mean -0.2) passed "not worse" at the
    cap; non-inferiority rejects it."""
    look = [M, M, M, P] + [Z] * 6
    verdict = decide(make_acceptance("paired", max_samples=3), *pair(*[look] * 3), "non_inferior")
    assert not verdict.accepted


def worse_by(loss: float, p: float, tasks: int, rng: random.Random) -> list[float]:
    """One look's differences of two independent 0/1 pools at rates p - loss and p."""
    return [(rng.random() < p - loss) - (rng.random() < p) for _ in range(tasks)]


@pytest.mark.parametrize("tasks", [10, 20, 50])
def test_a_pool_worse_by_the_margin_is_kept_in_at_most_alpha_of_decisions(tasks: int) -> None:
    """Monte Carlo at the boundary of H0 (true loss = the margin), whatever the split size."""
    rng, kept, trials = random.Random(tasks), 0, 400
    for _ in range(trials):
        test = NonInferiorityTest(0.05, 0.1, 5)
        for _ in range(5):
            look = test.look(worse_by(0.1, 0.6, tasks, rng))
            if look.outcome != "open":
                break
        kept += look.outcome == "crossed"
    assert kept / trials <= 0.05


def test_tasks_of_different_difficulty_do_not_break_the_guarantee() -> None:
    """Half the tasks always tie, the other half lose 0.2 on average: mean loss exactly 0.1."""
    rng, kept, trials = random.Random(7), 0, 400
    for _ in range(trials):
        test = NonInferiorityTest(0.05, 0.1, 5)
        for _ in range(5):
            diffs = [0.0] * 10 + worse_by(0.2, 0.6, 10, rng)
            look = test.look(diffs)
            if look.outcome != "open":
                break
        kept += look.outcome == "crossed"
    assert kept / trials <= 0.05


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]), min_size=1, max_size=8),
                min_size=1, max_size=5))  # fmt: skip
def test_the_candidate_is_kept_iff_the_lower_bound_is_within_the_margin(
    looks: list[list[float]],
) -> None:
    test = NonInferiorityTest(0.05, 0.1, len(looks))
    for diffs in looks:
        look = test.look(diffs)
        # (an anytime-valid bound: an earlier look's evidence may keep it above today's mean)
        assert (look.outcome == "crossed") == (look.low >= -0.1 - 1e-9)
        if look.outcome != "open":
            break


# -- requests ------------------------------------------------------------------------------------

cells = st.sampled_from([P, M, Z, (1.0, 1.0), (0.5, 0.0), (0.0, 0.25)])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda width: st.lists(st.lists(cells, min_size=width, max_size=width), min_size=5)
    ),
    st.sampled_from(["better", "non_inferior"]),
    st.integers(1, 5),
)
def test_incumbent_is_asked_only_for_indices_the_candidate_is_asked_for(
    looks: list[list[tuple[float, float]]], direction: str, cap: int
) -> None:
    inc, cand = pair(*looks)
    verdict = decide(make_acceptance("paired", max_samples=cap), inc, cand, direction)
    assert cand.asked == list(range(verdict.samples))
    assert inc.asked == cand.asked
    assert 1 <= verdict.samples <= cap and verdict.n == verdict.samples * len(looks[0])
    if direction == "better":
        assert verdict.accepted == (verdict.low > 0)
    else:
        assert verdict.accepted == (verdict.low >= -0.1 - 1e-9)
    if verdict.accepted and direction == "better":
        assert verdict.mean_diff > 0
    assert decide(make_acceptance("paired", max_samples=cap), *pair(*looks), direction) == verdict


# -- the guarantee -------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=4), min_size=1),
    st.sampled_from([0.05, 0.1, 0.2]),
)
def test_false_acceptance_is_at_most_alpha_exactly(
    magnitudes: list[list[float]], alpha: float
) -> None:
    """Enumerate every sign pattern of the differences (a no-op edit: each sign a fair coin):
    the probability of ever crossing, over all looks, is at most alpha."""
    flat = [m for look in magnitudes for m in look]
    nonzero = [i for i, m in enumerate(flat) if m]
    if len(nonzero) > 10:
        nonzero = nonzero[:10]
        flat = [m if i in nonzero else 0.0 for i, m in enumerate(flat)]
    crossed = 0.0
    for signs in itertools.product((1.0, -1.0), repeat=len(nonzero)):
        diffs = list(flat)
        for i, sign in zip(nonzero, signs, strict=True):
            diffs[i] *= sign
        test = SequentialSignFlip(alpha, len(magnitudes))
        start = 0
        for look in magnitudes:
            outcome = test.look(diffs[start : start + len(look)]).outcome
            start += len(look)
            if outcome != "open":
                break
        crossed += (outcome == "crossed") / 2 ** len(nonzero)
    assert crossed <= alpha + 1e-9


# -- input checks --------------------------------------------------------------------------------


def test_rewards_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="incumbent rewards"):
        decide(PAIRED, Scripted([[1.0, 0.0]]), Scripted([[1.0]]))
    with pytest.raises(ValueError, match="expected 2"):
        decide(PAIRED, *pair([P, Z], [P]))
    with pytest.raises(ValueError, match="expected > 0"):
        decide(STRICT, Scripted([[]]), Scripted([[]]))
    with pytest.raises(ValueError, match="finite"):
        decide(STRICT, Scripted([[float("nan")]]), Scripted([[1.0]]))


def test_bad_names_and_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown acceptance"):
        make_acceptance("lenient")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confidence"):
        make_acceptance("paired", confidence=1.0)
    with pytest.raises(ValueError, match="max_samples"):
        make_acceptance("paired", max_samples=0)
    with pytest.raises(ValueError, match="direction"):
        decide(PAIRED, *pair([P]), "sideways")
    assert (STRICT.name, PAIRED.name) == ("strict", "paired")
