from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.examples.conftest import EXAMPLES, Example

pytestmark = pytest.mark.slow  # runs the example's commands end to end


def test_custom_benchmark_example(example: Callable[..., Example]) -> None:
    data = EXAMPLES / "custom-benchmark/conversions.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    ex = example("custom-benchmark", {r["question"]: r["answer"] for r in rows})
    result = ex.run("bash", "run.sh")
    assert "validation score:" in result.stdout
    assert "unit-conversions [test] mode=mixture" in result.stdout
    assert "unit-conversions [test] mode=none" in result.stdout
    assert (ex.folder / "runs/units/skills/careful-computation/SKILL.md").is_file()
