from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable

import pytest

from tests.examples.conftest import EXAMPLES, Example

pytestmark = pytest.mark.slow  # runs the example's commands end to end


@pytest.mark.parametrize("engine", ["duckdb", "pandas"])
def test_events_example(example: Callable[..., Example], engine: str) -> None:
    if importlib.util.find_spec(engine) is None:
        pytest.skip(f"{engine} is not installed")
    ex = example("library-api")
    env = ex.env()
    ex.run(
        *(sys.executable, "train_with_api.py", "--model", env["MODEL"]),
        *("--api-base", env["API_BASE"], "--run", "runs/api-demo"),
    )
    script = str(EXAMPLES / "events/read_events.py")
    out = ex.run(sys.executable, script, "runs/api-demo", "--engine", engine).stdout
    assert "LLM calls by purpose" in out and "propose-skill" in out
    assert "careful-computation" in out and "accepted" in out
