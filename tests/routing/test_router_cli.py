"""`moscopt export --mode router`, `route --mode router` and `eval --mode router` end to end:
the router routes with no LLM call (the loopback server sees only the agent's calls)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.benchmarks import get_benchmark
from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.router_world import NicheWorld, trained_router_run

runner = CliRunner()


def test_export_route_and_eval_with_the_router(
    tmp_path: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key")
    run, world = trained_router_run(tmp_path, seed_dir)
    exported = runner.invoke(app, ["export", "--mode", "router", "--run", str(run.path)])
    assert exported.exit_code == 0, exported.output
    assert "router: heads for 7 skills over hashing-256 in router.json" in exported.output
    folder = run.path / "exports" / "router"

    text = world.tasks[0].prompt
    routed = runner.invoke(app, ["route", text, "--export", str(folder)])
    assert routed.exit_code == 0, routed.output
    assert routed.output.startswith("ACTIVATE: ") and "no LLM call" in routed.output
    assert routed.output.count("specialist") >= 6  # every skill's familiarity is shown
    as_json = runner.invoke(
        app, ["route", text, "--run", str(run.path), "--mode", "router", "--json"]
    )
    data = json.loads(as_json.output)
    assert data["mode"] == "router" and set(data["familiarity"]) >= set(data["skills"])

    tasks = list(get_benchmark("offline").load()["all"])  # the run's benchmark, as eval loads it
    with FakeServer(responder=NicheWorld(tasks)) as server:
        args = ["eval", "--run", str(run.path), "--mode", "router", "--split", "test"]
        args += ["--model", "openai/fake", "--api-base", server.url, "--json"]
        evaluated = runner.invoke(app, args)
        assert evaluated.exit_code == 0, evaluated.output
        summary = json.loads(evaluated.output)
        assert summary["mode"] == "router" and summary["gate_fallbacks"] == 0
        assert server.count() == summary["tasks"] == summary["calls"]  # agent calls only
        assert not any("response_format" in (r.body or {}) for r in server.log)
