from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from moscopt.testing import FakeServer
from tests.examples.conftest import EXAMPLES, Example

pytestmark = pytest.mark.slow  # runs the example's commands end to end


def test_custom_benchmark_example(example: Callable[..., Example]) -> None:
    data = EXAMPLES / "custom-benchmark/conversions.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    ex = example("custom-benchmark", {r["question"]: r["answer"] for r in rows})
    # a first attempt fails (the provider refuses the key); the script runs again as it is
    with FakeServer(fault_rate=1.0, faults=["401"]) as refusing:
        failed = ex.run("bash", "run.sh", check=False, env={"API_BASE": refusing.url})
    assert failed.returncode != 0
    result = ex.run("bash", "run.sh")
    assert "already holds a run" not in result.stderr
    assert "validation score:" in result.stdout
    assert "unit-conversions [test] mode=mixture" in result.stdout
    assert "unit-conversions [test] mode=none" in result.stdout
    assert "evolve" not in result.stdout + result.stderr  # --no-evolution: no evolve phase
    runs = sorted((ex.folder / "runs").glob("units-*"))
    assert len(runs) == 2  # the failed run stays (resumable); the new one is complete
    assert sum((r / "skills/careful-computation/SKILL.md").is_file() for r in runs) == 2
