"""Tracing for teams: opt-in observers that record a run for the tools a team already uses.

    tracing:
      observers: [otel, mlflow, wandb]     # or: moscopt train --trace otel --trace mlflow

- `otel`: OpenTelemetry spans: one root span per process (`moscopt train`, `moscopt eval`), a
  span per step of the trainer, a span per LM call and per decision under it (`otel_spans`).
  The exporter comes from the standard `OTEL_*` environment variables, or from the tracer
  provider the embedding program installed.
- `mlflow`, `wandb`: run logging: the config as parameters, per-step metrics (validation score,
  edit verdicts, calls, tokens, cost), the final skills and config as artifacts (`run_logging`).

Observers are fed from the two seams every run already has: the ledger (each event appended to
`events.jsonl`, LM calls included: both transports, so the direct HTTP path that bypasses
litellm's callbacks is traced too) and the trainer's progress callback. They run on a thread of
their own (`hub.Tracing`): the run only puts each event on a queue. An observer that raises is
logged once and switched off; the run goes on. This module imports nothing heavy: an
observer's library is imported on that thread, and only when it is asked for.
"""

from __future__ import annotations

from moscopt.tracing.base import Observer, RunEnd, RunInfo
from moscopt.tracing.hub import Tracing, check_observers, traced

__all__ = ["Observer", "RunEnd", "RunInfo", "Tracing", "check_observers", "traced"]
