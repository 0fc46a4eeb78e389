"""Run a study: every configuration under every seed, at one call budget, then the table.

The runs go at once (`moscopt.study.schedule`), up to `runs_at_once` of them, all sharing one
cap of `llm.concurrency` requests in flight; a deployment row or another optimizer starts once
its seed's `full` run is finished (they derive from it). Each run is what it would be alone, so
the table is the one a study running them one after another gives. A run whose record exists
is skipped; a run that was interrupted is resumed with the calls its
resume rewinds taken off its budget (`moscopt.study.accounting`), so it ends where an
uninterrupted run would. Every run has its own response cache: no run is cheaper because
another went first.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moscopt.config import Config, load_config
from moscopt.core import jsonio
from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_json
from moscopt.study.accounting import RewoundCalls, Spending, run_spending
from moscopt.study.configurations import FULL, Configuration, get
from moscopt.study.layout import Manifest, StudyDir, config_digest, run_name
from moscopt.study.schedule import TRAINED, Board, Job

Notify = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class StudySpec:
    kind: str  # ablate | compare
    benchmark: str | None
    budget_calls: int
    seeds: list[int]
    configurations: list[str]
    repeats: str = "auto"
    config_path: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # dotted keys, as `--set`
    runs_at_once: int | None = None  # default: --concurrency (a waiting run holds nothing)


@dataclass
class StudyOutcome:
    path: Path
    table: dict[str, Any]
    ran: list[str]  # runs finished by this invocation
    skipped: list[str]  # runs already finished before it
    outputs: list[Path]


class _Context:
    """What every run of the study shares: the project, the benchmark, the frame."""

    def __init__(self, spec: StudySpec, study: StudyDir) -> None:
        from moscopt.app.benchmark import benchmark_ref, resolve_benchmark
        from moscopt.app.project import open_project
        from moscopt.core.skills import Pool

        if spec.budget_calls < 1:
            raise UserError("--budget-calls must be at least 1", field="budget_calls")
        if not spec.seeds:
            raise UserError("a study needs at least one seed", field="seeds")
        if spec.runs_at_once is not None and spec.runs_at_once < 1:
            raise UserError("--runs-at-once must be at least 1", field="runs_at_once")
        self.spec, self.study = spec, study
        self.board: Board | None = None  # set by run_study: where each run stands
        if any(get(n).kind == "gepa" for n in spec.configurations):
            from moscopt.study.gepa_side import require_gepa

            require_gepa()  # before any run: not after hours of training
        flags = dict(spec.overrides)
        project = open_project(spec.config_path, flags)
        if project.config.data.path is not None:  # runs must find the data from anywhere
            flags["data.path"] = str(Path(project.config.data.path).resolve())
        self.flags = flags
        self.config_path = project.config_path
        self.root = project.root
        self.skills_dir = project.skills_dir
        bench, _ = resolve_benchmark(load_config(self.config_path, flags), spec.benchmark)
        self.benchmark = benchmark_ref(bench)
        self.pool_size = 0  # known once the base config is: only `pool.k: N` reads it
        self.base = self.config(Configuration(FULL, ""), spec.seeds[0], cache=None)
        self.pool_size = min(len(Pool.load(self.skills_dir)), self.base.pool.n)

    def config(self, conf: Configuration, seed: int, *, cache: Path | None) -> Config:
        keys: dict[str, Any] = {
            **self.flags,
            **conf.resolved(self.pool_size),
            "seed": seed,
            "benchmark": self.benchmark,
            "llm.max_calls": self.spec.budget_calls,
            # no end-of-run certificate: the study compares every row on the test split itself,
            # and the training budget is for training
            "training.certificate_samples": 0,
        }
        if cache is not None:
            keys["llm.cache_dir"] = str(cache.resolve())
        return load_config(self.config_path, keys)

    def manifest(self) -> Manifest:
        data = self.base.model_dump(mode="json")
        return Manifest(
            kind=self.spec.kind,
            benchmark=self.benchmark,
            budget_calls=self.spec.budget_calls,
            seeds=list(self.spec.seeds),
            configurations=list(self.spec.configurations),
            repeats=self.spec.repeats,
            config_digest=config_digest(data),
        )


def run_study(spec: StudySpec, path: Path, *, notify: Notify | None = None) -> StudyOutcome:
    """Run (or continue) the study in `path`; write and return its table."""
    from moscopt.lm.inflight import InFlight
    from moscopt.study.schedule import Board, run_jobs
    from moscopt.study.table import build_table, write_outputs

    study = StudyDir(path)
    ctx = _Context(spec, study)
    study.open_or_create(ctx.manifest(), ctx.base.to_yaml())
    jobs = plan(spec)
    board = ctx.board = Board(jobs)
    ran: list[str] = []
    skipped: list[str] = []
    total = len(jobs)
    for job in jobs:
        record = study.record(job.name)
        if record is not None:
            skipped.append(job.name)
            board.finished_before(job, record)
            _tell(notify, "skipped", job.name, len(skipped), total, record, board)
    cap = InFlight(ctx.base.llm.concurrency)  # the whole study's requests in flight
    live = spec.runs_at_once or ctx.base.llm.concurrency

    def work(job: Job) -> dict[str, Any]:
        started = time.perf_counter()
        record = _execute(ctx, get(job.configuration), job.seed, job.name)
        record["wall_seconds"] = round(time.perf_counter() - started, 3)
        study.write_record(job.name, record)
        return record

    def on_event(event: str, job: Job | None, record: dict[str, Any] | None) -> None:
        if event == "done" and job is not None:
            ran.append(job.name)
        index = len(ran) + len(skipped) + (event == "start")
        _tell(notify, event, job.name if job else None, index, total, record, board)

    run_jobs(jobs, work, live=live, cap=cap, board=board, on_event=on_event)
    table = build_table(study, study.load_manifest())
    outputs = write_outputs(study, table)
    return StudyOutcome(path, table, ran, skipped, outputs)


def plan(spec: StudySpec) -> list[Job]:
    """Every run of the study, in the order a sequential study ran them (seed by seed, `full`
    first); a deployment row or another optimizer needs its seed's `full` run."""
    names = [FULL, *(n for n in spec.configurations if n != FULL)]
    jobs = []
    for seed in spec.seeds:
        for conf_name in names:
            conf = get(conf_name)
            needs = run_name(FULL, seed) if conf.kind in ("export", "gepa") else None
            budget = spec.budget_calls if conf.kind in TRAINED else 0
            name = run_name(conf.name, seed)
            jobs.append(Job(name, conf.name, conf.kind, seed, needs, budget))
    return jobs


