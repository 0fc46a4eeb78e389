"""`moscopt eval` on every built-in benchmark, with the offline copies of their data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.benchmarks import list_benchmarks
from moscopt.cli import app
from moscopt.testing import FakeServer

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Benchmarks shared/data has no copy of: their hand-written fixtures in the hub layouts.
FIXTURE_DATA = {
    "hle": FIXTURES / "hle",
    "livemath": FIXTURES / "livemath",
    "searchqa": FIXTURES / "searchqa",
}


def answer(body: dict) -> str:  # type: ignore[type-arg]
    return "Let me think.\n```python\ndef f():\n    return 1\n```\nFINAL ANSWER: 1"


@pytest.mark.parametrize("name", [b.name for b in list_benchmarks()])
def test_eval_runs_on_every_builtin_benchmark(
    name: str, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # a generated benchmark takes no data file (giving it one is an error)
    data = [] if name == "offline" else ["--data", str(FIXTURE_DATA.get(name, shared_data))]
    with FakeServer(responder=answer) as server:
        out = tmp_path / "results.jsonl"
        result = runner.invoke(
            app,
            [
                "eval",
                "--benchmark",
                name,
                *data,
                "--limit",
                "2",
                "--model",
                "openai/fake",
                "--api-base",
                server.url,
                "--json",
                "--out",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output)
        assert summary["tasks"] == 2 and summary["benchmark"] == name
        assert 0.0 <= summary["score"] <= 1.0 and summary["calls"] >= 2
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == 2 and all(0.0 <= r["reward"] <= 1.0 for r in rows)
        assert all(r["error"] is None or "grader" not in r["error"].lower() for r in rows)


def test_eval_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x1", "question": "q"}\n{"id": "x2"\n')
    result = runner.invoke(app, ["eval", "--benchmark", "gsm8k", "--data", str(bad)])
    assert result.exit_code == 2 and "bad.jsonl" in result.output
    result = runner.invoke(app, ["eval", "--benchmark", "offline", "--split", "nope"])
    assert result.exit_code == 2 and "'nope' is not one of 'train', 'val', 'test', 'all'" in (
        result.output
    )
    result = runner.invoke(app, ["eval", "--benchmark", "offline", "--mode", "static"])
    assert result.exit_code == 2 and "--mode static needs --run DIR" in result.output
    result = runner.invoke(app, ["eval", "--benchmark", "offline", "--repeats", "0"])
    assert result.exit_code == 2
