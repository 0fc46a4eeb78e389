"""What `moscopt train` and `moscopt eval` do, as library calls (the CLI only parses and prints).

These functions tie the pieces together: the project's config and pool, the benchmark and its
splits, the run directory, the LMs (sharing one budget, caching in the run) and the trainer or
the evaluator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.app.assembly import check_models, make_agent, open_lms, starting_pool
from moscopt.app.benchmark import (
    TASKS_SPEC,
    benchmark_ref,
    named_benchmark,
    resolve_benchmark,
    training_benchmark,
)
from moscopt.app.resumption import resumed_config
from moscopt.app.workspace import create_run, make_trainer
from moscopt.config import Config
from moscopt.core import yamlio
from moscopt.core.skills import Pool
from moscopt.errors import UserError
from moscopt.planning.feasibility import config_notes
from moscopt.routing.build import gate_stats, make_router
from moscopt.run.eval_files import new_results_path
from moscopt.run.fsio import atomic_write_text
from moscopt.tracing import check_observers
from moscopt.tracing.runs import eval_tracing, train_tracing

if TYPE_CHECKING:
    from moscopt.agent.evaluate import EvalResult
    from moscopt.agent.harness import Rollout
    from moscopt.benchmarks import Benchmark, Splits, Task
    from moscopt.exports import Deployment
    from moscopt.routing.gate import GateStats
    from moscopt.run.ledger import CertificateEvent
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState


@dataclass
class TrainOutcome:
    run: RunDir
    before: float | None
    after: float | None
    resumed: bool
    changed: bool = True  # False: training kept the starting pool (no edit or evolution kept)
    certificate: CertificateEvent | None = None  # final vs seed pool on held-out tasks


def train(
    *,
    config: Config,
    skills_dir: Path,
    benchmark: str | None,
    run_path: Path | None,
    project_root: Path,
    progress: Callable[[dict[str, Any]], None] | None = None,
    notes: Callable[[str], None] | None = None,
    started: Callable[[Path], None] | None = None,
    tasks: Path | None = None,
    held_out: Path | None = None,
) -> TrainOutcome:
    """Start a new run and train it to the end; `started` is told the run's path as soon as
    the run exists (before the models load). `tasks` (and `held_out`): train on a task file
    whose tasks carry their judges (`moscopt.benchmarks.taskfile`) instead of a benchmark."""
    if config.llm.deployments:  # litellm's Router: its import may start beside the loading
        from moscopt.lm.deployments import preload_router

        preload_router(config.llm)
    bench, splits, spec = training_benchmark(config, benchmark, tasks, held_out)
    pool, messages = starting_pool(skills_dir, config)
    if config.data.path is not None:  # the frozen config must work from any directory
        data = config.data.model_copy(update={"path": str(Path(config.data.path).resolve())})
        config = config.model_copy(update={"data": data})
    check_models(config)
    check_observers(config)
    from moscopt.run.rundir import new_run_path

    path = run_path or new_run_path(project_root / config.runs_dir, bench.name)
    if spec is not None:  # the run names its task files by the spec it keeps in its folder
        bench.spec_path = (path / TASKS_SPEC).resolve()  # written once the run exists
    ref = benchmark_ref(bench)
    config = config.model_copy(update={"benchmark": ref})
    run = create_run(path, config, pool, ref, splits)
    if spec is not None:
        atomic_write_text(path / TASKS_SPEC, yamlio.dump(spec.model_dump(mode="json")))
    if notes is not None:  # before any call
        for m in [*messages, *config_notes(config, splits)]:
            notes(m)
    if started is not None:
        started(run.path)
    with run.locked():
        return _train(run, config, bench, splits, progress, state=run.load_state(), resumed=False)


def resume(
    *,
    run_path: Path,
    overrides: dict[str, Any],
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> TrainOutcome:
    """Continue a run from its last saved point, with its frozen config.

    Everything happens under the run's lock, so a second process changes nothing.
    """
    from moscopt.run.rundir import RunDir

    run = RunDir.open(run_path)
    with run.locked():
        frozen = run.load_config()
        config = resumed_config(run, frozen, overrides)
        state = run.load_state()
        if state.status == "done":
            raise UserError("this run is already finished", path=run.path)
        run.check_events(state)  # before anything is written or asked
        bench, splits = resolve_benchmark(config, state.benchmark)
        ids = {name: [t.id for t in splits[name]] for name in ("train", "val", "test")}
        if state.splits and ids != state.splits:
            raise UserError(
                "the benchmark data no longer gives the splits this run was trained on "
                "(use the same --data / MOSCOPT_DATA_DIR as when it started)",
                path=run.state_path,
                field="splits",
            )
        check_models(config)
        check_observers(config)
        if config != frozen:
            atomic_write_text(run.config_path, config.to_yaml())
        return _train(run, config, bench, splits, progress, state=state, resumed=True)


def _train(
    run: RunDir,
    config: Config,
    bench: Benchmark,
    splits: Splits,
    progress: Callable[[dict[str, Any]], None] | None,
    *,
    state: RunState,
    resumed: bool,
) -> TrainOutcome:
    """Train `run` from `state`, its saved state (read once, by the caller, under its lock),
    watched by the observers of `tracing.observers` (`moscopt.tracing`), if any."""
    from moscopt.lm.errors import LMFatalError

    with train_tracing(run, config, bench.name, progress, resumed=resumed) as (progress, ended):
        first = state.val_history[0].score if state.val_history else None
        with open_lms(
            config,
            run,
            roles=("agent", "optimizer"),
            used_calls=state.totals.calls,
            used_cost=state.totals.cost,
            log_events=True,
            bench=bench,
        ) as lms:
            assert lms.optimizer is not None
            if progress is not None:  # a deployment that goes down or comes back: the display
                _show_deployments(lms.agent, progress)
            trainer = make_trainer(
                run=run,
                config=config,
                benchmark=bench,
                splits=splits,
                agent_lm=lms.agent,
                optimizer_lm=lms.optimizer,
                progress=progress,
                state=state,
            )
            if progress is not None:  # the display's ETA during the first epoch
                trainer.ctx.planned_calls = planned_calls(
                    config, bench, splits, trainer.pool, state
                )
            try:
                asyncio.run(trainer.train())
            except (LMFatalError, KeyboardInterrupt):
                _mark_stopped(run)
                raise
        final = trainer.state
        before = (
            first
            if first is not None
            else (final.val_history[0].score if final.val_history else None)
        )
        from moscopt.optimizer.engine.certificate import latest

        certificate = latest(run, final) if config.training.certificate_samples else None
        changed = _changed(run, final)
        ended()
        return TrainOutcome(run, before, final.cursor.best_val, resumed, changed, certificate)


def planned_calls(
    config: Config, bench: Benchmark, splits: Splits, pool: Pool, state: RunState
) -> int:
    """The calls `moscopt plan --no-pilot` expects from the epoch `state` is in to the end (the
    epoch in progress counted whole): config only, no LLM call."""
    from moscopt.planning import shape_of
    from moscopt.planning.model import count, worst_case

    shape = shape_of(config, bench, splits, pool, start_epoch=state.epoch)
    return round(sum(p.calls for p in count(shape, worst_case(shape))))


def _show_deployments(lm: Any, progress: Callable[[dict[str, Any]], None]) -> None:
    from moscopt.run.ledger import CallSink

    sink = getattr(lm, "events", None)
    if isinstance(sink, CallSink):
        sink.on_deployment = lambda e: progress({"event": "deployment", **e.model_dump()})


def _changed(run: RunDir, state: Any) -> bool:
    """Whether training changed the pool it started from (the `train_start` event names it)."""
    from moscopt.run.ledger import TrainStart

    start = next((e for e in run.read_events(state, {"train_start"})), None)
    return not isinstance(start, TrainStart) or start.pool != (state.pool_digest or "")[:12]


def _mark_stopped(run: RunDir) -> None:
    """Record on disk that the run stopped; the saved state is otherwise left as it was."""
    state = run.load_state()
    state.status = "stopped"
    run.save(state)


# -- evaluation ----------------------------------------------------------------------------------


@dataclass
class EvalOutcome:
    result: EvalResult
    benchmark: str
    split: str
    mode: str
    out: Path


def evaluate(
    *,
    config: Config,
    benchmark: str | None,
    split: str,
    mode: str,
    run_path: Path | None,
    skills_dir: Path | None,
    repeats: str,
    out: Path | None,
    on_rollout: Callable[[Rollout], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    export_path: Path | None = None,
    force: bool = False,
) -> EvalOutcome:
    """Evaluate a deployment mode on a split: `none` (no skills), `mixture` (a run's pool, a
    skills folder or a mixture export, with its gate), `static` (a static export's routing
    table, no gate call), `distilled` (the single distilled skill, no gate call) or `router` (a
    router export's familiarity router, no gate call). `static`, `distilled` and `router` read
    `export_path`, else the run's `exports/<mode>/`. An existing `out` is overwritten only
    with `force`; without `out`, the results go to a new file (`run.eval_files`)."""
    from moscopt.agent.evaluate import evaluate as run_eval
    from moscopt.lm.batch import can_wait, wave_concurrency

    if mode not in ("none", "mixture", "static", "topq", "distilled", "router", "agents"):
        raise UserError(
            f"unknown mode '{mode}' (none, mixture, static, topq, distilled, router or agents)",
            field="mode",
        )
    if split not in ("train", "val", "test", "all"):  # before any data is loaded
        raise UserError(f"unknown split '{split}' (train, val, test or all)", field="split")
    reps: int | str = "auto" if repeats == "auto" else _positive(repeats)
    check_observers(config)
    run: RunDir | None = None
    state: RunState | None = None
    if run_path is not None:  # the run's models are imported only for a run
        from moscopt.run.rundir import RunDir

        run = RunDir.open(run_path)
        state = run.load_state()
    # The deployment: an export folder (--export), the run's own export (static, distilled),
    # or the run's / a folder's pool (mixture).
    deployment: Deployment | None = None
    if mode != "none" and export_path is not None:
        from moscopt.exports import open_export

        deployment = open_export(export_path, mode)
    elif mode in ("static", "topq", "distilled", "router", "agents"):
        if run is None:
            raise UserError(
                f"--mode {mode} needs --run DIR (with a {mode} export) or --export PATH",
                field="mode",
            )
        from moscopt.exports import open_run_export

        deployment = open_run_export(run, mode)
    default_bench = state.benchmark if state else None
    if deployment is not None:
        default_bench = default_bench or deployment.manifest.benchmark
    if split == "all":  # every row of the data, not the union of the three splits
        bench, tasks = _every_task(config, benchmark or default_bench)
    else:
        bench, splits = resolve_benchmark(config, benchmark or default_bench, need=(split,))
        tasks = splits[split]
    if not tasks:
        raise UserError(f"the {split} split of '{bench.name}' is empty", field="split")
    pool: Pool | None = None
    stats: GateStats | None = None
    if deployment is not None:
        pool = deployment.pool
        if deployment.mode == "mixture":
            # route as the trained gate did: its K and its view of the statistics
            stats = deployment.gate_stats(config.credit.c_min)
            k = deployment.manifest.k
            config = config.model_copy(update={"pool": config.pool.model_copy(update={"k": k})})
        elif deployment.mode == "agents":  # as deployed: every skill, the agent routes by them
            gating = config.gating.model_copy(update={"policy": "all"})
            config = config.model_copy(update={"gating": gating})
    elif mode == "mixture":
        if run is not None:
            pool = run.load_pool(state)
        elif skills_dir is not None:
            pool = Pool.load(skills_dir)
        else:
            raise UserError(
                "--mode mixture needs --run DIR, --skills DIR or --export PATH", field="mode"
            )
    table = deployment.table if deployment is not None and deployment.mode != "agents" else None
    if stats is None and state is not None:
        stats = gate_stats(config, state)
    if out is not None and out.exists() and not force:
        raise UserError("exists: pass --force to overwrite it", path=out)
    if out is None:  # never an earlier evaluation's file: the next free name
        folder = run.exports_dir if run is not None else Path()
        out = new_results_path(folder, bench.name, split, mode)
    with (
        eval_tracing(config, bench.name, split, mode) as (observe, ended),
        open_lms(config, run, roles=("agent",), bench=bench, observe=observe) as lms,
    ):
        router = make_router(config, pool, lms.agent, stats=stats, table=table)
        if deployment is not None and deployment.router is not None:
            router = deployment.router.router(pool)  # the familiarity router: no LLM call
        memory = deployment.memory if deployment is not None else None
        if deployment is None and state is not None:
            from moscopt.extensions.memory.params import stored_memory

            memory = stored_memory(state)  # the run's learned memory gates and halting
        agent = make_agent(config, bench, pool, router, lms.agent, memory=memory, tasks=tasks)
        if on_start:
            on_start(len(tasks) * (reps if isinstance(reps, int) else 3))
        with can_wait(config.llm.batch):  # an evaluation can wait: `--batch` batches it
            result = asyncio.run(
                run_eval(
                    agent,
                    tasks,
                    concurrency=wave_concurrency(config.llm),
                    repeats=reps,
                    on_rollout=on_rollout,
                    out=out,  # streamed there as the rollouts complete
                )
            )
        outcome = ended(EvalOutcome(result, bench.name, split, mode, out))
    return outcome


def _every_task(config: Config, name: str | None) -> tuple[Benchmark, list[Task]]:
    bench = named_benchmark(config, name)
    return bench, bench.load_every(data=config.data.path, limit=config.data.limit)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UserError(f"--repeats must be a positive integer or 'auto', not '{text}'") from None
    if value < 1:
        raise UserError("--repeats must be at least 1")
    return value
