"""The library API: train, evaluate, export and route from Python, with your own LM and tasks.

    import moscopt

    rows = [{"question": "What is 17 + 25?", "answer": "42"}, ...]
    result = moscopt.train(
        rows,
        grader="numeric",                       # or a function (row, response) -> float | bool
        instructions="End with FINAL ANSWER: <n>",
        lm="openai/gpt-4.1-mini",               # a model string, an `LM`, or a function
        config={"pool.k": 2, "training.epochs": 1},
        run_dir="runs/api-demo",
    )
    print(result.before, "->", result.after, result.pool.names)
    report = moscopt.evaluate(rows, grader="numeric", skills=result.run_dir, lm=...)
    moscopt.export(result.run_dir, "static", tasks=rows, grader="numeric")
    moscopt.route("What is 3 + 4?", run_dir=result.run_dir, lm=...).skills

Arguments everywhere: `tasks` are rows (see `moscopt.benchmarks.inline`) or, with `benchmark`,
a built-in benchmark's name or a spec file; `config` is a `Config`, a mapping of dotted keys
(`{"pool.k": 2}`, checked like moscopt.yaml), or a moscopt.yaml path; `lm` is an object with
the `LM` protocol (`moscopt.lm.base.LM`; used as it is: its own cache and budget), a function
`(messages) -> str` (wrapped in `FunctionLM`), or a model string (built by moscopt: the project's
cache, budgets, retries). Results are typed dataclasses. Errors are `moscopt.UserError` (bad
input, raised before any work) and `moscopt.RunFailed` (a run that stopped, its state saved: the
provider unreachable, a budget, an exception in your LM function as `LMFunctionError` with it as
the cause), both `moscopt.MoscoptError`, whose `str()` is one line for a script to print:

    try:
        result = moscopt.train(rows, lm="openai/gpt-4.1-mini")
    except moscopt.MoscoptError as e:
        sys.exit(f"train: {e}")

Each call runs its own event loop; called from a running loop (a notebook) it runs in a thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.app.library import (
    ConfigLike,
    FunctionLM,
    FunctionLMWarning,
    LMFunctionError,
    LMLike,
    Tasks,
    benchmark_of,
    config_of,
    deployment_of,
    lms_of,
    run_sync,
)
from moscopt.errors import UserError

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.core.skills import Pool
    from moscopt.exports import ExportResult


@dataclass(frozen=True)
class TrainResult:
    run_dir: Path
    before: float | None  # the starting pool's validation score
    after: float | None  # the final pool's
    pool: Pool
    status: str
    accepted: int
    rejected: int
    calls: int
    cost: float
    q_scores: dict[str, float]


@dataclass(frozen=True)
class EvalReport:
    score: float
    ci95: tuple[float, float]
    tasks: int
    errors: int  # rollouts whose LM call or grader failed
    calls: int
    cost: float
    rollouts: list[Rollout]


@dataclass(frozen=True)
class Routing:
    skills: tuple[str, ...]
    source: str  # gate, fallback, static, single, all, ...
    error: str | None = None  # why the gate's answer was not used
    rule: str | None = None  # static: the rule that matched


# -- train ---------------------------------------------------------------------------------------


def train(
    tasks: Tasks | None = None,
    *,
    grader: Any = "exact",
    instructions: str = "",
    benchmark: str | None = None,
    skills: Pool | str | Path | None = None,
    config: ConfigLike = None,
    lm: LMLike = None,
    optimizer_lm: LMLike = None,
    run_dir: str | Path | None = None,
    resume: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Optimize a pool (`skills`: a Pool, a skills folder; default the seed library) on `tasks`
    or `benchmark`; a new run in `run_dir` (default `runs/<name>-<time>`), or with `resume` the
    run there continued (give the same tasks).

    `grader`: a grader name (exact, numeric, math, choice, ...) or `(row, response) -> float |
    bool`; `instructions`: the answer format the agent is told; `config`: a `Config`, dotted
    keys (`{"pool.k": 2}`) or a moscopt.yaml path; `lm` / `optimizer_lm`: a model string, an
    `LM`, or a function `(messages, purpose=...) -> str`; `progress`: called with each event.
    Raises `UserError` (bad input, before any work) or `RunFailed` (the run stopped, saved).

    Example::

        result = moscopt.train(rows, grader="numeric", lm="openai/gpt-4.1-mini",
                               config={"pool.k": 2, "training.epochs": 1})
        print(result.before, "->", result.after, result.accepted, "edits kept")
    """
    from moscopt.app.assembly import pool_warnings, starting_pool
    from moscopt.app.workspace import create_run, make_trainer
    from moscopt.core.resources import seed_skills_dir
    from moscopt.core.skills import Pool
    from moscopt.run.rundir import RunDir, new_run_path

    cfg = config_of(config, lm, optimizer_lm)
    bench, splits, ref = benchmark_of(cfg, tasks, grader, benchmark, instructions)
    cfg = cfg.model_copy(update={"benchmark": ref})
    if resume:
        if run_dir is None:
            raise UserError("resume=True needs run_dir", field="run_dir")
        run = RunDir.open(run_dir)
        state = run.load_state()
        if state.splits and state.splits != splits.ids():
            raise UserError("these tasks do not give the run's splits", path=run.state_path)
        cfg = run.load_config()
    else:
        if isinstance(skills, Pool):
            pool = skills
            pool_warnings(len(pool), cfg)
        else:
            pool, _ = starting_pool(Path(skills) if skills else seed_skills_dir(), cfg)
        path = Path(run_dir) if run_dir else new_run_path(Path(cfg.runs_dir), bench.name)
        run = create_run(path, cfg, pool, ref, splits)
    with run.locked(), lms_of(cfg, run, lm, optimizer_lm) as (agent_lm, opt_lm):
        trainer = make_trainer(
            run=run,
            config=cfg,
            benchmark=bench,
            splits=splits,
            agent_lm=agent_lm,
            optimizer_lm=opt_lm,
            progress=progress,
        )
        run_sync(lambda: trainer.train())
    s = trainer.state
    return TrainResult(
        run_dir=run.path,
        before=s.val_history[0].score if s.val_history else None,
        after=s.cursor.best_val,
        pool=trainer.pool,
        status=s.status,
        accepted=sum(o.accepted for o in s.optimizers.values()),
        rejected=sum(o.rejected for o in s.optimizers.values()),
        calls=s.totals.calls,
        cost=s.totals.cost,
        q_scores=dict(sorted(s.q.items())),
    )


