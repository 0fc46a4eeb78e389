"""What the observers are told about a training run and an evaluation: `RunInfo` at the start,
`RunEnd` at the end, built from what the application layer has at hand."""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.tracing.base import Kind, RunEnd, RunInfo, flatten
from moscopt.tracing.hub import Progress, traced

if TYPE_CHECKING:
    from moscopt.app.runner import EvalOutcome
    from moscopt.config import Config
    from moscopt.run.rundir import RunDir


def run_info(
    config: Config,
    kind: Kind,
    name: str,
    *,
    path: Path | None = None,
    created: str = "",
    resumed: bool = False,
    **attributes: Any,
) -> RunInfo:
    """The run `name` of `kind`; a run directory's id is a digest of its path and `created`
    (the same in every process of the run, and not a deleted run's of the same path), an
    evaluation's a fresh one."""
    if path is not None:
        digest = hashlib.sha256(f"{path.resolve()}\n{created}".encode()).hexdigest()[:16]
        run_id = f"moscopt-{digest}"
    else:
        run_id = f"moscopt-{uuid.uuid4().hex[:16]}"
    data = config.model_dump(mode="json")
    shown = {
        "model": config.model,
        "optimizer_model": config.effective_optimizer_model,
        **{k: v for k, v in attributes.items() if v is not None},
    }
    return RunInfo(
        kind=kind,
        name=name,
        id=run_id,
        path=path,
        params=flatten(data),
        config=data,
        attributes=shown,
        resumed=resumed,
        project=config.tracing.project,
        artifacts=config.tracing.artifacts,
    )


def train_info(run: RunDir, config: Config, benchmark: str, *, resumed: bool) -> RunInfo:
    return run_info(
        config,
        "train",
        run.path.name,
        path=run.path.resolve(),
        created=run.load_state().created_at,
        resumed=resumed,
        benchmark=benchmark,
        n=config.pool.n,
        k=config.pool.k,
        epochs=config.training.epochs,
        acceptance=config.optimizer.acceptance,
    )


@contextlib.contextmanager
def train_tracing(
    run: RunDir, config: Config, benchmark: str, progress: Progress | None, *, resumed: bool
) -> Iterator[tuple[Progress | None, Callable[[], None]]]:
    """The training's tracing, if `tracing.observers` asks for any: (the progress callback that
    also tells the observers, `ended`: to call once the trainer returned, which finishes them
    with the run's final numbers). The observers hear each event the run's log is given while
    the block runs; a block that raises finishes them as `traced` says."""
    with traced(config, lambda: train_info(run, config, benchmark, resumed=resumed)) as trace:
        if trace is None:
            yield progress, _nothing
            return
        run.watch(trace.event)
        try:
            yield trace.tee(progress), lambda: trace.finish(train_end(run, config))
        finally:
            run.unwatch(trace.event)


def _nothing() -> None:
    return None


def train_end(run: RunDir, config: Config) -> RunEnd:
    """The final numbers of a training run, from its saved state and ledger: validation before
    and after, the certificate's scores, the run's totals; its skills and frozen config as
    artifacts."""
    from moscopt.optimizer.engine.certificate import latest

    state = run.load_state()
    metrics: dict[str, float] = {}
    if state.val_history:
        metrics["val_before"] = state.val_history[0].score
    if state.cursor.best_val is not None:
        metrics["val_after"] = state.cursor.best_val
    certificate = latest(run, state) if config.training.certificate_samples else None
    if certificate is not None:
        for key in ("seed_score", "final_score", "mean_diff", "low", "high", "p_value"):
            value = getattr(certificate, key)
            if value is not None:
                metrics[f"certificate_{key}"] = float(value)
    t = state.totals
    metrics.update(
        calls=t.calls,
        cache_hits=t.cache_hits,
        tokens=t.prompt_tokens + t.completion_tokens,
        cost_usd=t.cost,
    )
    return RunEnd(
        metrics=metrics,
        artifacts={"skills": run.skills_dir.resolve(), "moscopt.yaml": run.config_path.resolve()},
    )


@contextlib.contextmanager
def eval_tracing(
    config: Config, benchmark: str, split: str, mode: str
) -> Iterator[tuple[Callable[[dict[str, Any]], None] | None, Callable[[EvalOutcome], EvalOutcome]]]:
    """An evaluation's tracing, if any: (the LM layer's sink for its calls, `ended`)."""
    name = f"eval-{benchmark}-{split}-{mode}"

    def info() -> RunInfo:
        return run_info(config, "eval", name, benchmark=benchmark, split=split, mode=mode)

    with traced(config, info) as trace:
        if trace is None:
            yield None, lambda outcome: outcome
            return

        def ended(outcome: EvalOutcome) -> EvalOutcome:
            trace.finish(eval_end(outcome))
            return outcome

        yield trace.lm_record, ended


def eval_end(outcome: EvalOutcome) -> RunEnd:
    """The final numbers of an evaluation (its summary's), its results file as an artifact."""
    summary = outcome.result.summary()
    low, high = summary.pop("ci95")
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, int | float)}
    numbers.update(ci95_low=low, ci95_high=high, cost_usd=numbers.pop("cost", 0.0))
    return RunEnd(metrics=numbers, artifacts={outcome.out.name: outcome.out})
