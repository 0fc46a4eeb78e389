"""Adaptive halting: after each step, does the memory already hold a sufficient answer?

Features (`HALTING_FEATURES`): the share of the answers proposed so far that agree with the
latest one, the streak of consecutive steps proposing it (over T), whether this step proposes
an answer, its stated confidence (0.5 when it states none), the share of the step budget left,
the novelty of this step's record, and whether the latest tool result the step read shows its
answer (`moscopt.extensions.memory.answers.tool_support`). Answers are compared as the
benchmark's grader compares them (`moscopt.extensions.memory.answers`), and a step proposes an
answer whether or not it also asks for a tool: an agent that states its answer and keeps
verifying is halted too.

Untrained, the controller halts when the last `agree` answered steps propose the same answer;
fitted (`moscopt.extensions.memory.training`: a cost-aware objective, reward minus a price per
call), it halts when p(stopping now is no worse than any continuation) reaches `threshold`. It
never halts on a step that proposes no answer.

When it halts, the aggregator picks the final response among the steps' candidates: `last`
(the latest), `vote` (the latest candidate of the most proposed answer) or `llm` (one extra
call that reads the memory; see `moscopt.extensions.memory.tracker`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from moscopt.extensions.memory.learned import Logistic

HALTING_FEATURES = (
    "agreement",
    "streak",
    "has_answer",
    "confidence",
    "budget_left",
    "novelty",
    "tool_support",
)


@dataclass(frozen=True)
class HaltDecision:
    halt: bool
    probability: float | None  # the learned model's, when fitted
    features: tuple[float, ...]
    reason: str  # agree | learned | continue | no-answer


def halting_features(
    answers: Sequence[str | None],
    *,
    confidence: float | None,
    max_steps: int,
    novelty: float,
    support: float = 0.5,
) -> tuple[float, ...]:
    """Features after the last of `answers` (one per step so far, None where none)."""
    latest = answers[-1] if answers else None
    given = [a for a in answers if a is not None]
    agreement = sum(a == latest for a in given) / len(given) if latest is not None else 0.0
    streak = 0
    for a in reversed(answers):
        if a is None or a != latest:
            break
        streak += 1
    t = max(1, max_steps)
    return (
        round(agreement, 4),
        round(streak / t, 4),
        float(latest is not None),
        round(0.5 if confidence is None else confidence, 4),
        round((t - len(answers)) / t, 4),
        round(novelty, 4),
        round(support, 4),
    )


def streak_of(answers: Sequence[str | None]) -> int:
    latest = answers[-1] if answers else None
    n = 0
    for a in reversed(answers):
        if latest is None or a != latest:
            break
        n += 1
    return n


class HaltingController:
    def __init__(
        self, *, agree: int = 2, threshold: float = 0.5, model: Logistic | None = None
    ) -> None:
        self.agree = max(1, agree)
        self.threshold = threshold
        self.model = model

    def decide(
        self,
        answers: Sequence[str | None],
        *,
        confidence: float | None,
        max_steps: int,
        novelty: float,
        support: float = 0.5,
    ) -> HaltDecision:
        features = halting_features(
            answers, confidence=confidence, max_steps=max_steps, novelty=novelty, support=support
        )
        if not answers or answers[-1] is None:
            return HaltDecision(False, None, features, "no-answer")
        if self.model is not None:
            p = self.model.prob(features)
            halt = p >= self.threshold
            return HaltDecision(halt, p, features, "learned" if halt else "continue")
        halt = streak_of(answers) >= self.agree
        return HaltDecision(halt, None, features, "agree" if halt else "continue")


def vote_index(answers: Sequence[str | None]) -> int | None:
    """The index of the latest step proposing the most proposed answer (ties: the latest)."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None
    best = max(counts.values())
    for i in range(len(answers) - 1, -1, -1):
        answer = answers[i]
        if answer is not None and counts[answer] == best:
            return i
    return None
