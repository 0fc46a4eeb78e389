"""The familiarity-weighted vote and the specialization index."""

from __future__ import annotations

import pytest

from moscopt.routing.specialization import specialization_index, summarize
from moscopt.routing.vote import familiarity_vote


def test_the_group_with_the_most_familiarity_wins_and_its_most_familiar_member_answers() -> None:
    answers = ["42", "41", " 42 ", "41", None]
    assert familiarity_vote(answers, [0.2, 0.9, 0.3, 0.1, 1.0]) == 1  # 41: 1.0 > 42: 0.5
    assert familiarity_vote(answers, [0.6, 0.5, 0.3, 0.1, 1.0]) == 0  # 42: 0.9 > 41: 0.6
    assert familiarity_vote([None, None], [0.5, 0.5]) is None
    assert familiarity_vote(["a", "b"], [0.5, 0.5]) == 0  # a tie: the earliest
    with pytest.raises(ValueError):
        familiarity_vote(["a"], [0.1, 0.2])


def test_specialization_index_from_activations() -> None:
    one_each = {"units": {"a": 10}, "dates": {"b": 10}}
    even = {"units": {"a": 5, "b": 5}, "dates": {"a": 5, "b": 5}}
    assert specialization_index(one_each) == pytest.approx(1.0)
    assert specialization_index(even) == pytest.approx(0.0)
    assert specialization_index({"units": {"a": 3}}) == 0.0  # one niche
    assert 0.0 < specialization_index({"units": {"a": 9, "b": 1}, "dates": {"b": 9}}) < 1.0
    s = summarize({"units": {"a": 3, "b": 1}, "dates": {"b": 2}})
    assert s["niches"]["units"] == {"activations": 4, "top": "a", "share": 0.75}
