"""The learned execution memory travels with the mixture: `memory.json` beside it (plain JSON,
parameters only), loaded by `open_export` and passed to the agent by `make_agent`, where the
fitted halting controller stops earlier than the untrained rule on the multi-step world."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moscopt.agent.evaluate import run_tasks
from moscopt.agent.harness import Rollout
from moscopt.app.assembly import make_agent
from moscopt.benchmarks import Benchmark, get_benchmark
from moscopt.config import load_config
from moscopt.errors import UserError
from moscopt.exports import export_run, open_export
from moscopt.exports.memory import MEMORY_FILE, load_memory
from moscopt.extensions.memory.params import NAME, MemoryState
from moscopt.extensions.memory.tracker import MemorySettings
from moscopt.extensions.memory.training import learn
from moscopt.routing.gate import LLMGate
from moscopt.testing import FakeLM
from moscopt.testing.multistep_world import MultiStepWorld
from moscopt.testing.scripted import make_run

WORLD = MultiStepWorld(n_tasks=40, seed=5)
CONFIG = load_config(
    None,
    {
        "memory.enabled": True,
        "memory.halting.enabled": True,
        "gating.granularity": "step",
        "agent.max_steps": 4,
        "agent.tools": [],
    },
)


@pytest.fixture(scope="module")
def bench() -> Benchmark:
    return get_benchmark("offline")


@pytest.fixture(scope="module")
def fitted(bench: Benchmark) -> MemoryState:
    """Memory fitted from rollouts of the world's first 30 tasks, run to T (no halting)."""
    lm = FakeLM(routes=WORLD.routes())
    agent = WORLD.skill_agent(lm, bench, MemorySettings(context=True, route_on="memory"))
    tasks = {t.id: t for t in WORLD.tasks()}

    async def all_tasks() -> list[Rollout]:
        return [await agent.run(t) for t in list(tasks.values())[:30]]

    def grade(task_id: str, response: str) -> float:
        return bench.grade(tasks[task_id], response).reward

    state = learn(None, asyncio.run(all_tasks()), grade, CONFIG)
    assert state.halting is not None
    return state


def calls_of(bench: Benchmark, memory: MemoryState | None) -> tuple[int, float]:
    """(agent and gate calls, accuracy) of `make_agent`'s agent on the 10 held-out tasks."""
    lm = FakeLM(routes=WORLD.routes())
    pool = WORLD.pool()
    agent = make_agent(CONFIG, bench, pool, LLMGate(lm, pool, 1), lm, memory=memory)
    rollouts = asyncio.run(run_tasks(agent, WORLD.tasks()[30:], concurrency=4))
    return sum(r.calls for r in rollouts), sum(r.reward for r in rollouts) / len(rollouts)


def test_export_carries_the_learned_memory_and_eval_halts_with_it(
    tmp_path: Path, seed_dir: Path, bench: Benchmark, fitted: MemoryState
) -> None:
    run, *_ = make_run(tmp_path, seed_dir)
    state = run.load_state()
    state.keep(NAME, fitted.model_dump(mode="json"))
    run.save(state)
    result = export_run(run_path=run.path, mode="mixture")
    assert MEMORY_FILE in result.files
    assert result.manifest.memory == {
        "file": MEMORY_FILE,
        "rollouts": 30,
        "fitted": ["halting"],  # the learned write and retrieval scores are off here
    }
    document = json.loads((result.out / MEMORY_FILE).read_text())
    assert document["format"] == 1 and "halting_examples" not in document  # parameters only
    deployment = open_export(result.out, "mixture")
    assert deployment.memory is not None
    assert deployment.memory.halting == fitted.halting
    # the same bytes when exported again
    again = export_run(run_path=run.path, mode="mixture", out=tmp_path / "again")
    assert (again.out / MEMORY_FILE).read_bytes() == (result.out / MEMORY_FILE).read_bytes()

    untrained_calls, untrained_accuracy = calls_of(bench, None)
    learned_calls, learned_accuracy = calls_of(bench, deployment.memory)
    assert learned_calls < untrained_calls
    assert learned_accuracy >= untrained_accuracy - 0.1


def test_a_run_with_nothing_fitted_exports_no_memory(tmp_path: Path, seed_dir: Path) -> None:
    run, *_ = make_run(tmp_path, seed_dir)
    result = export_run(run_path=run.path, mode="mixture")
    assert MEMORY_FILE not in result.files and result.manifest.memory is None
    assert open_export(result.out).memory is None


def test_a_bad_memory_document_names_the_file(tmp_path: Path) -> None:
    (tmp_path / MEMORY_FILE).write_text('{"format": 1, "halting": {"weights": "x"}}')
    with pytest.raises(UserError, match=MEMORY_FILE):
        load_memory(tmp_path)
    (tmp_path / MEMORY_FILE).write_text('{"format": 2}')
    with pytest.raises(UserError, match="format"):
        load_memory(tmp_path)


class _Built(Exception):
    """Raised by the spy in place of building the agent: the test needs only its arguments."""


@pytest.mark.parametrize("source", ["export", "run"])
def test_eval_gives_the_agent_the_learned_memory(
    tmp_path: Path,
    seed_dir: Path,
    fitted: MemoryState,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    from moscopt.app import runner

    run, *_ = make_run(tmp_path, seed_dir)
    state = run.load_state()
    state.keep(NAME, fitted.model_dump(mode="json"))
    run.save(state)
    exported = export_run(run_path=run.path, mode="mixture").out
    seen: list[dict[str, object]] = []

    def spy(*args: object, **kwargs: object) -> None:
        seen.append(kwargs)
        raise _Built()

    monkeypatch.setattr(runner, "make_agent", spy)
    config = load_config(None, {"model": "openai/fake", "api_base": "http://127.0.0.1:9"})
    with pytest.raises(_Built):
        runner.evaluate(
            config=config,
            benchmark=None,
            split="test",
            mode="mixture",
            run_path=run.path if source == "run" else None,
            skills_dir=None,
            repeats="1",
            out=tmp_path / "eval.jsonl",
            export_path=exported if source == "export" else None,
        )
    (kwargs,) = seen
    memory = kwargs["memory"]
    assert isinstance(memory, MemoryState) and memory.halting == fitted.halting
    assert kwargs["tasks"]  # the split, for the router to embed up front
