"""harvest -> train on the task file -> adopt -> undo, from an MCP client (the SDK's stdio
client and `moscopt mcp`), against the learn world behind the loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp_env import Session, server_params

from moscopt.testing import FakeServer
from moscopt.testing.learn_world import REQUESTS, RULE, responder, write_sessions


def test_harvest_train_adopt_and_undo_over_mcp(project: Path) -> None:
    n = write_sessions(project / "sessions.jsonl", ["no — always put the risks first"] * 999)
    with FakeServer(responder=responder) as server:
        s = Session(server_params(project), server.url)
        try:
            mined = s.tool(
                "harvest", {"source": "jsonl", "path": "sessions.jsonl", "output": "tasks.jsonl"}
            )
            assert mined["miner"] == "deterministic" and mined["sessions"] == n == len(REQUESTS)
            assert mined["tasks"]["test"] >= 6 and mined["held_out"] == "tasks.heldout.jsonl"
            args = {
                "tasks": "tasks.jsonl", "held_out": "tasks.heldout.jsonl",
                "model": "openai/scripted", "api_base": server.url, "n": 3, "k": 2, "epochs": 1,
                "steps_per_epoch": 2, "run": "runs/r1", "no_evolution": True,
                "max_calls": 2000, "wait": True,
            }  # fmt: skip
            trained = s.tool("train", args)
            assert trained["status"] == "done"
            assert trained["certificate"]["verdict"] == "better"
            both = s.error("train", {**args, "benchmark": "addition.yaml", "run": "runs/r2"})
            assert "not both" in both
            adopted = s.tool("adopt", {"run": "runs/r1", "to": ".claude/skills"})
            assert adopted["certificate"] == "better" and f"+{RULE}" in adopted["diff"]
            text = "".join(p.read_text() for p in Path(".claude/skills").rglob("SKILL.md"))
            assert RULE in text
            undone = s.tool("adopt", {"undo": True, "to": ".claude/skills"})
            assert sorted(undone["removed"]) == sorted(adopted["added"])
            assert not any(Path(".claude/skills").rglob("SKILL.md"))
        finally:
            s.close()
