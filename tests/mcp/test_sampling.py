"""`mcp/client`: moscopt's calls answered by the MCP client's own model through sampling.

The client's sampling callback answers from the scripted loopback world (the same answers the
loopback server gives), so a run trained on the client's model learns what a run on the server
learns; its calls are counted in the budget and cached like any model's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp.types as types
from mcp_env import Session, server_params

from moscopt.run.rundir import RunDir
from moscopt.testing.scripted import MAGIC, server_responder

ARGS = {
    "benchmark": "addition.yaml", "model": "mcp/client", "data": "addition.jsonl", "n": 3,
    "k": 2, "epochs": 1, "steps_per_epoch": 2, "no_evolution": True, "wait": True,
}  # fmt: skip


class ClientModel:
    """The client's sampling callback: the loopback world's answer to the request's messages."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    async def __call__(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        self.requests.append(params)
        messages = [{"role": "system", "content": params.system_prompt or ""}]
        messages += [{"role": m.role, "content": m.content.text} for m in params.messages]
        text = server_responder({"messages": messages})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=text),
            model="loopback-world",
            stop_reason="endTurn",
        )


@pytest.fixture
def client_model() -> ClientModel:
    return ClientModel()


@pytest.fixture
def sampling_session(project: Path, client_model: ClientModel) -> Any:
    s = Session(server_params(project), "", sampling_callback=client_model)
    try:
        yield s
    finally:
        s.close()


def test_a_run_on_the_clients_model_learns_counts_and_caches(
    sampling_session: Session, client_model: ClientModel, project: Path
) -> None:
    done = sampling_session.tool("train", {**ARGS, "run": "runs/a", "max_calls": 400})
    assert done["status"] == "done", done.get("live")
    asked = len(client_model.requests)
    assert asked > 0 and done["totals"]["calls"] == asked  # every call went to the client
    assert done["totals"]["cost"] == 0.0
    skills = RunDir.open(project / "runs/a").skills_dir
    assert MAGIC in (skills / "careful-computation" / "SKILL.md").read_text()  # it learned
    assert done["edits"]["accepted"] >= 1
    # the schema of a structured call reaches the client's model in the system prompt
    assert any("JSON schema" in (r.system_prompt or "") for r in client_model.requests)

    again = sampling_session.tool("train", {**ARGS, "run": "runs/b", "max_calls": 400})
    assert again["status"] == "done"
    assert len(client_model.requests) == asked  # the same requests: all from the cache
    assert again["totals"]["calls"] == 0 and again["totals"]["cache_hits"] >= asked


def test_the_clients_model_stops_at_the_call_budget(
    sampling_session: Session, client_model: ClientModel
) -> None:
    stopped = sampling_session.tool("train", {**ARGS, "run": "runs/c", "max_calls": 10})
    assert stopped["status"] == "stopped"
    assert len(client_model.requests) <= 10


def test_the_clients_model_needs_max_calls_not_max_cost(sampling_session: Session) -> None:
    text = sampling_session.error("train", {**ARGS, "max_cost": 1.0})
    assert "pass max_calls" in text and text.startswith("moscopt: error:")


def test_a_client_without_sampling_is_told_so(session: Session) -> None:
    text = session.error("train", {**ARGS, "max_calls": 50})
    assert "does not offer sampling" in text and "\n" not in text
