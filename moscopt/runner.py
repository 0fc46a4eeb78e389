"""What `moscopt train` and `moscopt eval` do, as library calls (the CLI only parses and prints).

These functions tie the pieces together: the project's config and pool, the benchmark and its
splits, the run directory, the LMs (sharing one budget, caching in the run) and the trainer or
the evaluator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.config import Config
from moscopt.errors import UserError
from moscopt.fsio import atomic_write_text
from moscopt.resources import seed_skills_dir
from moscopt.rundir import RunDir
from moscopt.skills import Pool

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.evaluate import EvalResult
    from moscopt.gating import GateStats, Router
    from moscopt.harness import Rollout
    from moscopt.lm.base import LM
    from moscopt.routing_table import RoutingTable

# Flags that may change when a run resumes (operational); anything else must match the frozen
# config, or the resumed run would silently become a different experiment.
RESUMABLE = ("llm.concurrency", "llm.max_calls", "llm.max_cost", "llm.timeout", "llm.max_retries")


@dataclass
class TrainOutcome:
    run: RunDir
    before: float | None
    after: float | None
    resumed: bool


def resolve_benchmark(config: Config, name: str | None) -> tuple[Benchmark, Splits]:
    from moscopt.benchmarks import get_benchmark

    name = name or config.benchmark
    if not name:
        raise UserError("no benchmark: pass --benchmark NAME (see `moscopt benchmarks`)")
    bench = get_benchmark(name)
    splits = bench.load_config(config.data)
    for split in ("train", "val"):
        if not splits[split]:
            raise UserError(f"the {split} split of '{bench.name}' is empty", field="data")
    return bench, splits


def benchmark_ref(bench: Benchmark) -> str:
    """How a run refers to its benchmark: the name of a built-in one, else its spec's path."""
    from moscopt.resources import benchmark_specs_dir

    path = bench.spec_path
    if path is None or path.resolve().parent == benchmark_specs_dir().resolve():
        return bench.name
    return str(path.resolve())


def starting_pool(skills_dir: Path, config: Config) -> tuple[Pool, list[str]]:
    """The pool a new run starts from: the first N skills (by name) and a gate."""
    notes = []
    pool = Pool.load(skills_dir)
    n, k = config.pool.n, config.pool.k
    if len(pool) > n:
        notes.append(f"using the first {n} of {len(pool)} skills in {skills_dir} (pool.n = {n})")
        pool = Pool(skills=pool.skills[:n], gate=pool.gate)
    if k > len(pool):
        raise UserError(
            f"K = {k} but only {len(pool)} skills are available in {skills_dir}", field="pool.k"
        )
    notes.extend(pool_warnings(len(pool), config))
    if pool.gate is None and not (len(pool) == 1 and k == 1):
        seeds = Pool.load(seed_skills_dir(), require_gate=True)
        pool = Pool(skills=pool.skills, gate=seeds.gate)
        notes.append(f"{skills_dir} has no gate/SKILL.md: using the seed library's gate")
    return pool, notes


def pool_warnings(n: int, config: Config) -> list[str]:
    """K checked against the pool actually loaded (not `pool.n`): K >= N turns the gate off and
    is an error unless asked for (`--gate all`); K/N > 0.8 leaves the gate little choice."""
    k = config.pool.k
    if n == 1 and k == 1:
        return []  # single-skill optimization
    if k >= n and config.gating.policy != "all":
        raise UserError(
            f"K = {k} with a pool of {n} skills: the gate would select nothing; add skills, "
            "lower pool.k, or pass --gate all for the K = N ablation",
            field="pool.k",
        )
    if k < n and k / n > 0.8:
        return [f"K/N = {k}/{n} > 0.8: gating has little to choose; add skills or lower K"]
    return []


def build_lms(
    config: Config,
    run: RunDir | None,
    used_calls: int = 0,
    used_cost: float = 0.0,
    *,
    log_events: bool = False,
) -> tuple[LM, LM]:
    """The agent's and the optimizer's LM: one budget, the run's cache.

    Only training logs its calls in the run's events.jsonl (`log_events`): the log belongs to
    the trainer, which rewinds it to its last save when a run resumes. Evaluation, export and
    routing report their calls in their own output instead.
    """
    from moscopt.ledger import CallSink
    from moscopt.lm import Budget, build_lm
    from moscopt.lm.cache import RECORD_FILE, shared_cache_dir

    budget = Budget(config.llm.max_calls, config.llm.max_cost, calls=used_calls, cost=used_cost)
    # The response cache is the project's, shared by its runs; the run records what it used.
    cache_dir = shared_cache_dir(config.llm, run_path=run.path if run is not None else None)
    record = run.cache_dir / RECORD_FILE if run is not None else None
    events = CallSink(run.events) if (run is not None and log_events) else None
    agent = build_lm(
        config, role="agent", cache_dir=cache_dir, record=record, events=events, budget=budget
    )
    if config.effective_optimizer_model == config.model:
        return agent, agent
    optimizer = build_lm(config, role="optimizer", cache=agent.cache, events=events, budget=budget)
    return agent, optimizer


