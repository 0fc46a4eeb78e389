"""The response cache is the project's: reruns, new run dirs and restarted servers reuse it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.lm.cache import DB_FILE, PROJECT_CACHE, RECORD_FILE, read_record
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder, write_project
from moscopt.testing.scripted import train_argv as train

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def evaluate(url: str) -> list[str]:
    return [
        "eval", "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base", url,
        "--data", "addition.jsonl", "--mode", "none", "--split", "all", "--json",
    ]  # fmt: skip


def test_a_rerun_into_a_new_run_dir_makes_no_call(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        first = runner.invoke(app, train(server.url, "runs/a"))
        assert first.exit_code == 0, first.output
        made = server.count()
        assert made > 0
        second = runner.invoke(app, train(server.url, "runs/b"))
        assert second.exit_code == 0, second.output
        assert server.count() == made  # every answer came from the project's cache
    assert (project / PROJECT_CACHE / DB_FILE).is_file()
    used_a = read_record(project / "runs/a/cache" / RECORD_FILE)
    used_b = read_record(project / "runs/b/cache" / RECORD_FILE)
    assert len(used_a) == made and sorted(used_b) == sorted(used_a)
    status = runner.invoke(app, ["status", "--run", "runs/b", "--json"])
    totals = json.loads(status.output)["totals"]
    assert totals["calls"] == 0 and totals["cache_hits"] > 0


def test_a_server_restarted_on_another_port_keeps_the_hits(project: Path) -> None:
    with FakeServer(responder=server_responder) as before:
        done = runner.invoke(app, evaluate(before.url))
        assert done.exit_code == 0, done.output
        assert before.count() > 0
        port = before.port
    with FakeServer(responder=server_responder) as after:
        assert after.port != port
        again = runner.invoke(app, evaluate(after.url))
        assert again.exit_code == 0, again.output
        assert after.count() == 0
    assert json.loads(again.output)["score"] == json.loads(done.output)["score"]
