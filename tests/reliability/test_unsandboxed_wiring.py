"""`agent.allow_unsandboxed` reaches every place model-written code runs, and a run says what
isolates that code.

On a machine where nothing isolates reads (emulated by turning the sandbox's layers off), the
agent's python tool refuses to run code unless the config key is set, and runs it when it is (the
code grader: tests/benchmarks/test_unsandboxed_grader.py). A training run that executes code
records a `notice` event naming the isolation (or the refusal, or that code runs unsandboxed).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from moscopt.agent.build import agent_for
from moscopt.agent.tools import sandbox
from moscopt.benchmarks import Task, get_benchmark
from moscopt.config import load_config
from moscopt.run.ledger import Notice
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.scripted import make_run, respond, train_run

NONE = sandbox.Layers(bwrap=False, namespaces=False, landlock=False, uid_drop=False)
TASK = Task("t1", "offline", "Compute 6 * 7.\n\nEnd with FINAL ANSWER: <n>", "42")


def _agent_observation(allow: bool) -> str:
    config = load_config(
        None, {"agent.tools": ["python"], "agent.max_steps": 2, "agent.allow_unsandboxed": allow}
    )
    replies = iter(["```python\nprint(6 * 7)\n```", "FINAL ANSWER: 42"])
    lm = FakeLM(routes={"agent": lambda r: next(replies)})
    bench = get_benchmark("offline")
    agent = agent_for(lm, bench, None, None, config)  # type: ignore[arg-type]
    rollout = asyncio.run(agent.run(TASK))
    return str(rollout.messages[3]["content"])


def test_the_agents_python_tool_runs_unsandboxed_only_with_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "_LAYERS", NONE)
    assert sandbox.UNSANDBOXED_REFUSED in _agent_observation(allow=False)
    assert _agent_observation(allow=True) == "Python output:\n42"


@pytest.mark.parametrize(
    ("layers", "allow", "says"),
    [
        (None, False, "runs in the sandbox"),
        (NONE, False, "will not run"),
        (NONE, True, "UNSANDBOXED"),
    ],
)
def test_a_run_that_executes_code_records_what_isolates_it(
    tmp_path: Path,
    seed_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    layers: sandbox.Layers | None,
    allow: bool,
    says: str,
) -> None:
    if layers is not None:
        monkeypatch.setattr(sandbox, "_LAYERS", layers)
    elif sandbox.isolation_available() == "unsandboxed":
        pytest.skip("nothing isolates reads on this machine")
    run, config, bench, sp, seeds = make_run(
        tmp_path,
        seed_dir,
        **{
            "training.epochs": 1,
            "training.max_steps_per_epoch": 1,
            "agent.tools": ["python"],
            "agent.max_steps": 1,
            "agent.allow_unsandboxed": allow,
        },
    )
    trainer = train_run(run, config, bench, sp, seeds, FakeLM(responder=respond))
    assert trainer.state.status == "done"
    notices = [
        e
        for e in read_events(RunDir.open(run.path).events.path, kinds={"notice"})
        if isinstance(e, Notice)
    ]
    assert [n.kind for n in notices] == ["sandbox"]
    assert says in notices[0].message


def test_a_run_without_code_records_no_sandbox_notice(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(
        tmp_path,
        seed_dir,
        **{"training.epochs": 1, "training.max_steps_per_epoch": 1, "agent.tools": []},
    )
    train_run(run, config, bench, sp, seeds, FakeLM(responder=respond))
    assert read_events(RunDir.open(run.path).events.path, kinds={"notice"}) == []
