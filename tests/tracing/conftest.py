"""Fixtures of the tracing tests."""

from __future__ import annotations

import pytest

from moscopt.tracing import hub

from .helpers import Recording


@pytest.fixture
def plugged(monkeypatch: pytest.MonkeyPatch) -> dict[str, Recording]:
    """`--trace otel|mlflow|wandb` make `Recording` observers (kept here by name), whatever
    is installed."""
    made: dict[str, Recording] = {}

    def make(name: str) -> Recording:
        made[name] = made.get(name) or Recording(name)
        return made[name]

    monkeypatch.setattr(hub, "make_observer", make)
    monkeypatch.setattr(hub, "_missing", lambda module: False)
    return made
