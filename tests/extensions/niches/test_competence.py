from __future__ import annotations

import pytest

from moscopt.extensions.niches.competence import (
    competence,
    observe,
    specialization_index,
    style_overlap,
    synergy,
)
from moscopt.extensions.niches.records import NicheState


def test_competence_is_an_ema_with_counts_per_skill_and_niche() -> None:
    s = NicheState()
    observe(s, "A", ["x", "y"], 1.0, beta=0.5)  # the first rollout sets the EMA
    observe(s, "A", ["x"], 0.0, beta=0.5)
    observe(s, "B", ["x", "x"], 0.0, beta=0.5)  # a skill counts once per rollout
    assert (competence(s, "x", "A").ema, competence(s, "x", "A").count) == (0.5, 2)
    assert (competence(s, "y", "A").ema, competence(s, "y", "A").count) == (1.0, 1)
    assert (competence(s, "x", "B").ema, competence(s, "x", "B").count) == (0.0, 1)
    assert competence(s, "z", "A").count == 0  # never seen


def test_synergy_per_niche_is_trusted_after_five_shared_tasks() -> None:
    s = NicheState()
    for reward in (1.0, 1.0, 0.0, 1.0):
        observe(s, "A", ["x", "y"], reward, beta=0.3)
    assert synergy(s, "x", "y", "A") == 0.0  # 4 shared tasks: not yet
    observe(s, "A", ["y", "x"], 1.0, beta=0.3)
    assert synergy(s, "y", "x", "A") == pytest.approx(0.8)
    assert synergy(s, "x", "y", "B") == 0.0


def test_style_overlap_is_the_cosine_of_competence_vectors() -> None:
    s = NicheState()
    observe(s, "A", ["x"], 1.0, beta=0.3)
    observe(s, "A", ["y"], 1.0, beta=0.3)
    observe(s, "B", ["z"], 1.0, beta=0.3)
    assert style_overlap(s, "x", "y") == pytest.approx(1.0)
    assert style_overlap(s, "x", "z") == 0.0  # a missing niche counts as 0
    assert style_overlap(s, "x", "never") == 0.0


def test_specialization_index_from_evenly_spread_to_one_niche_each() -> None:
    even, focused = NicheState(), NicheState()
    for niche in ("A", "B"):
        observe(even, niche, ["x"], 1.0, beta=0.3)
        observe(even, niche, ["y"], 1.0, beta=0.3)
    observe(focused, "A", ["x"], 1.0, beta=0.3)
    observe(focused, "B", ["y"], 1.0, beta=0.3)
    assert specialization_index(even, ["x", "y"]) == pytest.approx(0.0)
    assert specialization_index(focused, ["x", "y"]) == pytest.approx(1.0)
    assert specialization_index(NicheState(), ["x"]) == 0.0