def _tell(
    notify: Notify | None,
    event: str,
    name: str | None,
    i: int,
    n: int,
    record: dict[str, Any] | None,
    board: Board,
) -> None:
    if notify is not None:
        notify(
            {
                "event": event,
                "run": name,
                "index": i,
                "total": n,
                "record": record,
                "study": board.snapshot(),
            }
        )


def _execute(ctx: _Context, conf: Configuration, seed: int, name: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": name,
        "configuration": conf.name,
        "seed": seed,
        "kind": conf.kind,
        "mode": conf.mode,
    }
    if conf.kind == "train":
        run_path, config, training = _train(ctx, conf, seed, name)
        test = _evaluate(ctx, config, name, mode="mixture", run_path=run_path)
    elif conf.kind == "export":
        full = ctx.study.record(run_name(FULL, seed))
        assert full is not None, "the full run of each seed goes first"
        run_path = ctx.study.run_path(run_name(FULL, seed))
        training = dict(full["training"], derived_from=full["name"])
        from moscopt.exports.distill import DistillationFailed

        try:
            record["export"] = _export(run_path, conf.mode)
        except DistillationFailed as e:  # a result of this row, not a failure of the study
            return {**record, "training": training, "failed": str(e)}
        config = load_config(run_path / "moscopt.yaml")
        test = _evaluate(ctx, config, name, mode=conf.mode, run_path=run_path)
    elif conf.kind == "none":
        config = ctx.config(conf, seed, cache=ctx.study.cache_path(name))
        training = {**Spending().to_json(), "stopped_at_budget": False, "budget": 0}
        test = _evaluate(ctx, config, name, mode="none", run_path=None)
    else:
        from moscopt.study.gepa_side import run_gepa

        config = ctx.config(conf, seed, cache=ctx.study.cache_path(name))
        full = ctx.study.record(run_name(FULL, seed))
        budget = ctx.spec.budget_calls
        if full is not None:  # the same number of calls the full method made
            budget = max(1, min(budget, int(full["training"]["calls"])))
        out = ctx.study.run_path(name)
        sidecar = ctx.study.train_record_path(name)
        if sidecar.exists():  # trained before a kill in its evaluation
            training = jsonio.loads(sidecar.read_text(encoding="utf-8"))
        else:
            training = run_gepa(
                config=config, skills_dir=ctx.skills_dir, out=out, budget_calls=budget, seed=seed
            )
            atomic_write_json(sidecar, training)
        test = _evaluate(ctx, config, name, mode="mixture", skills_dir=out / "skills")
    record["training"] = training
    record["test"] = test
    record["rows"] = str(ctx.study.eval_path(name).relative_to(ctx.study.path))
    return record


