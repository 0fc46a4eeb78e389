from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.examples.conftest import Example

pytestmark = pytest.mark.slow  # runs the example's commands end to end


def test_external_agent_example(example: Callable[..., Example]) -> None:
    ex = example("external-agent")
    result = ex.run("bash", "run.sh")
    assert "validation score: 0.000 -> 1.000" in result.stdout
    events = (ex.folder / "runs/my-agent/events.jsonl").read_text().splitlines()
    rollouts = [json.loads(e) for e in events if '"type": "rollout"' in e]
    marker = "[agent stderr, last lines]\nskills:"  # which skills the agent found
    assert rollouts and all(marker in r["response"] for r in rollouts)
    # the agent called the server itself, with its own model name
    assert any(r.body.get("model") == "gpt-4.1-mini" for r in ex.server.log)