def close_lms(*lms: LM) -> None:
    """Release the LMs' connections and cache handles (a closed cache leaves no open WAL)."""
    for lm in dict.fromkeys(lms):  # the agent and the optimizer may be one object
        close = getattr(lm, "close", None)
        if close is not None:
            close()


def default_run_path(config: Config, root: Path, benchmark: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return root / config.runs_dir / f"{benchmark}-{stamp}"


def train(
    *,
    config: Config,
    skills_dir: Path,
    benchmark: str | None,
    run_path: Path | None,
    project_root: Path,
    progress: Callable[[dict[str, Any]], None] | None = None,
    notes: Callable[[str], None] | None = None,
) -> TrainOutcome:
    """Start a new run and train it to the end."""
    bench, splits = resolve_benchmark(config, benchmark)
    pool, messages = starting_pool(skills_dir, config)
    for m in messages:
        if notes:
            notes(m)
    ref = benchmark_ref(bench)
    config = config.model_copy(update={"benchmark": ref})
    if config.data.path is not None:  # the frozen config must work from any directory
        data = config.data.model_copy(update={"path": str(Path(config.data.path).resolve())})
        config = config.model_copy(update={"data": data})
    path = run_path or default_run_path(config, project_root, bench.name)
    from moscopt.engine import initial_state

    _check_models(config)
    with RunDir(path).locked():
        run = RunDir.create(path, config, pool, initial_state(config, pool, ref, splits))
        return _train(run, config, bench, splits, progress, resumed=False)


def resume(
    *,
    run_path: Path,
    overrides: dict[str, Any],
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> TrainOutcome:
    """Continue a run from its last saved point, with its frozen config.

    Everything happens under the run's lock, so a second process changes nothing.
    """
    run = RunDir.open(run_path)
    with run.locked():
        frozen = run.load_config()
        changed = {k: v for k, v in overrides.items() if v is not None}
        fixed = [k for k in changed if k not in RESUMABLE and _get(frozen, k) != changed[k]]
        if fixed:
            raise UserError(
                "a resumed run keeps its frozen config; these flags would change it: "
                + ", ".join(fixed),
                path=run.config_path,
            )
        from moscopt.config import load_config

        config = load_config(run.config_path, changed) if changed else frozen
        state = run.load_state()
        if state.status == "done":
            raise UserError("this run is already finished", path=run.path)
        bench, splits = resolve_benchmark(config, state.benchmark)
        ids = {name: [t.id for t in splits[name]] for name in ("train", "val", "test")}
        if state.splits and ids != state.splits:
            raise UserError(
                "the benchmark data no longer gives the splits this run was trained on "
                "(use the same --data / MOSCOPT_DATA_DIR as when it started)",
                path=run.state_path,
                field="splits",
            )
        _check_models(config)
        if config != frozen:
            atomic_write_text(run.config_path, config.to_yaml())
        return _train(run, config, bench, splits, progress, resumed=True)


def _train(
    run: RunDir,
    config: Config,
    bench: Benchmark,
    splits: Splits,
    progress: Callable[[dict[str, Any]], None] | None,
    *,
    resumed: bool,
) -> TrainOutcome:
    from moscopt.engine import Trainer
    from moscopt.lm.errors import LMFatalError

    # The caller holds the run's lock.
    state = run.load_state()
    agent_lm, optimizer_lm = build_lms(
        config, run, state.totals.calls, state.totals.cost, log_events=True
    )
    seeds = Pool.load(seed_skills_dir(), require_gate=True)
    trainer = Trainer(
        run=run,
        config=config,
        benchmark=bench,
        splits=splits,
        agent_lm=agent_lm,
        optimizer_lm=optimizer_lm,
        seeds=seeds,
        progress=progress,
    )
    first = state.val_history[0].score if state.val_history else None
    try:
        asyncio.run(trainer.train())
    except (LMFatalError, KeyboardInterrupt):
        _mark_stopped(run)
        raise
    finally:
        close_lms(agent_lm, optimizer_lm)
    final = run.load_state()
    before = (
        first if first is not None else (final.val_history[0].score if final.val_history else None)
    )
    return TrainOutcome(run, before, final.cursor.best_val, resumed)


def _mark_stopped(run: RunDir) -> None:
    """Record on disk that the run stopped; the saved state is otherwise left as it was."""
    state = run.load_state()
    state.status = "stopped"
    run.save(state)


def _check_models(config: Config) -> None:
    from moscopt.lm import check_model

    check_model(config.model, config.api_base, field="model")
    if config.effective_optimizer_model != config.model:
        check_model(config.effective_optimizer_model, config.api_base, field="optimizer_model")


def _get(config: Config, dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


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
) -> EvalOutcome:
    """Evaluate a deployment mode on a split: `none` (no skills), `mixture` (a run's pool, a
    skills folder or a mixture export, with its gate), `static` (a static export's routing
    table, no gate call) or `distilled` (the single distilled skill, no gate call). `static`
    and `distilled` read `export_path`, else the run's `exports/<mode>/`."""
    from moscopt.agent import SkillAgent, agent_tools
    from moscopt.evaluate import evaluate as run_eval
    from moscopt.export import Deployment, open_export, open_run_export
    from moscopt.state import RunState

    if mode not in ("none", "mixture", "static", "distilled"):
        raise UserError(f"unknown mode '{mode}' (none, mixture, static or distilled)", field="mode")
    reps: int | str = "auto" if repeats == "auto" else _positive(repeats)
    run = RunDir.open(run_path) if run_path is not None else None
    state: RunState | None = run.load_state() if run is not None else None
    # The deployment: an export folder (--export), the run's own export (static, distilled),
    # or the run's / a folder's pool (mixture).
    deployment: Deployment | None = None
    if mode != "none" and export_path is not None:
        deployment = open_export(export_path, mode)
    elif mode in ("static", "distilled"):
        if run is None:
            raise UserError(
                f"--mode {mode} needs --run DIR (with a {mode} export) or --export PATH",
                field="mode",
            )
        deployment = open_run_export(run, mode)
    default_bench = state.benchmark if state else None
    if deployment is not None:
        default_bench = default_bench or deployment.manifest.benchmark
    bench, splits = resolve_benchmark(config, benchmark or default_bench)
    if split not in ("train", "val", "test", "all"):
        raise UserError(f"unknown split '{split}' (train, val, test or all)", field="split")
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
    elif mode == "mixture":
        if run is not None:
            pool = run.load_pool(state)
        elif skills_dir is not None:
            pool = Pool.load(skills_dir)
        else:
            raise UserError(
                "--mode mixture needs --run DIR, --skills DIR or --export PATH", field="mode"
            )
    _check_models(config)
    agent_lm, _ = build_lms(config, run)
    table = deployment.table if deployment is not None else None
    router = make_router(config, pool, state, agent_lm, table=table, stats=stats)
    tools, steps = agent_tools(config.agent.tools, bench, config.agent.max_steps)
    agent = SkillAgent(
        agent_lm,
        bench,
        pool,
        router,
        tools=tools,
        max_steps=steps,
        granularity=config.gating.granularity,
    )
    if on_start:
        on_start(len(tasks) * (reps if isinstance(reps, int) else 3))
    try:
        result = asyncio.run(
            run_eval(
                agent,
                tasks,
                concurrency=config.llm.concurrency,
                repeats=reps,
                on_rollout=on_rollout,
            )
        )
    finally:
        close_lms(agent_lm)
    if out is None:
        name = f"eval-{bench.name}-{split}-{mode}.jsonl"
        out = (run.exports_dir / name) if run is not None else Path(name)
    import json

    lines = [json.dumps(r.to_json(), ensure_ascii=False, sort_keys=True) for r in result.rollouts]
    atomic_write_text(out, "\n".join(lines) + "\n")
    return EvalOutcome(result, bench.name, split, mode, out)


def make_router(
    config: Config,
    pool: Pool | None,
    state: Any,
    lm: LM,
    *,
    table: RoutingTable | None = None,
    stats: GateStats | None = None,
) -> Router:
    """The router a deployment uses: a static routing `table` if given (no model call), else
    the trained gate seeing the run's statistics (`state`, or `stats` from an export)."""
    from moscopt.gating import FixedSkills, GateStats, LLMGate, RandomGate, constrained_gate

    if pool is None:
        return FixedSkills((), "none")
    if table is not None:
        from moscopt.routing_table import StaticRouter

        return StaticRouter(table)
    k = min(config.pool.k, len(pool))
    if len(pool) == 1 or config.gating.policy == "all" or k >= len(pool):
        return FixedSkills(pool.names, "single" if len(pool) == 1 else "all")
    if config.gating.policy == "random" or pool.gate is None:
        return RandomGate(pool, k, config.seed)
    if stats is None and state is None:
        stats = GateStats(c_min=config.credit.c_min)
    elif stats is None:
        stats = GateStats(
            q=state.q,
            activations=state.activations,
            enriched=state.epoch >= config.gating.enrich_epoch,
            c_min=config.credit.c_min,
        )
    constrained = constrained_gate(lm.model, config.gating.output)
    return LLMGate(lm, pool, k, stats, constrained=constrained)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UserError(f"--repeats must be a positive integer or 'auto', not '{text}'") from None
    if value < 1:
        raise UserError("--repeats must be at least 1")
    return value
