"""The values the benchmark layer hands to the rest of moscopt: `Task`, `Grade` and `Splits`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

SPLIT_NAMES = ("train", "val", "test")


@dataclass(frozen=True)
class Task:
    """One benchmark item, ready for an agent.

    `id` is stable: it comes from the source's own id (or a hash of the question), never from
    the position of the item in a file. `prompt` is the full user message (template applied,
    answer instructions included). `gold` is what the grader compares against: an answer
    string, a choice letter, a dict of tests, a dict of IFEval instructions...
    """

    id: str
    benchmark: str
    prompt: str
    gold: Any
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Grade:
    """The score of one response: `reward` in [0, 1] (clamped), the extracted answer.

    `error` is set when the grader itself failed (the caller logs it; the reward is then 0).
    """

    reward: float
    answer: str | None
    detail: str = ""
    error: str | None = None

    def __post_init__(self) -> None:
        r = float(self.reward)
        if math.isnan(r) or self.error is not None:
            r = 0.0
        object.__setattr__(self, "reward", min(1.0, max(0.0, r)))

    @classmethod
    def failed(cls, error: str, answer: str | None = None) -> Grade:
        """A grader error: reward 0, the reason in `error`."""
        return cls(0.0, answer, detail="grader error", error=error)

    @property
    def correct(self) -> bool:
        return self.reward >= 1.0


@dataclass(frozen=True)
class Splits(Mapping[str, list[Task]]):
    """The train/val/test tasks of a benchmark; `splits["all"]` is their concatenation."""

    train: list[Task]
    val: list[Task]
    test: list[Task]
    note: str = ""  # e.g. "split sizes scaled down: the data has only 30 items"

    def __getitem__(self, name: str) -> list[Task]:
        if name == "all":
            return [*self.train, *self.val, *self.test]
        if name in SPLIT_NAMES:
            tasks: list[Task] = getattr(self, name)
            return tasks
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(SPLIT_NAMES)

    def __len__(self) -> int:
        return len(SPLIT_NAMES)

    def ids(self) -> dict[str, list[str]]:
        """The task ids of each split (what a run stores to pin its data)."""
        return {name: [t.id for t in self[name]] for name in SPLIT_NAMES}

    def sizes(self) -> dict[str, int]:
        return {name: len(self[name]) for name in SPLIT_NAMES}


GradeFn = Callable[[Task, str], Grade]  # a benchmark's grader: (task, the agent's reply) -> Grade
