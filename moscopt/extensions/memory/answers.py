"""The answers of a rollout's steps as halting compares them.

A step's proposed answer (`Benchmark.proposed_answer`: read from every reply that states one,
with or without a tool call) is kept as the first answer of the run the benchmark's grader
counts the same (`Benchmark.same_answer`: "1,234", "1234.0" and "$1234" are one number; math
by equivalence; letters; normalized text), so that agreement, streaks and votes count answers,
not spellings. Without a grader's comparison, answers agree when their normalized text does.

`tool_support` says whether the latest tool result the step read shows its answer: 1.0 when it
does, 0.0 when there is a result that does not, 0.5 when the step read no tool result. A stated
guess that no tool output backs differs from an answer read off the output that computed it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from moscopt.extensions.memory.records import normalize_answer

SameFn = Callable[[str, str], bool]
SUPPORT_TOKENS = 60  # the last tokens of a tool result compared with an answer
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"[-\u2212]?\$?\d[\d,]*(?:\.\d+)?(?:/\d+)?%?|[^\s,;:()\[\]{}'\"]+")


class AnswerKeeper:
    """One representative per answer, in order of first proposal."""

    def __init__(self, same: SameFn | None = None) -> None:
        self.same = same
        self.known: list[str] = []

    def canonical(self, answer: str | None) -> str | None:
        """`answer` as the memory keeps it: an earlier answer the grader counts the same, or
        (new) the answer itself, whitespace collapsed (with no grader: normalized text)."""
        if answer is None:
            return None
        text = _SPACE.sub(" ", answer).strip()
        if self.same is None:
            text = normalize_answer(text) or ""
        if not text:
            return None
        for known in self.known:
            if known == text or (self.same is not None and self.same(known, text)):
                return known
        self.known.append(text)
        return text

    def supports(self, observation: str, answer: str) -> bool:
        """Whether `observation` (a tool's output) shows `answer`, as the grader compares."""
        tokens = _TOKEN.findall(observation)[-SUPPORT_TOKENS:]
        wanted = normalize_answer(answer)
        lines = [ln.strip() for ln in observation.splitlines() if ln.strip()][-SUPPORT_TOKENS:]
        for candidate in [*tokens, *lines]:
            if normalize_answer(candidate) == wanted:
                return True
        if self.same is None:
            return False
        return any(_comparable(t) and self.same(answer, t) for t in tokens)


def tool_support(keeper: AnswerKeeper, observations: Sequence[str], answer: str | None) -> float:
    """1.0 / 0.0 / 0.5 (see the module docstring) for `answer` after `observations` (the tool
    results read so far, in step order; "" for a step without a tool)."""
    latest = next((o for o in reversed(observations) if o), None)
    if latest is None or answer is None:
        return 0.5
    return 1.0 if keeper.supports(latest, answer) else 0.0


def _comparable(token: str) -> bool:
    """A token worth the grader's comparison: a number (words were compared as text)."""
    return any(c.isdigit() for c in token) and len(token) <= 40
