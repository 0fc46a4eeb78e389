"""The halting controller (halts when answers agree, continues when they do not; a fitted
model decides by probability) and the aggregator."""

from __future__ import annotations

from moscopt.extensions.memory.halting import HALTING_FEATURES, HaltingController, vote_index
from moscopt.extensions.memory.learned import Logistic


def decide(controller: HaltingController, answers: list[str | None], conf: float | None = None):  # type: ignore[no-untyped-def]
    return controller.decide(answers, confidence=conf, max_steps=4, novelty=0.5)


def test_halts_when_consecutive_answers_agree() -> None:
    c = HaltingController(agree=2)
    assert decide(c, ["12", "12"]).halt
    assert decide(c, ["12", "12"]).reason == "agree"


def test_continues_when_answers_disagree_or_are_missing() -> None:
    c = HaltingController(agree=2)
    assert not decide(c, ["12"]).halt
    assert not decide(c, ["12", "13"]).halt
    assert not decide(c, ["12", None, "12"]).halt  # not consecutive
    assert decide(c, ["12", None]).reason == "no-answer"


def test_a_fitted_model_halts_on_confidence() -> None:
    weights = tuple(10.0 if n == "confidence" else 0.0 for n in HALTING_FEATURES)
    c = HaltingController(model=Logistic(weights, bias=-6.0), threshold=0.5)
    assert decide(c, ["12"], conf=0.9).halt  # one confident answer is enough
    assert not decide(c, ["12", "12"], conf=0.2).halt  # agreement alone is not
    assert decide(c, ["12"], conf=0.9).probability is not None


def test_features_measure_agreement_streak_and_budget() -> None:
    d = decide(HaltingController(), ["3", "4", "4"], conf=None)
    features = dict(zip(HALTING_FEATURES, d.features, strict=True))
    assert features["agreement"] == round(2 / 3, 4)
    assert features["streak"] == 0.5  # two of T = 4
    assert features["confidence"] == 0.5  # none stated
    assert features["budget_left"] == 0.25


def test_vote_picks_the_latest_step_of_the_most_proposed_answer() -> None:
    assert vote_index(["5", "7", "5", "7", "5"]) == 4
    assert vote_index(["5", "7", "7", None]) == 2
    assert vote_index(["5", "7"]) == 1  # a tie: the latest
    assert vote_index([None, None]) is None
