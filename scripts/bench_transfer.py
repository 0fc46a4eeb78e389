"""CODREAM transfer on a loopback world of niches: does rule A reach the skills weak on A (and
only them), and does niche-A accuracy rise? Transfer on against transfer off.

The world (`moscopt.testing.niche_world`): tasks of niche A and B; each niche has a rule, and
the agent answers right with probability 0.9 when the rule of the task's niche is in its skills,
else 0.1. K = 1 of N = 4: the gate sends A tasks in turn to alpha (holds rule A), beta and
gamma (hold rule B: weak on A, strong on B), and B tasks to beta, gamma and delta (rule B; never
on A). The agent and the gate are real HTTP calls to a `FakeServer` through moscopt's LM client;
the optimizer (reflection, proposals, CODREAM phases) is a `FakeLM` scripted by purpose: it
adopts only what it is shown, so rule A can reach beta and gamma only as a routed insight, and
then only through a validated edit. Evolution and gate editing are off.

Reported per mode and seed: training accuracy per niche per epoch, the final pool's test
accuracy per niche, which skills hold rule A, channels (giver -> recipient: insights routed, and
adopted by an accepted edit), the specialization index (1 - normalised entropy of each skill's
rollouts over the niches, weighted by rollouts; routing is fixed here, so it cannot move), the
competence gap on A (best minus mean competence), and the calls made.

Usage: python scripts/bench_transfer.py [--seeds 3] [--epochs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from moscopt.agent.evaluate import run_tasks
from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import get_benchmark
from moscopt.core.resources import seed_skills_dir
from moscopt.core.skills import Pool
from moscopt.extensions.niches.competence import competence_gap, specialization_index
from moscopt.extensions.niches.records import live_niches
from moscopt.lm.factory import build_lm
from moscopt.optimizer.engine import initial_state
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM, FakeServer
from moscopt.testing.niche_world import RULES, NicheWorld, make_pool, make_splits, world_config

NICHES = ("A", "B")


@dataclass
class Outcome:
    mode: str
    seed: int
    train: dict[tuple[int, str], float]  # (epoch, niche) -> accuracy
    test: dict[str, float]
    holders: list[str]
    routed: dict[str, int]
    adopted: dict[str, int]
    specialization: float
    gap_a: float
    agent_calls: int
    optimizer_calls: Counter[str] = field(default_factory=Counter)


async def one(mode: str, seed: int, epochs: int, server: FakeServer, root: Path) -> Outcome:
    splits = make_splits()
    seeds = Pool.load(seed_skills_dir(), require_gate=True)
    pool = make_pool(seeds.gate)  # type: ignore[arg-type]
    config = world_config(
        transfer=mode == "on",
        **{
            "training.epochs": epochs,
            "seed": seed,
            "gating.output": "json",
            "model": "openai/fake",
            "api_base": server.url,
            "llm.cache": False,
        },
    )
    server.responder = NicheWorld(splits["all"], base_seed=seed)
    run = RunDir.create(
        root / f"{mode}-{seed}", config, pool, initial_state(config, pool, "offline", splits)
    )
    agent_lm = build_lm(config, api_key="sk-fake")
    optimizer = FakeLM(routes=NicheWorld(splits["all"]).routes())
    before = server.count()
    trainer = make_trainer(
        run=RunDir.open(run.path),
        config=config,
        benchmark=get_benchmark("offline"),
        splits=splits,
        agent_lm=agent_lm,
        optimizer_lm=optimizer,
        seeds=seeds,
    )
    await trainer.train()
    ctx = trainer.ctx
    test = await run_tasks(ctx.agent(ctx.pool, ctx.live_stats()), splits.test, concurrency=8)
    await agent_lm.aclose()
    agent_lm.close()
    by: dict[tuple[int, str], list[float]] = defaultdict(list)
    for e in read_events(run.events.path, kinds={"rollout"}):
        by[(e.epoch, e.task_id.split("-")[1][0])].append(e.reward)  # type: ignore[union-attr]
    per_niche: dict[str, list[float]] = defaultdict(list)
    for r in test:
        per_niche[r.task_id.split("-")[1][0]].append(r.reward)
    ns = live_niches(trainer.ctx)
    assert ns is not None
    return Outcome(
        mode,
        seed,
        train={k: sum(v) / len(v) for k, v in by.items()},
        test={k: sum(v) / len(v) for k, v in per_niche.items()},
        holders=sorted(s.name for s in ctx.pool if RULES["A"] in s.body),
        routed=dict(ns.routed),
        adopted=dict(ns.adopted),
        specialization=specialization_index(ns, ctx.pool.names),
        gap_a=competence_gap(ns, ctx.pool.names, "A", config.niches.min_count),
        agent_calls=server.count() - before,
        optimizer_calls=Counter(p.split("-")[0] for p in optimizer.purposes),
    )


def channels(counts: dict[str, int]) -> str:
    return ", ".join(f"{k.replace('>', ' -> ')}: {v}" for k, v in sorted(counts.items())) or "-"


def report(outcomes: list[Outcome], epochs: int) -> None:
    for o in outcomes:
        print(f"\n== transfer {o.mode}, seed {o.seed}")
        for niche in NICHES:
            curve = "  ".join(f"{o.train[(e, niche)]:.2f}" for e in range(epochs))
            print(f"  niche {niche}: train accuracy by epoch {curve}   test {o.test[niche]:.2f}")
        print(f"  rule A held by: {', '.join(o.holders)}")
        print(f"  channels routed:  {channels(o.routed)}")
        print(f"  channels adopted: {channels(o.adopted)}")
        print(f"  specialization index {o.specialization:.3f}; competence gap on A {o.gap_a:.3f}")
        calls = ", ".join(f"{k} {v}" for k, v in sorted(o.optimizer_calls.items()))
        print(f"  calls: agent+gate over HTTP {o.agent_calls}; optimizer {calls}")
    print("\n== mean over seeds")
    head = f"{'transfer':9}" + "".join(f"{'A ep' + str(e):>8}" for e in range(epochs))
    head += f"{'A test':>8}{'B test':>8}{'spec':>7}{'gap A':>7}{'calls':>7}"
    print(head)
    for mode in ("off", "on"):
        mine = [o for o in outcomes if o.mode == mode]
        n = len(mine)
        row = f"{mode:9}" + "".join(
            f"{sum(o.train[(e, 'A')] for o in mine) / n:8.2f}" for e in range(epochs)
        )
        row += f"{sum(o.test['A'] for o in mine) / n:8.2f}{sum(o.test['B'] for o in mine) / n:8.2f}"
        row += (
            f"{sum(o.specialization for o in mine) / n:7.3f}{sum(o.gap_a for o in mine) / n:7.3f}"
        )
        calls = sum(o.agent_calls + sum(o.optimizer_calls.values()) for o in mine) / n
        print(row + f"{calls:7.0f}")


async def main_async(args: argparse.Namespace) -> list[Outcome]:
    out = []
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as server:
        for seed in range(args.seeds):
            for mode in ("off", "on"):
                out.append(await one(mode, seed, args.epochs, server, Path(tmp)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    report(asyncio.run(main_async(args)), args.epochs)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
