"""Figures with one source and words that cannot be misread: calls and cache hits, and the work
a stopped run logged after its last save (which `status` had shown as `phase init ... calls 0`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.ledger import EventLog, LLMCall, Notice, RolloutEvent
from moscopt.run.ledger_read import unsaved_work
from moscopt.run.rundir import RunDir
from moscopt.run.state import calls_words

runner = CliRunner()


def test_cache_hits_are_not_read_as_some_of_the_calls() -> None:
    assert calls_words(40, 22) == "40 calls + 22 answered from the cache"
    assert calls_words(3, 0) == "3 calls"


def test_status_shows_the_work_logged_after_the_last_save(
    scripted_run: RunDir, tmp_path: Path
) -> None:
    path = tmp_path / "run"
    shutil.copytree(scripted_run.path, path)
    run = RunDir.open(path)
    state = run.load_state()
    assert unsaved_work(run.events_path, state.events_bytes) is None  # a finished run: none
    log = EventLog(run.events_path)  # a process that went on, then stopped before saving
    where = {"epoch": 1, "step": 4, "phase": "skills"}
    for hit in (False, False, True):
        log.append(LLMCall(model="m", purpose="agent", cache_hit=hit, **where))
    log.append(RolloutEvent(**where, batch=0, task_id="t", skills=["a"], reward=0.0))
    log.append(Notice(**where, kind="k", message="m"))
    with open(run.events_path, "ab") as f:
        f.write(b'{"type": "llm_call", "mod')  # a torn tail is skipped
    found = unsaved_work(run.events_path, state.events_bytes)
    assert found == {"calls": 2, "cache_hits": 1, **where}
    shown = runner.invoke(app, ["status", "--run", str(path)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert (
        "since the last save: 2 calls + 1 answered from the cache, up to epoch 1, step 4, "
        "phase skills (a resume redoes it, with these answers from the cache; not in the "
        "figures below)" in text
    )
    t = state.totals
    assert calls_words(t.calls, t.cache_hits) in text
    data = json.loads(runner.invoke(app, ["status", "--run", str(path), "--json"]).stdout)
    assert data["unsaved"] == found