def _train(
    ctx: _Context, conf: Configuration, seed: int, name: str
) -> tuple[Path, Config, dict[str, Any]]:
    """Train (or resume) one run to its end or its budget; its spending and scores, kept in
    `records/<name>.train.json` (a kill in the test evaluation does not train it again)."""
    from moscopt.run.rundir import RunDir

    run_path = ctx.study.run_path(name)
    config = ctx.config(conf, seed, cache=ctx.study.cache_path(name))
    sidecar = ctx.study.train_record_path(name)
    if sidecar.exists():
        return run_path, config, jsonio.loads(sidecar.read_text(encoding="utf-8"))
    rewound = RewoundCalls(ctx.study.rewound_path(name))
    stopped = _train_to_end(ctx, config, run_path, rewound)
    run = RunDir.open(run_path)
    state = run.load_state()
    spent = run_spending(run.events_path, rewound)
    training = {
        **spent.to_json(),
        "budget": ctx.spec.budget_calls,
        "stopped_at_budget": stopped,
        "status": state.status,
        "val_before": state.val_history[0].score if state.val_history else None,
        "val_after": state.cursor.best_val,
    }
    training.pop("cache_hits", None)  # resumes replay from the cache: not a property of the run
    atomic_write_json(sidecar, training)
    return run_path, config, training


def _train_to_end(ctx: _Context, config: Config, run_path: Path, rewound: RewoundCalls) -> bool:
    """Run `moscopt train` (or `--resume`) in `run_path` with the calls the budget has left;
    whether the budget stopped it."""
    from moscopt.app import runner
    from moscopt.lm.errors import BudgetExceeded
    from moscopt.run.rundir import RunDir

    if run_path.exists() and not (run_path / "state.json").exists():
        shutil.rmtree(run_path)  # killed while the run was being created: nothing in it yet
    try:
        if not run_path.exists():
            runner.train(
                config=config,
                skills_dir=ctx.skills_dir,
                benchmark=ctx.benchmark,
                run_path=run_path,
                project_root=ctx.root,
            )
            return False
        run = RunDir.open(run_path)
        with run.locked():
            state = run.load_state()
            if state.status == "done":
                return False
            # what the resume would rewind is kept (and cut now): ledger + kept = every call
            rewound.note(run.events_path, state.events_bytes)
            run.rewind_events(state)
        made = run_spending(run.events_path, rewound).calls
        left = ctx.spec.budget_calls - made
        if left < 1:
            return True
        # the resumed run counts from its saved total: give it exactly the calls left
        runner.resume(run_path=run_path, overrides={"llm.max_calls": state.totals.calls + left})
    except BudgetExceeded:
        return True
    return False


def _export(run_path: Path, mode: str) -> dict[str, Any]:
    from moscopt.exports import export_run

    result = export_run(run_path=run_path, mode=mode, force=True)
    info: dict[str, Any] = {"mode": mode, "skills": result.manifest.skills}
    if result.manifest.distilled:
        info["validation_score"] = result.manifest.distilled.get("validation_score")
    return info


def _evaluate(
    ctx: _Context,
    config: Config,
    name: str,
    *,
    mode: str,
    run_path: Path | None = None,
    skills_dir: Path | None = None,
) -> dict[str, Any]:
    """The test evaluation every configuration gets: same split, same repeats rule, no budget
    (the budget is for training)."""
    from moscopt.app import runner

    if ctx.board is not None:
        ctx.board.testing(name)
    config = config.model_copy(update={"llm": config.llm.model_copy(update={"max_calls": None})})
    outcome = runner.evaluate(
        config=config,
        benchmark=ctx.benchmark,
        split="test",
        mode=mode,
        run_path=run_path,
        skills_dir=skills_dir,
        repeats=ctx.spec.repeats,
        out=ctx.study.eval_path(name),
        force=True,
    )
    summary = outcome.result.summary()
    keep = ("score", "ci95", "tasks", "rollouts", "repeats", "errors", "gate_fallbacks")
    return {k: summary[k] for k in keep if k in summary}
