"""Halting is visible where a user looks: the rollout record in the run's ledger, `moscopt
status`, and a rollout served over HTTP (the loopback OpenAI-compatible server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from moscopt.benchmarks import Task, get_benchmark
from moscopt.cli import app
from moscopt.config import LLMConfig
from moscopt.extensions.memory.tracker import MemorySettings
from moscopt.lm.base import LMRequest
from moscopt.lm.client import LiteLLMClient
from moscopt.report.summary import run_summary
from moscopt.run.ledger import RolloutEvent
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.fake_server import FakeServer
from moscopt.testing.scripted import ROUTES, make_run, train_run
from moscopt.testing.verify_world import VerifyWorld

VERIFY = "Checking it once more.\n\n```python\nprint(2 + 2)\n```\n\nThe answer is 4."


def test_the_ledger_and_status_show_how_often_runs_halted(tmp_path: Path, seed_dir: Path) -> None:
    """An agent that states its answer and asks for a verifying call at every step: with
    halting on, every rollout halts at its second step, two of its four steps unspent."""
    run, config, bench, sp, seeds = make_run(
        tmp_path,
        seed_dir,
        **{
            "training.epochs": 1,
            "agent.tools": ["python"],
            "agent.max_steps": 4,
            "memory.halting.enabled": True,
            "memory.embedding_model": "hashing",
        },
    )

    def agent(request: LMRequest) -> str:
        return VERIFY

    train_run(run, config, bench, sp, seeds, FakeLM(routes={**ROUTES, "agent": agent}))
    opened = RunDir.open(run.path)
    state = opened.load_state()
    rollouts = [e for e in opened.read_events(state, ["rollout"]) if isinstance(e, RolloutEvent)]
    assert rollouts and all(r.halted_at == 1 and r.steps_left == 2 for r in rollouts)
    halting = run_summary(opened)["halting"]
    assert halting == {
        "rollouts": len(rollouts),
        "halted_early": len(rollouts),
        "share": 1.0,
        "calls_saved_min": len(rollouts),
        "calls_saved_max": 2 * len(rollouts),
    }
    shown = CliRunner().invoke(app, ["status", "--run", str(run.path)])
    assert shown.exit_code == 0, shown.output
    expected = f"halting: {len(rollouts)} of {len(rollouts)} rollouts halted early (100%)"
    assert expected in shown.output
    shown = CliRunner().invoke(app, ["status", "--run", str(run.path), "--json"])
    as_json = json.loads(shown.output)
    assert as_json["halting"]["halted_early"] == len(rollouts)


def test_status_says_nothing_of_halting_when_it_is_off(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **{"training.epochs": 1})
    train_run(run, config, bench, sp, seeds, FakeLM(routes=ROUTES))
    assert run_summary(RunDir.open(run.path))["halting"] is None


def test_a_rollout_over_http_records_its_halting_decision() -> None:
    world = VerifyWorld(n_tasks=4, seed=7)
    task = world.tasks()[0]
    bench = get_benchmark("offline")

    async def go() -> Any:
        with FakeServer(responder=world.responder) as server:
            lm = LiteLLMClient("openai/world", api_base=server.url, llm=LLMConfig(concurrency=2))
            try:
                agent = world.skill_agent(
                    lm, bench, MemorySettings(halting=True), embedding_model="hashing"
                )

                async def toolbox(_: Task) -> Any:
                    return world.toolbox()

                agent.toolbox = toolbox
                return await agent.run(task)
            finally:
                await lm.aclose()

    rollout = asyncio.run(go())
    trace = rollout.extra["memory"]
    assert rollout.reward == 1.0 and trace["halted_early"] and trace["steps_left"] >= 1
    assert rollout.to_json()["extra"]["memory"]["halted_at"] == trace["halted_at"]
