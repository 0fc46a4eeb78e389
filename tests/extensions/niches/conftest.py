from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import Splits, get_benchmark
from moscopt.core.skills import Pool
from moscopt.optimizer.engine import Trainer, initial_state
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.niche_world import NicheWorld, make_pool, make_splits, world_config


class WorldRun:
    """A training run in the niche world, driven by a `FakeLM` routed by purpose."""

    def __init__(self, path: Path, seed_dir: Path, *, transfer: bool, **overrides: Any) -> None:
        self.seeds = Pool.load(seed_dir, require_gate=True)
        self.splits: Splits = make_splits()
        self.config = world_config(transfer=transfer, **overrides)
        pool = make_pool(self.seeds.gate)  # type: ignore[arg-type]
        state = initial_state(self.config, pool, "offline", self.splits)
        self.run = RunDir.create(path, self.config, pool, state)
        self.world = NicheWorld(self.splits["all"])
        self.lm = FakeLM(routes=self.world.routes())

    def train(self) -> Trainer:
        trainer = make_trainer(
            run=RunDir.open(self.run.path),
            config=self.config,
            benchmark=get_benchmark("offline"),
            splits=self.splits,
            agent_lm=self.lm,
            optimizer_lm=self.lm,
            seeds=self.seeds,
        )
        asyncio.run(trainer.train())
        return trainer


@pytest.fixture
def world_run(tmp_path: Path, seed_dir: Path) -> Any:
    def make(transfer: bool = True, **overrides: Any) -> WorldRun:
        name = f"run-{transfer}-{len(list(tmp_path.iterdir()))}"
        return WorldRun(tmp_path / name, seed_dir, transfer=transfer, **overrides)

    return make