# -- evaluate ------------------------------------------------------------------------------------


def evaluate(
    tasks: Tasks | None = None,
    *,
    grader: Any = "exact",
    instructions: str = "",
    benchmark: str | None = None,
    skills: Pool | str | Path | None = None,
    split: str = "test",
    config: ConfigLike = None,
    lm: LMLike = None,
    repeats: int | str = 1,
) -> EvalReport:
    """Score a deployment on a split: `skills` is a Pool, a skills folder, a run directory or
    an export folder (mixture, static or distilled); None: no skills (the baseline).

    `split`: train, val, test or all; `repeats`: samples per task (an int, or "auto" for
    adaptive repeats); the other arguments as in `train`.

    Example::

        report = moscopt.evaluate(rows, grader="numeric", skills="runs/api-demo", lm=my_lm)
        print(f"{report.score:.3f} ({report.ci95[0]:.3f}-{report.ci95[1]:.3f})")
    """
    from moscopt.agent.evaluate import evaluate as run_eval
    from moscopt.app.assembly import make_agent
    from moscopt.routing.build import make_router

    if split not in ("train", "val", "test", "all"):
        raise UserError(f"unknown split '{split}' (train, val, test or all)", field="split")
    cfg = config_of(config, lm, None)
    bench, splits, _ = benchmark_of(cfg, tasks, grader, benchmark, instructions)
    chosen = splits[split]
    if not chosen:
        raise UserError(f"the {split} split is empty", field="split")
    pool, stats, table, cfg = deployment_of(skills, cfg)
    with lms_of(cfg, None, lm, None, roles=("agent",)) as (agent_lm, _):
        router = make_router(cfg, pool, agent_lm, stats=stats, table=table)
        agent = make_agent(cfg, bench, pool, router, agent_lm)
        result = run_sync(
            lambda: run_eval(agent, chosen, concurrency=cfg.llm.concurrency, repeats=repeats)
        )
    s = result.summary()
    return EvalReport(
        score=s["score"],
        ci95=(s["ci95"][0], s["ci95"][1]),
        tasks=s["tasks"],
        errors=s["errors"],
        calls=s["calls"],
        cost=s["cost"],
        rollouts=result.rollouts,
    )


