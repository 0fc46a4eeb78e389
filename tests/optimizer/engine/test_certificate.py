"""The certificate at the end of a run: final pool vs the starting pool on held-out tasks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import Splits, get_benchmark
from moscopt.config import load_config
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.optimizer.engine import Trainer, initial_state
from moscopt.optimizer.engine.certificate import certify, latest, line
from moscopt.run.ledger import CertificateEvent
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.fake_lm import TurnTakingLM
from moscopt.testing.scripted import MAGIC, ROUTES, edit, splits, tasks

NAMES = ("careful-computation", "cautious-planner", "detail-verifier")


def start(tmp_path: Path, seed_dir: Path, sp: Splits, magic: bool = False, **overrides: Any) -> Any:
    seeds = Pool.load(seed_dir, require_gate=True)
    pool = Pool(skills=tuple(seeds.get(n) for n in NAMES), gate=seeds.gate)
    if magic:  # the starting pool already solves every task
        first = pool.get(NAMES[0])
        pool = pool.replace(first.with_body(f"{first.body.rstrip()}\n\n{MAGIC}\n"))
    defaults: dict[str, Any] = {
        "pool.n": 3,
        "pool.k": 2,
        "training.epochs": 1,
        "optimizer.minibatch": 2,
        "training.max_steps_per_epoch": 1,
        "evolution.enabled": False,
        "gating.edit_steps": 0,
        "llm.concurrency": 2,
    }
    config = load_config(None, {**defaults, **overrides})
    run = RunDir.create(tmp_path / "run", config, pool, initial_state(config, pool, "offline", sp))
    return run, config, seeds


def train(run: RunDir, config: Any, seeds: Pool, sp: Splits, lm: FakeLM) -> Trainer:
    trainer = make_trainer(
        run=RunDir.open(run.path),
        config=config,
        benchmark=get_benchmark("offline"),
        splits=sp,
        agent_lm=lm,
        optimizer_lm=lm,
        seeds=seeds,
    )
    asyncio.run(trainer.train())
    return trainer


def certificates(run: RunDir) -> list[CertificateEvent]:
    events = run.read_events(None, {"certificate"})
    return [e for e in events if isinstance(e, CertificateEvent)]


def test_a_run_that_helps_ends_with_a_better_certificate(tmp_path: Path, seed_dir: Path) -> None:
    sp = splits(n_test=8)
    run, config, seeds = start(tmp_path, seed_dir, sp, **{"training.max_steps_per_epoch": 2})
    trainer = train(run, config, seeds, sp, FakeLM(routes=ROUTES))
    (event,) = certificates(run)
    assert event.verdict == "better" and event.split == "test" and event.tasks == 8
    assert (event.seed_score, event.final_score, event.mean_diff) == (0.0, 1.0, 1.0)
    assert event.low is not None and event.low > 0 and event.p_value is not None
    assert event.p_value < 0.05 and event.final_pool == trainer.pool.digest()[:12]
    assert event.seed_pool == event.seed_checkpoint.split("-")[1][:12]  # type: ignore[union-attr]
    assert line(event, run).startswith("certificate: BETTER than the seed pool (seed 0.000")
    assert not (run.exports_dir / "seed").exists()


def no_edit() -> FakeLM:
    """Every proposal is vague: nothing is accepted, the run ends with the pool it started with."""
    routes = dict(ROUTES)
    routes["propose-skill"] = lambda r: edit("", "Be vague about the method.")
    return FakeLM(routes=routes)


def test_a_run_that_kept_its_pool_skips_the_comparison(tmp_path: Path, seed_dir: Path) -> None:
    sp = splits(n_test=6)
    run, config, seeds = start(tmp_path, seed_dir, sp)
    lm = no_edit()
    train(run, config, seeds, sp, lm)
    (event,) = certificates(run)
    assert event.verdict == "skipped" and "kept the pool it started from" in event.reason
    assert line(event) == (
        "certificate: skipped (the run kept the pool it started from: nothing to compare)"
    )


def test_a_change_without_a_gain_says_so_and_hands_back_the_seed(
    tmp_path: Path, seed_dir: Path
) -> None:
    sp = splits(n_test=6)
    run, config, seeds = start(tmp_path, seed_dir, sp, **{"training.certificate_samples": 2})
    trainer = train(run, config, seeds, sp, no_edit())
    ctx = trainer.ctx
    first = ctx.pool.get(NAMES[0])
    ctx.pool = ctx.pool.replace(first.with_body(first.body + "\nRead slowly.\n"))  # no gain
    event = asyncio.run(certify(ctx))
    assert event.verdict == "no detectable difference" and event.mean_diff == 0.0
    assert event.samples == 2 and event.tasks == 6 and event.seed_pool != event.final_pool
    text = line(event, run)
    assert text.startswith("certificate: NO DETECTABLE DIFFERENCE from the seed pool")
    assert f"moscopt eval --skills {run.exports_dir / 'seed'}" in text
    assert Pool.load(run.exports_dir / "seed").digest()[:12] == event.seed_pool


def test_a_worse_final_pool_is_called_worse(tmp_path: Path, seed_dir: Path) -> None:
    sp = splits(n_test=8)
    run, config, seeds = start(
        tmp_path, seed_dir, sp, magic=True, **{"training.certificate_samples": 0}
    )
    trainer = train(run, config, seeds, sp, no_edit())
    assert certificates(run) == []  # 0 samples: no certificate
    ctx = trainer.ctx
    ctx.pool = Pool(skills=tuple(seeds.get(n) for n in NAMES), gate=seeds.gate)  # lost the rule
    event = asyncio.run(certify(ctx))
    assert event.verdict == "worse" and event.high is not None and event.high < 0
    assert (event.seed_score, event.final_score) == (1.0, 0.0)
    assert line(event, run).startswith("certificate: WORSE than the seed pool")
    assert asyncio.run(certify(ctx)) == event  # once per final pool
    assert len(certificates(run)) == 1 and latest(run) == event


def test_without_a_test_split_the_unused_validation_tasks_are_held_out(
    tmp_path: Path, seed_dir: Path
) -> None:
    sp = Splits(train=tasks("train", 4), val=tasks("val", 12), test=[])
    overrides = {"optimizer.p_val": 0.5, "training.max_steps_per_epoch": 2}
    run, config, seeds = start(tmp_path, seed_dir, sp, **overrides)
    lm = FakeLM(routes=ROUTES)
    train(run, config, seeds, sp, lm)
    (event,) = certificates(run)
    assert event.split == "val (held out)" and event.tasks == 6
    asked = {
        r.messages[-1]["content"].split(" + ")[0]
        for r, p in zip(lm.history, lm.purposes, strict=True)
        if p == "agent" and isinstance(r, LMRequest)
    }
    assert "Compute 12" in asked  # val-12 is in the held-out half


def test_with_no_held_out_task_the_certificate_is_skipped_and_says_why(
    tmp_path: Path, seed_dir: Path
) -> None:
    sp = Splits(train=tasks("train", 4), val=tasks("val", 6), test=[])
    run, config, seeds = start(tmp_path, seed_dir, sp, **{"training.max_steps_per_epoch": 2})
    train(run, config, seeds, sp, FakeLM(routes=ROUTES))
    (event,) = certificates(run)
    assert event.verdict == "skipped" and "optimizer.p_val" in event.reason
    assert line(event).startswith("certificate: skipped (no held-out tasks")
    assert json.loads(event.model_dump_json())["verdict"] == "skipped"


def test_the_two_pools_are_rolled_out_at_once(tmp_path: Path, seed_dir: Path) -> None:
    sp = splits(n_test=8)
    run, config, seeds = start(tmp_path, seed_dir, sp, **{"training.max_steps_per_epoch": 2})
    lm = TurnTakingLM(routes=ROUTES)
    train(run, config, seeds, sp, lm)
    (event,) = certificates(run)
    assert event.verdict == "better"
    # the certificate's calls (a gate and an agent call per task and pool) end the run; more at
    # once than one rollout's workers (llm.concurrency, and one preparing its next): both pools
    tail = lm.seen[-2 * 2 * event.tasks :]
    assert {p for p, _ in tail} == {"gate", "agent"}
    assert max(n for _, n in tail) > config.llm.concurrency + 1
