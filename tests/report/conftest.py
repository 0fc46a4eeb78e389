"""Runs made by the scripted environment, shared by the inspection tests."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path

import pytest

from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import get_benchmark
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.scripted import MAGIC, make_run, respond, splits

SEEDS = Path(__file__).resolve().parents[2] / "skills"


def evolving(request: LMRequest) -> str:
    """`respond`, but offspring carry the magic rule and the gate picks them: evolution is kept."""
    last = request.messages[-1]["content"]
    if "## Available skills" in last:
        ids = [i for i in re.findall(r"^\| ([a-z0-9-]+) \|", last, re.MULTILINE) if i != "id"]
        child = next((i for i in ids if i.startswith("child-")), None)
        if child is not None:
            return f"ACTIVATE: {child}, {next(i for i in ids if i != child)}"
    if "new skill" in last or "fresh skill" in last:
        name = "child-" + hashlib.sha256(last.encode()).hexdigest()[:6]
        body = f"# Child\n\n{MAGIC}\n"
        return json.dumps({"name": name, "description": "A derived skill.", "body": body})
    return respond(request)


def trained(root: Path, responder: object, resume: bool = False, **overrides: object) -> RunDir:
    """Train the scripted run in `root/run` (`resume`: continue the one that is there)."""
    if resume:
        run = RunDir.open(root / "run")
        config, bench, sp = run.load_config(), get_benchmark("offline"), splits()
        seeds = Pool.load(SEEDS, require_gate=True)
    else:
        run, config, bench, sp, seeds = make_run(root, SEEDS, **overrides)
    lm = FakeLM(responder=responder)  # type: ignore[arg-type]
    trainer = make_trainer(
        run=RunDir.open(run.path), config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    asyncio.run(trainer.train())
    return RunDir.open(run.path)


class Scripted:
    """The helpers above, for tests that make their own runs (conftest is not importable)."""

    train = staticmethod(trained)
    evolving = staticmethod(evolving)


@pytest.fixture
def scripted() -> Scripted:
    return Scripted()


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """Two epochs, no evolution: one rejected (VAGUE) and one accepted (MAGIC) skill edit."""
    return trained(tmp_path_factory.mktemp("scripted"), respond)


@pytest.fixture(scope="module")
def evolved_run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """Evolution on: a skill is eliminated at step 3, children (with MAGIC) added."""
    return trained(
        tmp_path_factory.mktemp("evolved"),
        evolving,
        # 6 validation tasks (the unit, issue 37): identical answers on each bound a loss of
        # 0.6 at the first look; 0.1 would take about 40 tasks
        **{"evolution.enabled": True, "credit.c_min": 1, "optimizer.margin": 0.6},
    )
