"""Helpers of the tracing tests: a recording observer, training and evaluation arguments for
the scripted project (`tests/conftest.py`'s `project`) against the loopback server."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from moscopt.run.ledger import BaseEvent
from moscopt.tracing.base import RunEnd, RunInfo


class Recording:
    """An observer that keeps what it is told (and raises where it is told to)."""

    def __init__(self, name: str = "recording", fail_on: str | None = None) -> None:
        self.name = name
        self.fail_on = fail_on
        self.started: list[RunInfo] = []
        self.events: list[BaseEvent] = []
        self.updates: list[dict[str, Any]] = []
        self.ended: list[RunEnd] = []
        self.calls = 0

    def _maybe_fail(self, kind: str) -> None:
        self.calls += 1
        if kind == self.fail_on:
            raise RuntimeError(f"{self.name} broke in {kind}")

    def start(self, run: RunInfo) -> None:
        self._maybe_fail("start")
        self.started.append(run)

    def event(self, event: BaseEvent) -> None:
        self._maybe_fail("event")
        self.events.append(event)

    def progress(self, update: Mapping[str, Any]) -> None:
        self._maybe_fail("progress")
        self.updates.append(dict(update))

    def finish(self, end: RunEnd) -> None:
        self._maybe_fail("finish")
        self.ended.append(end)


def train_args(url: str, *extra: str, run: str = "runs/r1", steps: int = 2) -> list[str]:
    return [
        "train", "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base", url,
        "--data", "addition.jsonl", "--n", "3", "--k", "2", "--epochs", "1",
        "--steps-per-epoch", str(steps), "--run", run, "--no-evolution", *extra,
    ]  # fmt: skip


def eval_args(url: str, *extra: str) -> list[str]:
    return [
        "eval", "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base", url,
        "--data", "addition.jsonl", "--skills", "skills", "--mode", "mixture", *extra,
    ]  # fmt: skip


def logged(run: Path, kind: str) -> list[dict[str, Any]]:
    """The events of `kind` in the run's events.jsonl."""
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]
