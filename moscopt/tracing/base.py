"""What an observer sees: the run it watches (`RunInfo`), each ledger event and progress update,
and how the run ended (`RunEnd`); and the per-step metrics both run loggers record (`StepRows`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from moscopt.run.ledger import BaseEvent, LLMCall, RolloutEvent

Kind = Literal["train", "eval"]
Status = Literal["done", "stopped", "failed"]


@dataclass(frozen=True)
class RunInfo:
    """The run an observer watches. `id`: stable across the processes of one run (a resumed
    run's observers continue it where the tool allows); `params`: the frozen config, flattened
    to dotted keys; `attributes`: what identifies the run (benchmark, models, split, mode)."""

    kind: Kind
    name: str
    id: str
    path: Path | None
    params: Mapping[str, Any]
    config: Mapping[str, Any]  # the config as nested data (W&B's run config)
    attributes: Mapping[str, Any] = field(default_factory=dict)
    resumed: bool = False
    project: str | None = None  # tracing.project
    artifacts: bool = True  # tracing.artifacts
    started: float = field(default_factory=time.time)


@dataclass(frozen=True)
class RunEnd:
    """How the run ended: `metrics` are its final numbers (validation before and after, the
    certificate, totals); `artifacts` name files and folders to keep (name -> path)."""

    status: Status = "done"
    error: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    artifacts: Mapping[str, Path] = field(default_factory=dict)


class Observer(Protocol):
    """One tracing backend. Called from the tracing thread only, in order: `start`, then any
    number of `event` and `progress`, then `finish` (also after a failed run)."""

    name: str

    def start(self, run: RunInfo) -> None: ...

    def event(self, event: BaseEvent) -> None: ...

    def progress(self, update: Mapping[str, Any]) -> None: ...

    def finish(self, end: RunEnd) -> None: ...


# the progress updates observers hear (not each call's or activity's: they change no metric)
PROGRESS_EVENTS = frozenset({"phase", "step", "edit", "evolution", "done"})
OUTCOME_KEYS = ("accepted", "rejected", "not_applied", "unusable")


class StepRows:
    """The metrics of each completed step of the trainer, as the run loggers record them: one
    row per step (the engine's step counter, across epochs), told by the progress seam, with
    the ledger's rollouts and calls of that step.

    Row keys: `val_score` (the current pool's validation score), `edits_<verdict>` (counts so
    far), `calls`, `tokens`, `cost_usd` (totals so far), `epoch`; from the step's own events:
    `train_reward` (mean reward of its rollouts), `step_calls`, `step_errors` (failed calls),
    `step_cache_hits`."""

    def __init__(self) -> None:
        self._rewards: list[float] = []
        self._calls = self._errors = self._hits = 0

    def event(self, event: BaseEvent) -> None:
        if isinstance(event, RolloutEvent):
            self._rewards.append(event.reward)
        elif isinstance(event, LLMCall):
            self._calls += 1
            self._errors += not event.ok
            self._hits += event.cache_hit

    def row(self, update: Mapping[str, Any]) -> tuple[int, dict[str, float]] | None:
        """The row a `step` or `done` update completes (step, metrics); None for others."""
        if update.get("event") not in ("step", "done"):
            return None
        row: dict[str, float] = {"epoch": float(update.get("epoch", 0))}
        if update.get("best_val") is not None:
            row["val_score"] = float(update["best_val"])
        for key in OUTCOME_KEYS:
            if key in update:
                row[f"edits_{key}"] = float(update[key])
        for key, name in (("calls", "calls"), ("tokens", "tokens"), ("cost", "cost_usd")):
            if update.get(key) is not None:
                row[name] = float(update[key])
        if self._rewards:
            row["train_reward"] = sum(self._rewards) / len(self._rewards)
        row.update(step_calls=self._calls, step_errors=self._errors, step_cache_hits=self._hits)
        self._rewards, self._calls, self._errors, self._hits = [], 0, 0, 0
        return int(update.get("step", 0)), row


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config data as dotted keys; lists and None as their text (`[]`, `None`)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out
