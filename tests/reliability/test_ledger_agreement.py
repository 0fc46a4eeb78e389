"""State and ledger agree (issue 25, item 10): a run whose events.jsonl was lost, cut or
rewritten after its last save is one clear error (exit 2) naming the file, before any call,
for `train --resume` and for every command that shows the history; nothing is changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import snapshot, train_args

runner = CliRunner()
READERS = (["status"], ["log"], ["report"], ["diff", "careful-computation"])


def damage(events: Path, how: str) -> None:
    if how == "lost":
        events.unlink()
    elif how == "cut":
        lines = events.read_bytes().splitlines(keepends=True)
        events.write_bytes(b"".join(lines[: len(lines) // 2]))
    elif how == "rewritten":  # same bytes, same length: two lines swapped
        lines = events.read_bytes().splitlines(keepends=True)
        lines[1], lines[-1] = lines[-1], lines[1]
        events.write_bytes(b"".join(lines))


@pytest.mark.parametrize("how", ["lost", "cut", "rewritten"])
def test_a_damaged_ledger_stops_resume_and_inspection_before_any_call(
    project: Path, how: str
) -> None:
    with FakeServer(responder=server_responder) as server:
        made = runner.invoke(app, [*train_args(server.url, epochs=2), "--max-calls", "40"])
        assert made.exit_code == 1, made.output  # stopped by its budget: a run to resume
        run = project / "runs/r1"
        damage(run / "events.jsonl", how)
        before, calls = snapshot(run), server.count()
        for args in READERS:
            result = runner.invoke(app, [*args, "--run", str(run)])
            assert result.exit_code == 2, (args, result.output)
            assert "events.jsonl" in result.output and "state.json" in result.output
        resumed = runner.invoke(app, ["train", "--resume", "--run", str(run), "--max-calls", "999"])
        assert resumed.exit_code == 2, resumed.output
        assert "no longer agree" in resumed.output
        assert server.count() == calls  # not one call was made
        assert snapshot(run) == before  # and nothing was changed


def test_an_intact_ledger_resumes(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        made = runner.invoke(app, [*train_args(server.url, epochs=2), "--max-calls", "40"])
        assert made.exit_code == 1, made.output
        run = project / "runs/r1"
        for args in READERS:
            result = runner.invoke(app, [*args, "--run", str(run)])
            assert result.exit_code == 0, (args, result.output)
        resumed = runner.invoke(app, ["train", "--resume", "--run", str(run), "--max-calls", "999"])
        assert resumed.exit_code == 0, resumed.output
        assert server.count() > 40
