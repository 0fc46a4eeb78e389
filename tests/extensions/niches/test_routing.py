from __future__ import annotations

from moscopt.extensions.niches.competence import observe
from moscopt.extensions.niches.records import NicheState
from moscopt.extensions.niches.routing import TransferRouting


def world() -> NicheState:
    s = NicheState()
    for _ in range(4):
        observe(s, "A", ["alpha"], 1.0, beta=0.5)
        observe(s, "A", ["beta"], 0.0, beta=0.5)
        observe(s, "A", ["gamma"], 0.9, beta=0.5)  # near the best: not weak
        observe(s, "B", ["beta"], 1.0, beta=0.5)
        observe(s, "B", ["delta"], 0.0, beta=0.5)  # weak, but only on B
    observe(s, "A", ["newbie"], 0.0, beta=0.5)  # too few rollouts on A to count there
    return s


POOL = ["alpha", "beta", "gamma", "delta", "newbie"]


def test_recipients_are_only_the_skills_weak_on_that_niche() -> None:
    r = TransferRouting(margin=0.2, min_count=3)
    s = world()
    assert r.recipients(s, "A", POOL) == ["beta"]  # not delta (not its niche), not newbie
    assert r.recipients(s, "B", POOL) == ["delta"]  # beta is strong on B
    assert r.recipients(s, "A", ["beta"]) == []  # alone, it is the best there
    assert r.recipients(s, "C", POOL) == []


def test_givers_are_the_strong_ones_strongest_first() -> None:
    r = TransferRouting(margin=0.2, min_count=3)
    s = world()
    assert r.givers(s, "A", POOL) == ["alpha", "gamma"]
    assert r.givers(s, "B", POOL) == ["beta"]
    assert r.givers(s, "A", ["alpha", "beta"]) == ["alpha"]
    nobody = NicheState()
    for _ in range(3):
        observe(nobody, "A", ["x"], 0.0, beta=0.5)
    assert r.givers(nobody, "A", ["x"]) == []  # no success to learn from: abstain


def test_a_wider_margin_sends_to_fewer() -> None:
    s = world()
    assert TransferRouting(margin=0.05, min_count=3).recipients(s, "A", POOL) == ["beta", "gamma"]
    assert TransferRouting(margin=0.99, min_count=3).recipients(s, "A", POOL) == ["beta"]
    assert TransferRouting(margin=1.0, min_count=3).recipients(s, "A", POOL) == []
