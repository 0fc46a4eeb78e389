"""The front door's constructors: a new run directory, the trainer of a run, the stream engine.

Every way to train goes through them: `moscopt train` and `--resume` (`app.runner`), the library
API (`moscopt.api.train`), studies (through the runner), `moscopt plan`'s pilot (`planning`) and
the test kit; `moscopt stream` (`app.stream`) builds its engine with `make_stream`. Nothing else
constructs a `Trainer` or an engine `Context`: here the config's extensions are chosen
(`app.extensions`) and handed to the engine, which knows none of them by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits, Task
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.extensions.niches.stream import Stream
    from moscopt.lm.base import LM
    from moscopt.optimizer.engine import Trainer
    from moscopt.optimizer.engine.context import ProgressFn
    from moscopt.optimizer.engine.policies import Policies
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState


def create_run(
    path: str | Path, config: Config, pool: Pool, benchmark_ref: str, splits: Splits
) -> RunDir:
    """A new run directory at `path` holding `config` (frozen), `pool` and a fresh state, made
    under the run's lock (a folder that already holds a run is refused, never overwritten)."""
    from moscopt.optimizer.engine import initial_state
    from moscopt.run.rundir import RunDir

    with RunDir(Path(path)).locked():
        state = initial_state(config, pool, benchmark_ref, splits)
        return RunDir.create(Path(path), config, pool, state)


def make_trainer(
    *,
    run: RunDir,
    config: Config,
    benchmark: Benchmark,
    splits: Splits,
    agent_lm: LM,
    optimizer_lm: LM,
    seeds: Pool | None = None,
    progress: ProgressFn | None = None,
    state: RunState | None = None,
) -> Trainer:
    """The trainer of `run` with the policies and the extensions `config` asks for; `seeds`
    defaults to the shipped seed library (what evolution may draw on)."""
    from moscopt.app.extensions import extensions_for
    from moscopt.core.resources import seed_skills_dir
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine import Trainer
    from moscopt.optimizer.engine.skills_phase import minibatches

    if seeds is None:
        seeds = Pool.load(seed_skills_dir(), require_gate=True)
    epochs = config.training.epochs
    trainer = Trainer(
        run=run,
        config=config,
        benchmark=benchmark,
        splits=splits,
        agent_lm=agent_lm,
        optimizer_lm=optimizer_lm,
        seeds=seeds,
        progress=progress,
        state=state,
        policies=policies_for(config, epochs * len(minibatches(config, splits.train, 0))),
        extensions=extensions_for(config),
    )
    preload_embeddings(config, run, trainer.pool)
    return trainer


def make_stream(
    *,
    run: RunDir,
    config: Config,
    benchmark: Benchmark,
    tasks: list[Task],
    agent_lm: LM,
    optimizer_lm: LM,
    seeds: Pool | None = None,
    progress: ProgressFn | None = None,
    window: int = 8,
    lifecycle_every: int = 5,
    memory_every: int = 10,
    hold_every: int = 4,
) -> Stream:
    """The stream engine over `run` (`tasks` in stream order), with the extensions a stream
    uses (its insight transfer sees rewards, not answers)."""
    from moscopt.app.extensions import extensions_for
    from moscopt.benchmarks import Splits
    from moscopt.core.resources import seed_skills_dir
    from moscopt.core.skills import Pool
    from moscopt.extensions.niches.stream import Stream
    from moscopt.optimizer.engine.context import Context

    if seeds is None:
        seeds = Pool.load(seed_skills_dir(), require_gate=True)
    preload_embeddings(config, run)
    ctx = Context(
        run=run,
        config=config,
        benchmark=benchmark,
        splits=Splits(train=tasks, val=[], test=[]),
        agent_lm=agent_lm,
        optimizer_lm=optimizer_lm,
        seeds=seeds,
        progress=progress,
        extensions=extensions_for(config, stream=True),
    )
    size = config.optimizer.batch or config.optimizer.minibatch
    return Stream(
        ctx,
        policies_for(config, -(-len(tasks) // size)),  # one skill step per chunk
        window=window,
        lifecycle_every=lifecycle_every,
        memory_every=memory_every,
        hold_every=hold_every,
    )


def policies_for(config: Config, skill_steps: int) -> Policies:
    """The engine's decision rules for `config`, over a run of `skill_steps` skill-editing
    steps (what the edit budget's schedule spans)."""
    from moscopt.optimizer.engine.policies import Policies
    from moscopt.optimizer.policies.acceptance import make_acceptance
    from moscopt.optimizer.policies.edit_budget import EditBudget
    from moscopt.optimizer.policies.edit_targets import EditTargets
    from moscopt.optimizer.policies.gate_restoration import GateRestoration

    opt, gating = config.optimizer, config.gating
    return Policies(
        acceptance=make_acceptance(
            opt.acceptance,
            confidence=opt.confidence,
            max_samples=opt.max_val_samples,
            margin=opt.margin,
        ),
        budget=EditBudget(opt.schedule, opt.l_max, opt.l_min, max(1, skill_steps)),
        targets=EditTargets(opt.max_targets or config.pool.k),
        restoration=GateRestoration(gating.rebuild_threshold, gating.rebuild_window),
    )


def embedding_models(config: Config) -> list[str]:
    """The embedding models a run of `config` uses: evolution's diversity check, the familiarity
    router, the niches and the execution memory, where each is on."""
    from moscopt.extensions.memory.tracker import MemorySettings

    evolution = config.evolution.embedding_model
    names = [evolution] if config.evolution.enabled else []
    if config.gating.policy in ("familiarity", "hybrid"):
        names.append(config.router.embedding_model)
    if config.niches.enabled or config.niches.transfer:
        names.append(config.niches.embedding_model or evolution)
    if MemorySettings.from_config(config.memory).tracking:
        names.append(config.memory.embedding_model or evolution)
    return names


def preload_embeddings(config: Config, run: RunDir, pool: Pool | None = None) -> list[str]:
    """Start loading the run's embedding models in the background now, so that the first
    vector (the diversity check at the end of the first epoch) does not wait for seconds of
    imports, and embed there the bodies of `pool`'s skills that the check reads first
    (`similarity.warm`: the check then encodes only what changed);
    their vectors go to the project's vector store, beside the response cache.
    Returns the models started (none for hashing or difflib, or without the extra)."""
    from moscopt.embedding import preload
    from moscopt.lm.cache import shared_cache_dir

    names = embedding_models(config)
    if not names:
        return []
    started = preload(names, shared_cache_dir(config.llm, run_path=run.path))
    model = config.evolution.embedding_model
    if config.evolution.enabled and model in started and pool is not None:
        from moscopt.optimizer.similarity import warm

        warm(model, pool.names, [s.body for s in pool.skills])
    return started
