"""The familiarity estimator: what it learns from rollouts, the cutoff, exploration, resume.

Features come from the hashing embedder (deterministic, no model); rewards from a rule: a task of
family F succeeds when F's skill is active. Routing is the estimator's own (explore on while it
learns), so these are the dynamics the trainer drives, minibatch by minibatch.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from moscopt.embedding.hashing import HashingEmbedder
from moscopt.routing.familiarity import (
    FamiliarityModel,
    Hyper,
    Observation,
    cutoff,
    exploration_bonus,
)
from moscopt.routing.projection import Projection

EMBED = HashingEmbedder()
_RNG = random.Random(0)
_UNIT = ["kilometers", "meters", "grams", "kilograms", "hours", "minutes", "feet", "inches"]
_WORD = ["banana", "forest", "possession", "letter", "mississippi", "rhythm", "balloon", "pepper"]
_MONTH = ["March", "April", "June", "October", "January", "August", "May", "December"]
UNITS = [f"Convert {n} {_RNG.choice(_UNIT)} to {_RNG.choice(_UNIT)}." for n in range(3, 40)]
LETTERS = [f"How many times does the letter {c} appear in {w}?" for w in _WORD for c in "aeiou"][
    :37
]
_RNG.shuffle(LETTERS)
DATES = [
    f"What day of the week was {_RNG.choice(_MONTH)} {n}, {_RNG.randint(1990, 2030)}?"
    for n in range(3, 40)
]
FAMILIES = {"units": UNITS, "letters": LETTERS, "dates": DATES}
SKILLS = ["units-skill", "letters-skill", "dates-skill", "generalist"]


def family_of(text: str) -> str:
    return next(f for f, texts in FAMILIES.items() if text in texts)


def solves(text: str, skills: Sequence[str]) -> bool:
    return f"{family_of(text)}-skill" in skills


def vectors(texts: Sequence[str]) -> dict[str, np.ndarray]:
    return {t: EMBED.encode(t) for t in texts}


def fresh(hyper: Hyper | None = None, seed: int = 7) -> FamiliarityModel:
    train = [t for texts in FAMILIES.values() for t in texts[:20]]
    hyper = hyper or Hyper()
    projection = Projection.fit(list(vectors(train).values()), hyper.feature_dim)
    return FamiliarityModel(projection=projection, seed=seed, hyper=hyper, names=SKILLS)


def train(
    model: FamiliarityModel,
    texts: Sequence[str],
    reward: Callable[[str, Sequence[str]], bool] = solves,
    batch: int = 4,
) -> list[tuple[str, ...]]:
    """Route each minibatch with exploration, then learn from it; the sets chosen. The
    learner gets the vectors of every task (the buffer's too, as the engine gives them)."""
    vec = vectors([t for family in FAMILIES.values() for t in family])
    chosen = []
    for i in range(0, len(texts), batch):
        obs = []
        for text in texts[i : i + batch]:
            skills = model.route(vec[text], explore=True).skills
            chosen.append(skills)
            obs.append(Observation(text, skills, 1.0 if reward(text, skills) else 0.0))
        model.learn(obs, vec)
    return chosen


def interleaved(n: int) -> list[str]:
    return [
        t for group in zip(*(texts[:n] for texts in FAMILIES.values()), strict=True) for t in group
    ]


def test_a_skill_that_succeeds_on_a_family_becomes_the_most_familiar_there() -> None:
    model = fresh()
    train(model, interleaved(20) * 2)
    for family, texts in FAMILIES.items():
        for text in texts[20:]:  # held-out tasks of the family
            routing = model.route(EMBED.encode(text))
            assert routing.ranked[0] == f"{family}-skill", (text, routing.familiarity)
        # and clearly more familiar there than any other skill
        f = np.mean([model.familiarity(EMBED.encode(t)) for t in texts[20:]], axis=0)
        mine = SKILLS.index(f"{family}-skill")
        assert f[mine] > 0.8 and f[mine] - max(np.delete(f, mine)) > 0.25, (family, f)


def test_cutoff_picks_one_skill_for_a_clear_case_and_more_for_an_ambiguous_one() -> None:
    assert cutoff([0.95, 0.1, 0.05], theta=0.6, k_min=1, k_max=3) == (1, True)
    assert cutoff([0.4, 0.35, 0.1], theta=0.6, k_min=1, k_max=3) == (2, True)
    assert cutoff([0.1, 0.1, 0.1, 0.1], theta=0.6, k_min=1, k_max=3) == (3, False)  # k_max
    assert cutoff([0.95, 0.1], theta=0.6, k_min=2, k_max=3) == (2, True)  # k_min
    assert cutoff([0.9], theta=0.6, k_min=2, k_max=3) == (1, True)  # never more than N
    # the trained estimator: a task of a learned family is a clear case
    model = fresh()
    train(model, interleaved(20) * 2)
    assert model.route(EMBED.encode(UNITS[-1])).skills == ("units-skill",)
    # heads set by hand to a known familiarity (W_i = (1 - s_i) T_i gives f_i = exp(-s_i^2)):
    # one clearly familiar skill, then two half-familiar ones that only together reach theta
    x = EMBED.encode(UNITS[-1])
    assert with_familiarity(model, [0.3, 1.5, 1.5, 1.5]).route(x).skills == ("units-skill",)
    ambiguous = with_familiarity(model, [0.95, 1.0, 1.5, 1.5]).route(x)
    assert ambiguous.skills == ("units-skill", "letters-skill") and ambiguous.reached
    unknown = with_familiarity(model, [1.5, 1.5, 1.5, 1.5]).route(x)
    assert len(unknown.skills) == 3 and not unknown.reached  # k_max


def with_familiarity(model: FamiliarityModel, s: Sequence[float]) -> FamiliarityModel:
    out = model.copy()
    out.weight = np.stack([(1 - si) * t for si, t in zip(s, model.target, strict=True)])
    return out


def test_the_cutoff_is_judged_on_familiarity_not_on_the_bonus() -> None:
    model = fresh()
    train(model, interleaved(20) * 2)
    x = EMBED.encode(UNITS[-1])
    greedy = model.route(x)
    model.allocated["generalist"] = 0  # a starved skill: a large bonus
    explored = model.route(x, explore=True)
    assert explored.ranked[0] == "generalist" and greedy.skills == ("units-skill",)
    # the bonus put the generalist first, but its familiarity is low: the set goes on until
    # the familiar skill is in it
    assert "units-skill" in explored.skills and len(explored.skills) >= 2
    assert explored.score["generalist"] > explored.familiarity["generalist"]


def test_exploration_bonus_prevents_starvation() -> None:
    """One skill solves every task. At the start every skill is equally unfamiliar, and ties go
    by name: the greedy router (no bonus) takes the first two skills, succeeds, and never tries
    the other two; with the bonus every skill is tried, and the set shrinks to the solver."""

    def dates_wins(text: str, skills: Sequence[str]) -> bool:
        return "dates-skill" in skills

    texts = interleaved(20) * 2
    greedy, explored = fresh(Hyper(exploration=0.0)), fresh()
    tail_greedy = train(greedy, texts, dates_wins)[-30:]
    tail_explored = train(explored, texts, dates_wins)[-30:]
    assert set(greedy.allocated) == {"dates-skill", "generalist"}  # two skills starved
    assert set(explored.allocated) == set(SKILLS) and min(explored.allocated.values()) >= 2
    assert set(tail_greedy) == {("dates-skill", "generalist")}  # the free rider stays
    assert set(tail_explored) == {("dates-skill",)}
    assert exploration_bonus(0, 100, 0.5) > exploration_bonus(50, 100, 0.5) > 0


def test_resume_gives_the_same_heads() -> None:
    texts = interleaved(20)
    straight = fresh()
    train(straight, texts)
    resumed = fresh()
    train(resumed, texts[:28])
    saved = json.dumps(resumed.to_json())  # what state.json holds
    resumed = FamiliarityModel.from_json(json.loads(saved))
    train(resumed, texts[28:])
    assert resumed.to_json() == straight.to_json()
    assert np.array_equal(resumed.weight, straight.weight)


def test_heads_are_seeded_and_target_heads_orthogonal_across_skills() -> None:
    a, b = fresh(seed=3), fresh(seed=3)
    assert np.array_equal(a.target, b.target) and not np.array_equal(a.target, fresh(seed=4).target)
    # 16 feature directions, r = 4: four skills fit, each block orthogonal to the others
    wide = FamiliarityModel(
        projection=Projection.identity(16), seed=3, hyper=Hyper(reference_dim=4), names=SKILLS
    )
    rows = wide.target.reshape(-1, 16) / np.sqrt(16)
    assert np.allclose(rows @ rows.T, np.eye(16), atol=1e-5)
    # a fifth skill does not fit: its block is orthonormal, not orthogonal to the others
    fifth = wide.synced([*SKILLS, "fifth"]).target[4] / np.sqrt(16)
    assert np.allclose(fifth @ fifth.T, np.eye(4), atol=1e-5)
    # predictors start at zero: every skill equally (un)familiar, at exp(-1 / tau)
    assert np.allclose(a.familiarity(EMBED.encode(UNITS[0])), np.exp(-1.0))


def test_a_new_skill_gets_a_fresh_head_and_the_others_keep_theirs() -> None:
    model = fresh()
    train(model, interleaved(8))
    names = [*SKILLS[:3], "newcomer"]  # the generalist left, a newcomer came
    synced = model.synced(names)
    assert synced.names == names and model.names == SKILLS  # the original is unchanged
    for name in SKILLS[:3]:
        assert np.array_equal(synced.weight[names.index(name)], model.weight[SKILLS.index(name)])
    assert not synced.weight[3].any()
    assert synced.synced(names) is synced


def test_advantages_solo_and_in_a_set() -> None:
    model = fresh()
    vec = vectors(UNITS[:6])
    solo = model.learn([Observation(UNITS[0], ("units-skill",), 1.0)], vec)
    assert solo.advantages == [1.0] and solo.pulls == 1
    failed = model.learn([Observation(UNITS[1], ("generalist",), 0.0)], vec)
    assert failed.advantages == [-1.0] and failed.pushes == 1
    # in sets: the skill whose presence goes with success gets the positive advantage
    batch = [
        Observation(UNITS[2], ("units-skill", "generalist"), 1.0),
        Observation(UNITS[3], ("dates-skill", "generalist"), 0.0),
        Observation(UNITS[4], ("units-skill", "dates-skill"), 1.0),
    ]
    stats = model.learn(batch, vec)
    units_first, generalist_first = stats.advantages[0], stats.advantages[1]
    assert units_first > 0 > generalist_first
    assert stats.advantages[2] < 0 and stats.advantages[3] < 0  # a failed set: all pushed


def test_relative_credit_gives_no_signal_to_skills_always_active_together() -> None:
    model = fresh(Hyper(credit="relative", failure_push=0.0))
    vec = vectors(UNITS[:4])
    batch = [Observation(t, ("units-skill", "generalist"), 1.0) for t in UNITS[:4]]
    assert model.learn(batch, vec).advantages == pytest.approx([0.0] * 8)


def test_state_round_trips_exactly_and_rejects_other_documents() -> None:
    model = fresh()
    train(model, interleaved(8))
    data = json.loads(json.dumps(model.to_json()))
    again = FamiliarityModel.from_json(data)
    assert again.to_json() == model.to_json()
    assert again.buffer == model.buffer and again.allocated == model.allocated
    heads_only = FamiliarityModel.from_json(model.heads_json())
    assert heads_only.buffer == [] and np.array_equal(heads_only.weight, model.weight)
    with pytest.raises(ValueError, match="format"):
        FamiliarityModel.from_json({**data, "format": 99})
    with pytest.raises(ValueError, match="shapes"):
        FamiliarityModel.from_json({**data, "names": SKILLS[:2]})
