"""What `moscopt train` tells its display: every LLM call moves it, it says what runs now, and
its counts are the ledger's (through the runner, against the loopback fake server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from moscopt.app import runner
from moscopt.app.project import open_project
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder


def ledger_counts(events: Path) -> tuple[int, dict[str, int]]:
    """(LLM calls made, not cache hits; edit decisions by status) as the ledger holds them now."""
    calls, edits = 0, {"accepted": 0, "rejected": 0, "unusable": 0, "not_applied": 0}
    for line in events.read_text().splitlines():
        e = json.loads(line)
        if e["type"] == "llm_call" and not e.get("cache_hit"):
            calls += 1
        elif e["type"] == "edit":
            edits[e["status"]] += 1
    return calls, edits


def test_every_call_moves_the_display_and_its_counts_are_the_ledgers(project: Path) -> None:
    seen: list[dict[str, Any]] = []
    path = project / "runs" / "r1"
    mismatches: list[str] = []

    def progress(e: dict[str, Any]) -> None:
        seen.append(e)
        calls, edits = ledger_counts(path / "events.jsonl")
        if e["calls"] != calls:
            mismatches.append(f"{e['event']}: display {e['calls']} calls, ledger {calls}")
        if any(e[k] != n for k, n in edits.items()):
            mismatches.append(f"{e['event']}: display {e}, ledger {edits}")

    started: list[Path] = []
    flags = {
        "model": "openai/scripted", "data.path": "addition.jsonl", "pool.n": 3, "pool.k": 2,
        "training.epochs": 1, "training.max_steps_per_epoch": 2, "evolution.enabled": False,
    }  # fmt: skip
    with FakeServer(responder=server_responder) as server:
        flags["api_base"] = server.url
        p = open_project(None, flags)
        runner.train(
            config=p.config, skills_dir=p.skills_dir, benchmark="addition.yaml", run_path=path,
            project_root=p.root, progress=progress, started=started.append,
        )  # fmt: skip
    assert started == [path]
    assert not mismatches, mismatches[:5]
    kinds = [e["event"] for e in seen]
    decisions = kinds.count("edit")
    logged = (path / "events.jsonl").read_text().count('"type": "llm_call"')
    assert decisions >= 1 and kinds.count("call") == logged  # one event per call (or cache hit)
    activities = {e["activity"] for e in seen}
    assert any(a.startswith("validating the current pool: sample 1 of up to") for a in activities)
    assert any(a.startswith("validating candidate careful-computation: sample") for a in activities)
    assert any(a.startswith("rolling out minibatch 1 of 2 (") for a in activities)
    assert any("tasks done" in a for a in activities)
    # the plan's calls for the ETA of this one-epoch run
    assert all(isinstance(e["planned_calls"], int) and e["planned_calls"] > 0 for e in seen)
