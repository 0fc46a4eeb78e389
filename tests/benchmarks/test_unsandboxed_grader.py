"""The code grader of a benchmark resolved from a config follows `agent.allow_unsandboxed`: on a
machine where nothing isolates reads (emulated by turning the sandbox's layers off), MBPP's
reference solution is not run (reward 0) unless the key is set (reward 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.agent.tools import sandbox
from moscopt.app.benchmark import resolve_benchmark
from moscopt.config import load_config

NONE = sandbox.Layers(bwrap=False, namespaces=False, landlock=False, uid_drop=False)


@pytest.mark.parametrize(("allow", "reward"), [(False, 0.0), (True, 1.0)])
def test_the_code_grader_follows_the_key(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch, allow: bool, reward: float
) -> None:
    monkeypatch.setattr(sandbox, "_LAYERS", NONE)
    config = load_config(
        None, {"data.path": str(shared_data), "data.limit": 1, "agent.allow_unsandboxed": allow}
    )
    bench, splits = resolve_benchmark(config, "mbpp")
    task = splits["test"][0]
    grade = bench.grade(task, f"```python\n{task.meta['reference']}\n```")
    assert grade.reward == reward, grade.detail
