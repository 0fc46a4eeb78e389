"""The `mlflow` and `wandb` observers: a run as experiment trackers show runs.

Both record the same things:
- at the start: the frozen config as parameters (dotted keys: `pool.k`, `optimizer.acceptance`),
  tags naming the run (`moscopt.run`, `moscopt.kind`, benchmark, models);
- per step of the trainer (`base.StepRows`): `val_score`, `edits_accepted`, `edits_rejected`,
  ..., `calls`, `tokens`, `cost_usd`, `train_reward`, `step_calls`, `step_errors`,
  `step_cache_hits`;
- at the end: the final numbers (`val_before`, `val_after`, the certificate's, the totals; an
  evaluation's score and interval) and, with `tracing.artifacts`, the final `skills/` folder and
  `moscopt.yaml` (an evaluation: its results file).

Where they go is each tool's own business, set the usual way: MLflow's `MLFLOW_TRACKING_URI`
(default `sqlite:///mlflow.db` in the current folder), W&B's `WANDB_MODE` (`offline` writes
under `WANDB_DIR`), `WANDB_ENTITY`, `wandb login`. The experiment (MLflow) or project (W&B) is
`tracing.project`, else `MLFLOW_EXPERIMENT_NAME` / `WANDB_PROJECT`, else `moscopt`.

A resumed run continues its tracker run: MLflow's is found by its `moscopt.run_id` tag, W&B's has
that id.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from typing import Any

from moscopt.run.ledger import BaseEvent
from moscopt.tracing.base import RunEnd, RunInfo, StepRows

MLFLOW_STATUS = {"done": "FINISHED", "stopped": "KILLED", "failed": "FAILED"}
PARAM_CHARS = 6000  # MLflow's bound on a parameter's value
BATCH = 100  # MLflow's bound on parameters per request


def _tags(run: RunInfo) -> dict[str, str]:
    return {
        "moscopt.run": run.name,
        "moscopt.run_id": run.id,
        "moscopt.kind": run.kind,
        **({"moscopt.run_path": str(run.path)} if run.path is not None else {}),
        **{f"moscopt.{k}": str(v) for k, v in run.attributes.items()},
    }


class _RunLogger:
    """What both run loggers share: a row of metrics per completed step (`StepRows`), handed to
    `_log` with its step."""

    name = ""

    def __init__(self) -> None:
        self._rows = StepRows()
        self._step = 0

    def event(self, event: BaseEvent) -> None:
        self._rows.event(event)

    def progress(self, update: Mapping[str, Any]) -> None:
        row = self._rows.row(update)
        if row is not None:
            self._step, metrics = row
            self._log(metrics, self._step)

    def _log(self, metrics: Mapping[str, float], step: int) -> None:
        raise NotImplementedError


class MlflowObserver(_RunLogger):
    name = "mlflow"

    def start(self, run: RunInfo) -> None:
        from mlflow import MlflowClient
        from mlflow.entities import Param

        self.run = run
        self.client = client = MlflowClient()
        name = run.project or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "moscopt"
        experiment = client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment else client.create_experiment(name)
        found = client.search_runs(
            [experiment_id], filter_string=f"tags.`moscopt.run_id` = '{run.id}'", max_results=1
        )
        if found:  # a resumed run
            self.run_id = found[0].info.run_id
            client.update_run(self.run_id, status="RUNNING")
            return
        self.run_id = client.create_run(
            experiment_id, run_name=run.name, tags=_tags(run)
        ).info.run_id
        params = [Param(k, str(v)[:PARAM_CHARS]) for k, v in run.params.items()]
        for i in range(0, len(params), BATCH):
            client.log_batch(self.run_id, params=params[i : i + BATCH])

    def finish(self, end: RunEnd) -> None:
        self._log(dict(end.metrics), self._step)
        if self.run.artifacts:
            for name, path in end.artifacts.items():
                if path.is_dir():
                    self.client.log_artifacts(self.run_id, str(path), artifact_path=name)
                elif path.is_file():
                    self.client.log_artifact(self.run_id, str(path))
        self.client.set_terminated(self.run_id, status=MLFLOW_STATUS[end.status])

    def _log(self, metrics: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        if not metrics:
            return
        now = int(time.time() * 1000)
        rows = [Metric(k, float(v), now, step) for k, v in metrics.items()]
        self.client.log_batch(self.run_id, metrics=rows)


class WandbObserver(_RunLogger):
    name = "wandb"

    def start(self, run: RunInfo) -> None:
        import wandb

        self.run = run
        settings = wandb.Settings(console="off", silent=True, x_disable_stats=True)
        self.wb = wandb.init(
            project=run.project or os.environ.get("WANDB_PROJECT") or "moscopt",
            name=run.name,
            id=run.id if run.path is not None else None,
            resume="allow" if run.path is not None else None,
            job_type=run.kind,
            config={**run.config, "moscopt_run": _tags(run)},
            tags=[run.kind],
            settings=settings,
            reinit="create_new",
        )

    def _log(self, metrics: Mapping[str, float], step: int) -> None:
        self.wb.log(dict(metrics), step=max(step, self.wb.step))

    def finish(self, end: RunEnd) -> None:
        import wandb

        self.wb.summary.update(dict(end.metrics))
        if self.run.artifacts and end.artifacts:
            kind = "skills" if self.run.kind == "train" else "results"
            name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{self.run.name}-{kind}")
            artifact = wandb.Artifact(name, type=kind)
            for name, path in end.artifacts.items():
                if path.is_dir():
                    artifact.add_dir(str(path), name=name)
                elif path.is_file():
                    artifact.add_file(str(path), name=name)
            self.wb.log_artifact(artifact)
        self.wb.finish(exit_code=0 if end.status == "done" else 1)
