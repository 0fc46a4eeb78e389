"""A world where every edit only memorises the answers of the tasks it was shown (for tests and
`scripts/bench_acceptance.py`): the agent answers a task right when its system prompt holds
that task's memorised answer, otherwise with probability `p` by a hash of (task, sample index,
seed), whatever else the skills say. So an edit helps exactly the tasks the proposer was shown
and nothing else: a decision that is judged on those tasks is fooled, one judged on tasks the
proposer never saw gains nothing (issue 37, item 1).

The optimizer is scripted by purpose: a reflection lists the tasks of the trajectories it is
shown with their expected answers; a proposal adds a `Memorised:` line for every task named in
what it is shown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moscopt.lm.base import LMRequest
from moscopt.testing.scripted import edit, gold_of

_TASK = re.compile(r"Compute (\d+) \+ (\d+)")


def _memo(a: str, b: str) -> str:
    return f"Memorised: Compute {a} + {b} = {int(a) + int(b)}"


def routes(p: float = 0.5, seed: int = 0) -> dict[str, Callable[[LMRequest], str]]:
    """`FakeLM(routes=...)` of the world (module docstring)."""

    def agent(request: LMRequest) -> str:
        msgs = request.messages
        system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
        task = msgs[-1]["content"]
        found = _TASK.search(task)
        right = found is not None and _memo(*found.groups()) in system
        if not right:
            key = f"{seed}:{task}:{request.sample}".encode()
            right = int(hashlib.sha256(key).hexdigest()[:8], 16) / 16**8 < p
        return f"FINAL ANSWER: {gold_of(task) if right else 'wrong'}"

    def named(request: LMRequest) -> str:
        pairs = dict.fromkeys(_TASK.findall(request.messages[-1]["content"]))
        return "\n".join(f"- {_memo(a, b)}" for a, b in pairs) or "- nothing to add"

    def propose(request: LMRequest) -> str:
        pairs = dict.fromkeys(_TASK.findall(request.messages[-1]["content"]))
        return edit("", "\n".join(_memo(a, b) for a, b in pairs) or "Check the sum.")

    return {
        "gate": lambda r: "ACTIVATE: careful-computation, detail-verifier",
        "reflect-skill": named,
        "reflect-gate": lambda r: "- nothing to add",
        "merge-skill": named,
        "propose-skill": propose,
        "propose-gate": lambda r: edit("this anchor does not exist", "x"),
        "memory": lambda r: "- nothing durable",
        "budget": lambda r: "L: 2",
        "agent": agent,
    }


def memorising_stream(
    path: Path, seed_dir: Path, *, n: int = 32, p: float = 0.5, seed: int = 0, **settings: Any
) -> tuple[int, int]:
    """Run a stream of `n` additions in the world (`settings`: `StreamSettings` fields); the
    edits (accepted, decided)."""
    import asyncio

    from moscopt.app.stream import StreamSettings, finish, write_stream_file
    from moscopt.app.workspace import make_stream
    from moscopt.benchmarks import Splits, get_benchmark
    from moscopt.config import load_config
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine import initial_state
    from moscopt.run.ledger import EditEvent
    from moscopt.run.ledger_read import read_events
    from moscopt.run.rundir import RunDir
    from moscopt.testing.fake_lm import FakeLM
    from moscopt.testing.scripted import tasks

    seeds = Pool.load(seed_dir, require_gate=True)
    names = ("careful-computation", "cautious-planner", "detail-verifier")
    pool = Pool(skills=tuple(seeds.get(x) for x in names), gate=seeds.gate)
    stream = [t for t in tasks(f"m{seed}", n)]
    config = load_config(
        None,
        {
            "seed": seed,
            "pool.n": 3,
            "pool.k": 2,
            "optimizer.minibatch": 4,
            "evolution.enabled": False,
            "llm.concurrency": 4,
        },
    )
    options = StreamSettings(baselines=False, **settings)
    splits = Splits(train=stream, val=[], test=[])
    run = RunDir.create(path, config, pool, initial_state(config, pool, "offline", splits))
    write_stream_file(run, {"settings": options.__dict__})
    lm = FakeLM(routes=routes(p, seed))
    engine = make_stream(
        run=run,
        config=config,
        benchmark=get_benchmark("offline"),
        tasks=stream,
        agent_lm=lm,
        optimizer_lm=lm,
        seeds=seeds,
        window=options.window,
        hold_every=options.hold_every,
    )
    asyncio.run(finish(engine, options, False))
    edits = [e for e in read_events(run.events.path, kinds={"edit"}) if isinstance(e, EditEvent)]
    return sum(e.status == "accepted" for e in edits), len(edits)
