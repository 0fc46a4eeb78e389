"""A run directory written by the release before the typed ledger (state v1, untyped events with
no checkpoints named) is inspected and resumed by this code, forever.

`tests/fixtures/runs/v1-stopped` was made by that release (commit 10a51aa) with the scripted
`addition` project against the loopback server, stopped by `--max-calls 40` in its gate phase
(step 2, one accepted edit); its cache was dropped. The project root it named (`/tmp/mlf`, in
the frozen config and the state) is stored as `@PROJECT@`, which the test rewrites to a
temporary copy: no fixture points outside the repository.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.history import History
from moscopt.run.rundir import RunDir
from moscopt.run.state import SCHEMA_VERSION
from moscopt.testing import FakeServer
from moscopt.testing.scripted import MAGIC, server_responder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
runner = CliRunner()


def legacy_project(tmp_path: Path, url: str, *, rng_state: bool = False) -> Path:
    for name in ("addition.yaml", "addition.jsonl"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    run = tmp_path / "runs" / "legacy"
    shutil.copytree(FIXTURES / "v1-stopped", run)
    for name in ("moscopt.yaml", "state.json"):
        path = run / name
        path.write_text(path.read_text().replace("@PROJECT@", str(tmp_path)))
    config = run / "moscopt.yaml"
    config.write_text(re.sub(r"api_base: \S+", f"api_base: {url}", config.read_text()))
    if rng_state:  # written before `rng_state` was dropped (it loaded as an error since)
        state = json.loads((run / "state.json").read_text())
        state["rng_state"] = None
        (run / "state.json").write_text(json.dumps(state))
    return run


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


@pytest.mark.parametrize("rng_state", [False, True])
def test_a_v1_run_is_inspected_then_resumed_to_the_end(project: Path, rng_state: bool) -> None:
    with FakeServer(responder=server_responder) as server:
        path = legacy_project(project, server.url, rng_state=rng_state)
        assert json.loads((path / "state.json").read_text())["schema_version"] == 1
        h = History.load(RunDir.open(path))
        assert not h.warnings
        assert [v.cause for v in h.versions] == ["start", "edit"]
        assert MAGIC in (h.pool_at(2).get("careful-computation").body)
        for args in (["status"], ["log"], ["diff", "careful-computation"]):
            result = runner.invoke(app, [*args, "--run", str(path)])
            assert result.exit_code == 0, result.output
        assert "accepted" in runner.invoke(app, ["log", "--run", str(path)]).stdout

        more = ["--max-calls", "1000"]
        resumed = runner.invoke(app, ["train", "--resume", "--run", str(path), *more])
        assert resumed.exit_code == 0, resumed.output
        run = RunDir.open(path)
        state = run.load_state()
        assert state.status == "done" and state.schema_version == SCHEMA_VERSION
        assert state.cursor.indexed and state.skill_steps is not None
        history = History.load(run)
        assert not history.warnings
        assert history.versions[-1].pool.digest() == state.pool_digest
        assert runner.invoke(app, ["report", "--run", str(path)]).exit_code == 0
