"""What a study shows while it runs: plain lines, `--json` lines and the live panel, each about
the study as a whole."""

from __future__ import annotations

import io
import json
from typing import Any

from moscopt.cli.study_display import HEARTBEAT, JSON_EVERY, StudyDisplay, study_line

STUDY = {
    "runs": {"done": 2, "running": 3, "waiting": 1, "total": 6},
    "training_calls": 130,
    "training_budget": 240,
    "elapsed_seconds": 80.0,
    "eta_seconds": 45.0,
    "live": [
        {"run": "full-s43", "phase": "train", "calls": 30},
        {"run": "no-skill-s43", "phase": "test", "calls": 0},
    ],
}
RECORD = {
    "test": {"score": 0.75, "ci95": [0.5, 1.0]},
    "training": {"calls": 42, "stopped_at_budget": True},
}


def event(kind: str, run: str | None = "full-s42", record: Any = None) -> dict[str, Any]:
    return {"event": kind, "run": run, "index": 1, "total": 6, "record": record, "study": STUDY}


def test_the_study_line() -> None:
    assert study_line(STUDY) == (
        "2/6 done, 3 running, 1 waiting | training calls 130/240 | 1:20 elapsed, ETA 0:45"
    )
    assert study_line({**STUDY, "eta_seconds": None}).endswith("ETA -")


def test_plain_lines_name_the_run_and_the_study_and_beat_when_nothing_happens() -> None:
    out, now = io.StringIO(), [0.0]
    display = StudyDisplay(stream=out, live=False, clock=lambda: now[0])
    display(event("start"))
    display(event("done", record=RECORD))
    display(event("skipped", "full-s44", RECORD))
    display(event("progress", None))  # nothing new: no line
    now[0] = HEARTBEAT + 1
    display(event("progress", None))
    lines = out.getvalue().splitlines()
    line = " | 2/6 done, 3 running, 1 waiting | training calls 130/240 | 1:20 elapsed, ETA 0:45"
    assert lines == [
        "full-s42: running" + line,
        "full-s42: test 0.750 (0.500-1.000), 42 training calls, stopped at budget" + line,
        "full-s44: test 0.750 (0.500-1.000), 42 training calls, stopped at budget "
        "(finished before)" + line,
        "study: " + line[3:],
    ]


def test_json_lines_carry_the_study_and_progress_comes_every_few_seconds() -> None:
    out, now = io.StringIO(), [0.0]
    display = StudyDisplay(json_lines=True, stream=out, clock=lambda: now[0])
    display(event("start"))
    display(event("progress", None))  # too soon after the last line
    now[0] = JSON_EVERY
    display(event("progress", None))
    display(event("done", record=RECORD))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in lines] == ["start", "progress", "done"]
    assert all(e["study"] == STUDY for e in lines)
    assert lines[-1]["test"] == 0.75 and lines[-1]["training_calls"] == 42


def test_the_live_panel_shows_the_study_and_each_live_run() -> None:
    from rich.console import Console

    display = StudyDisplay(stream=io.StringIO(), live=True)
    display.study = STUDY
    console = Console(file=io.StringIO(), width=120)
    console.print(display.panel())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "2/6 done, 3 running, 1 waiting" in text and "ETA 0:45" in text
    assert "full-s43" in text and "train, 30 calls" in text and "no-skill-s43" in text
    display.close()


def test_a_row_that_failed_says_so() -> None:
    """A distillation that failed is a result of its row (no test score), not a crash."""
    out = io.StringIO()
    display = StudyDisplay(stream=out, live=False)
    failed = {"training": {"calls": 40}, "failed": "the distilled skill did not validate"}
    display(event("done", "distilled-s42", failed))
    assert out.getvalue().startswith(
        "distilled-s42: failed: the distilled skill did not validate | 2/6 done"
    )
