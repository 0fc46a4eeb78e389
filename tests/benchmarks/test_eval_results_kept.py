"""`moscopt eval` never replaces an earlier evaluation's per-task results by default: the next
evaluation of the same benchmark, split and mode takes the next free name and says so; the
report shows each file as its own row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.eval_files import new_results_path, parse_name
from moscopt.testing import FakeServer

runner = CliRunner()


def answer(body: dict) -> str:  # type: ignore[type-arg]
    return "FINAL ANSWER: 1"


def test_a_second_eval_keeps_the_first_ones_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["init", "p"]).exit_code == 0
    monkeypatch.chdir(tmp_path / "p")
    with FakeServer(responder=answer) as server:
        args = ["eval", "-b", "offline", "--limit", "2", "--model", "openai/fake"]
        args += ["--api-base", server.url, "--mode", "none"]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        baseline = tmp_path / "p" / "eval-offline-test-none.jsonl"
        assert f"per-task results: {baseline.name}\n" in first.stdout
        kept = baseline.read_bytes()
        second = runner.invoke(app, [*args, "--split", "test"])
        assert second.exit_code == 0, second.output
        assert baseline.read_bytes() == kept  # the baseline's file is untouched
        assert "per-task results: eval-offline-test-none-2.jsonl (a new name" in second.stdout
        rows = (tmp_path / "p" / "eval-offline-test-none-2.jsonl").read_text().splitlines()
        assert len(rows) == 2 and json.loads(rows[0])["task_id"]
        # an explicit --out that exists still needs --force
        again = runner.invoke(app, [*args, "--out", str(baseline)])
        assert again.exit_code == 2 and "pass --force" in again.output
        assert baseline.read_bytes() == kept


def test_result_names() -> None:
    assert parse_name("eval-offline-test-mixture") == ("offline", "test", "mixture")
    assert parse_name("eval-my-bench-val-static-3") == ("my-bench", "val", "static #3")
    assert parse_name("eval-x") == ("?", "?", "eval-x")


def test_new_results_path_skips_taken_names(tmp_path: Path) -> None:
    (tmp_path / "eval-b-test-none.jsonl").write_text("")
    (tmp_path / "eval-b-test-none-2.jsonl").symlink_to(tmp_path / "nowhere")
    assert new_results_path(tmp_path, "b", "test", "none").name == "eval-b-test-none-3.jsonl"