# -- export and route ----------------------------------------------------------------------------


def export(
    run_dir: str | Path,
    mode: str,
    *,
    out: str | Path | None = None,
    force: bool = False,
    tasks: Tasks | None = None,
    grader: Any = "exact",
    instructions: str = "",
    lm: LMLike = None,
    optimizer_lm: LMLike = None,
    config: Mapping[str, Any] | None = None,
    top: int | None = None,
) -> ExportResult:
    """Export a run (see `moscopt.exports`) as `mode`: mixture, static, distilled, router or
    agents, into `out` (default `<run>/exports/<mode>/`; an existing folder only with
    `force`). A run trained on Python `tasks` needs them again for `static` (its table is
    learned from the gate's decisions on them) and `distilled`; `top`: skills kept.

    Example::

        exported = moscopt.export("runs/api-demo", "static", tasks=rows, grader="numeric")
        print(exported.out)
    """
    from moscopt.exports import export_run
    from moscopt.run.rundir import RunDir

    run = RunDir.open(run_dir)
    frozen = run.load_config()
    resolved = None
    if tasks is not None:
        bench, splits, _ = benchmark_of(frozen, tasks, grader, None, instructions)
        resolved = (bench, splits)
    from moscopt.app.assembly import LMs

    own = mode == "distilled" and (lm is not None or optimizer_lm is not None)
    with lms_of(frozen, None, lm, optimizer_lm) if own else contextlib.nullcontext() as pair:
        return export_run(
            run_path=run.path,
            mode=mode,
            out=Path(out) if out is not None else None,
            force=force,
            overrides=dict(config or {}),
            top=top,
            resolved=resolved,
            lms=LMs(*pair) if pair is not None else None,
        )


def route(
    task: str,
    *,
    run_dir: str | Path | None = None,
    export_dir: str | Path | None = None,
    lm: LMLike = None,
    config: ConfigLike = None,
) -> Routing:
    """Which skills a run's pool (its gate) or an export (mixture: its gate; static: its
    table, no model call) activates for `task`; give `run_dir` or `export_dir`.

    Example::

        routing = moscopt.route("What is 3 + 4?", run_dir="runs/api-demo", lm=my_lm)
        print(routing.skills, routing.source)
    """
    from moscopt.routing.build import make_router

    if (run_dir is None) == (export_dir is None):
        raise UserError("give run_dir or export_dir", field="run_dir")
    cfg = config_of(config, lm, None)
    pool, stats, table, cfg = deployment_of(Path(run_dir or export_dir or "."), cfg)
    if table is not None:
        match = table.match(task)
        return Routing(tuple(match.skills), "static", rule=match.describe())
    with lms_of(cfg, None, lm, None, roles=("agent",)) as (agent_lm, _):
        router = make_router(cfg, pool, agent_lm, stats=stats)
        act = run_sync(lambda: router.select(task))
    return Routing(tuple(act.skills), act.source, error=act.error)


__all__ = [
    "EvalReport",
    "FunctionLM",
    "FunctionLMWarning",
    "LMFunctionError",
    "Routing",
    "TrainResult",
    "evaluate",
    "export",
    "route",
    "train",
]
