"""What `moscopt stream` does, as library calls: start or resume a stream run, then measure
the no-skill and the frozen-pool baselines on the same stream.

A stream run is a normal run directory (skills/, state.json, events.jsonl, checkpoints/), so
`status`, `export` and `eval` work on it. Its tasks, in stream order, are the run's train split
(`state.splits["train"]`); its settings and, at the end, its results are in `stream.json`:
running accuracy after each task, accuracy per niche, and the baselines' accuracies, each
baseline answering every task of the stream once, as the live pool did (sample 0).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.config import Config
from moscopt.core import jsonio
from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_text
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Task
    from moscopt.extensions.niches.stream import Stream

STREAM_FILE = "stream.json"
SPEC_FILE = "stream-spec.yaml"
Progress = Callable[[dict[str, Any]], None]


@dataclass
class StreamSettings:
    window: int = 8
    lifecycle_every: int = 5
    memory_every: int = 10
    order: str = "given"  # given | shuffled
    baselines: bool = True
    hold_every: int = 4  # every hold_every-th task is never shown to the proposer (decided on)


@dataclass
class StreamOutcome:
    run: RunDir
    tasks: int
    accuracy: float
    baselines: dict[str, float] = field(default_factory=dict)
    by_niche: dict[str, float] = field(default_factory=dict)
    running: list[float] = field(default_factory=list)
    resumed: bool = False


def tasks_spec(tasks_file: Path, grader: str) -> dict[str, Any]:
    """A benchmark spec for a JSONL file of tasks: `question` and `answer` columns, optional
    `id` and `niche` columns; `grader` is a built-in grader or `module:function`."""
    try:
        first = jsonio.loads(tasks_file.read_text(encoding="utf-8").splitlines()[0])
    except (OSError, IndexError, ValueError) as e:
        raise UserError(f"cannot read its first task: {e}", path=tasks_file) from None
    fields: dict[str, Any] = {"question": "question"}
    if grader not in ("ifeval",):
        fields["answer"] = "answer"
    if "id" in first:
        fields["id"] = "id"
    if "niche" in first:
        fields["meta"] = {"niche": "niche"}
        fields["niche"] = "niche"
    custom = ":" in grader
    return {
        "name": "stream",
        "description": f"tasks from {tasks_file.name}",
        "source": {"local": {"files": [tasks_file.name], "fields": fields}},
        "grader": "custom" if custom else grader,
        **({"grader_entry": grader} if custom else {}),
        "answer_instructions": "End your reply with a line of the form: FINAL ANSWER: <answer>",
    }


def carries_judges(tasks_file: Path) -> bool:
    """Whether `tasks_file` is a task file whose tasks carry their own judges (a YAML task
    file, or JSONL whose first task has a `judge`)."""
    from moscopt.benchmarks.taskfile import is_task_file

    if tasks_file.suffix != ".jsonl":
        return is_task_file(tasks_file)
    try:
        first = jsonio.loads(tasks_file.read_text(encoding="utf-8").splitlines()[0])
    except (OSError, IndexError, ValueError):
        return False
    return isinstance(first, dict) and "judge" in first


def stream_order(bench: Benchmark, config: Config, order: str) -> list[Task]:
    """The stream: the benchmark's tasks in source order (or shuffled with the run's seed),
    the first `data.limit` of them."""
    tasks = bench.tasks(data=config.data.path, count=sum(bench.spec.splits.sizes().values()))
    if order == "shuffled":
        random.Random(f"{config.seed}:stream").shuffle(tasks)
    if config.data.limit is not None:
        tasks = tasks[: config.data.limit]
    if not tasks:
        raise UserError("the stream has no tasks", field="data")
    return tasks


def start(
    *,
    config: Config,
    skills_dir: Path,
    benchmark: str | None,
    tasks_file: Path | None,
    grader: str | None,
    run_path: Path,
    settings: StreamSettings,
    progress: Progress | None = None,
    notes: Callable[[str], None] | None = None,
) -> StreamOutcome:
    """Start a new stream run and process the whole stream."""
    import yaml

    from moscopt.app.assembly import check_models, starting_pool
    from moscopt.app.benchmark import benchmark_ref
    from moscopt.app.workspace import create_run
    from moscopt.benchmarks import Splits, get_benchmark, load_benchmark_file

    if (benchmark is None) == (tasks_file is None):
        raise UserError("give either --benchmark NAME or --tasks FILE (with --grader)")
    pool, messages = starting_pool(skills_dir, config)
    for m in messages:
        if notes:
            notes(m)
    spec: dict[str, Any] | None = None
    if tasks_file is not None:
        tasks_file = tasks_file.resolve()
        ref = str((run_path / SPEC_FILE).resolve())
        if not grader and carries_judges(tasks_file):  # a task file with its own judges
            from moscopt.benchmarks.taskfile import task_file_spec

            spec = task_file_spec(tasks_file).model_dump(mode="json", exclude_defaults=True)
            config = config.model_copy(update={"benchmark": ref})
        elif not grader:
            raise UserError(
                "--tasks needs --grader (exact, numeric, math, ... or module:function), unless "
                "its tasks carry their own judges (task_id, task, judge)"
            )
        else:
            spec = tasks_spec(tasks_file, grader)
            data = config.data.model_copy(update={"path": str(tasks_file)})
            config = config.model_copy(update={"benchmark": ref, "data": data})
        bench = load_benchmark_file_from(spec, run_path, load_benchmark_file)
    else:
        assert benchmark is not None
        bench = get_benchmark(benchmark)
        ref = benchmark_ref(bench)
        config = config.model_copy(update={"benchmark": ref})
        if config.data.path is not None:
            data = config.data.model_copy(update={"path": str(Path(config.data.path).resolve())})
            config = config.model_copy(update={"data": data})
    tasks = stream_order(bench, config, settings.order)
    splits = Splits(train=tasks, val=[], test=[])
    check_models(config)
    run = create_run(run_path, config, pool, ref, splits)
    with run.locked():
        if spec is not None:
            atomic_write_text(run.path / SPEC_FILE, yaml.safe_dump(spec, sort_keys=False))
        write_stream_file(run, {"settings": settings.__dict__})
        return _run(run, config, bench, tasks, settings, progress, resumed=False)


def load_benchmark_file_from(
    spec: dict[str, Any], run_path: Path, loader: Callable[[Path], Benchmark]
) -> Benchmark:
    """The benchmark of a tasks file, checked before the run exists (from a temporary copy)."""
    import tempfile

    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / SPEC_FILE
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        bench = loader(path)
    bench.spec_path = (run_path / SPEC_FILE).resolve()
    return bench


def resume(*, run_path: Path, progress: Progress | None = None) -> StreamOutcome:
    """Continue a stream run from its last saved point, with its frozen config and settings."""
    from moscopt.app.assembly import check_models
    from moscopt.benchmarks import get_benchmark

    run = RunDir.open(run_path)
    with run.locked():
        config = run.load_config()
        state = run.load_state()
        if state.status == "done":
            raise UserError("this stream is already finished", path=run.path)
        record = read_stream_file(run)
        settings = StreamSettings(**record.get("settings", {}))
        bench = get_benchmark(str(state.benchmark))
        tasks = stream_order(bench, config, settings.order)
        if [t.id for t in tasks] != state.splits.get("train"):
            raise UserError(
                "the data no longer gives the stream this run started on (use the same --data)",
                path=run.state_path,
                field="splits",
            )
        check_models(config)
        return _run(run, config, bench, tasks, settings, progress, resumed=True)


def _run(
    run: RunDir,
    config: Config,
    bench: Benchmark,
    tasks: list[Task],
    settings: StreamSettings,
    progress: Progress | None,
    *,
    resumed: bool,
) -> StreamOutcome:
    from moscopt.app.assembly import open_lms
    from moscopt.app.workspace import make_stream
    from moscopt.core.resources import seed_skills_dir
    from moscopt.core.skills import Pool
    from moscopt.lm.errors import LMFatalError

    state = run.load_state()
    seeds = Pool.load(seed_skills_dir(), require_gate=True)
    with open_lms(
        config,
        run,
        roles=("agent", "optimizer"),
        log_events=True,
        used_calls=state.totals.calls,
        used_cost=state.totals.cost,
        bench=bench,
    ) as lms:
        assert lms.optimizer is not None
        stream = make_stream(
            run=run,
            config=config,
            benchmark=bench,
            tasks=tasks,
            agent_lm=lms.agent,
            optimizer_lm=lms.optimizer,
            seeds=seeds,
            progress=progress,
            window=settings.window,
            lifecycle_every=settings.lifecycle_every,
            memory_every=settings.memory_every,
            hold_every=settings.hold_every,
        )
        try:
            return asyncio.run(finish(stream, settings, resumed))
        except (LMFatalError, KeyboardInterrupt):
            s = run.load_state()
            s.status = "stopped"
            run.save(s)
            raise


async def finish(stream: Stream, settings: StreamSettings, resumed: bool) -> StreamOutcome:
    """Run the rest of the stream, measure the baselines, write `stream.json`, mark it done."""
    from moscopt.run.ledger import RolloutEvent

    ctx = stream.ctx
    await stream.run()
    order = [t.id for t in ctx.splits.train]
    rewards = {
        e.task_id: e.reward
        for e in read_events(ctx.run.events.path, kinds={"rollout"})
        if isinstance(e, RolloutEvent)
    }
    live = [rewards.get(i, 0.0) for i in order]
    running = [round(sum(live[: i + 1]) / (i + 1), 4) for i in range(len(live))]
    baselines = await measure_baselines(stream) if settings.baselines else {}
    by_niche = niche_accuracy(stream, live)
    outcome = StreamOutcome(
        ctx.run, len(live), running[-1] if running else 0.0, baselines, by_niche, running, resumed
    )
    record = read_stream_file(ctx.run)
    record.update(
        tasks=outcome.tasks,
        accuracy=outcome.accuracy,
        baselines=baselines,
        by_niche=by_niche,
        running=running,
    )
    write_stream_file(ctx.run, record)
    ctx.state.status, ctx.state.phase = "done", "done"
    ctx.cursor.phase = "done"
    ctx.save()
    ctx.emit(event="done")
    return outcome


async def measure_baselines(stream: Stream) -> dict[str, float]:
    """Accuracy of no skill, and of the stream's starting pool frozen, on the same stream."""
    from moscopt.agent.evaluate import run_tasks
    from moscopt.app.assembly import make_agent
    from moscopt.routing.build import make_router
    from moscopt.routing.gate import GateStats
    from moscopt.run.ledger import TrainStart

    ctx = stream.ctx
    cfg, lm, tasks = ctx.config, ctx.agent_lm, ctx.splits.train
    start = next(
        e
        for e in read_events(ctx.run.events.path, kinds={"train_start"})
        if isinstance(e, TrainStart)
    )
    assert start.checkpoint is not None
    frozen = ctx.run.load_checkpoint(start.checkpoint)
    stats = GateStats(c_min=cfg.credit.c_min)
    agents = {
        "none": make_agent(cfg, ctx.benchmark, None, make_router(cfg, None, lm), lm),
        "frozen": make_agent(
            cfg, ctx.benchmark, frozen, make_router(cfg, frozen, lm, stats=stats), lm
        ),
    }
    out = {}
    for name, agent in agents.items():
        rollouts = await run_tasks(agent, tasks, concurrency=cfg.llm.concurrency, sample=0)
        out[name] = sum(r.reward for r in rollouts) / max(1, len(rollouts))
    return out


def niche_accuracy(stream: Stream, live: list[float]) -> dict[str, float]:
    from moscopt.extensions.niches.observer import NicheObserver
    from moscopt.extensions.niches.records import live_niches

    ctx = stream.ctx
    if live_niches(ctx) is None:
        return {}

    assigner = NicheObserver(ctx.config).assigner(ctx)
    by: dict[str, list[float]] = {}
    for task, reward in zip(ctx.splits.train, live, strict=True):
        by.setdefault(assigner.niche(task), []).append(reward)
    return {k: sum(v) / len(v) for k, v in sorted(by.items())}


def read_stream_file(run: RunDir) -> dict[str, Any]:
    path = run.path / STREAM_FILE
    if not path.is_file():
        return {}
    data = jsonio.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def write_stream_file(run: RunDir, data: dict[str, Any]) -> None:
    atomic_write_text(run.path / STREAM_FILE, json.dumps(data, indent=2) + "\n")
