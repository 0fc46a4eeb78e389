"""`moscopt train`'s progress display: plain lines off a terminal, a live panel on one."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console

from moscopt.cli.display import HEARTBEAT, TrainDisplay


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def event(**fields: Any) -> dict[str, Any]:
    base = {
        "epoch": 0, "epochs": 2, "step": 3, "phase": "skills", "best_val": 0.5,
        "accepted": 1, "rejected": 2, "calls": 1234, "tokens": 56789, "cost": 0.25,
    }  # fmt: skip
    return {**base, **fields}


def test_plain_lines_are_never_wrapped_and_name_the_fallback_rate() -> None:
    out, clock = io.StringIO(), Clock()
    display = TrainDisplay(stream=out, live=False, clock=clock)
    name = "a-skill-with-a-very-long-name-" * 4
    display.update(event(event="edit", target=name, verdict=True, score=0.75, gate_fallback=0.1))
    display.update(event(event="step"))  # a step boundary prints nothing
    display.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0]) > 200
    assert f"edit {name} accepted (0.750)" in lines[0] and "gate fallback 10%" in lines[0]


def test_a_high_fallback_rate_suggests_json_gating_once() -> None:
    out = io.StringIO()
    display = TrainDisplay(stream=out, live=False, clock=Clock())
    for _ in range(3):
        display.update(event(event="phase", gate_fallback=0.6))
    display.close()
    hints = [line for line in out.getvalue().splitlines() if "gating.output: json" in line]
    assert len(hints) == 1 and "60%" in hints[0]
    out = io.StringIO()
    display = TrainDisplay(stream=out, live=False, clock=Clock())
    display.update(event(event="phase", gate_fallback=0.6, gate_constrained=True))
    display.close()
    assert "gating.output: json" not in out.getvalue()  # already under a schema
    assert "response_format" in out.getvalue()


def test_a_long_call_is_seen_to_be_running() -> None:
    out, clock = io.StringIO(), Clock()
    display = TrainDisplay(stream=out, live=False, clock=clock)
    display.update(event(event="phase"))
    clock.now += HEARTBEAT - 1
    display.tick()
    assert "still working" not in out.getvalue()
    clock.now += 2
    display.tick()
    display.close()
    assert "... still working (skills; 1234 calls; 1:01 since the last event; last: start)" in (
        out.getvalue()
    )


def test_the_live_panel_shows_progress_fallback_and_eta() -> None:
    clock = Clock()
    display = TrainDisplay(stream=io.StringIO(), live=False, clock=clock)
    display.update(event(event="phase", gate_fallback=0.25))
    clock.now += 100
    display.update(event(event="phase", epoch=1, gate_fallback=0.25))
    clock.now += 30
    console = Console(file=io.StringIO(), width=120, record=True)
    console.print(display.panel())
    text = console.export_text()
    display.close()
    for expected in ("epoch 2/2, step 3", "validation", "0.500", "gate fallback", "25%"):
        assert expected in text, expected
    assert "2:10 elapsed, ETA 1:10" in text  # one epoch took 100 s; 30 s into the second
    assert "start (0:30 ago)" in text


def render(display: TrainDisplay, width: int = 160) -> str:
    console = Console(file=io.StringIO(), width=width, record=True)
    console.print(display.panel())
    return console.export_text()


def test_calls_and_activity_move_the_panel_without_printing_a_line() -> None:
    out, clock = io.StringIO(), Clock()
    display = TrainDisplay(stream=out, live=False, clock=clock)
    display.update(event(event="phase", calls=10))
    printed = out.getvalue()
    doing = "validating candidate careful-computation: sample 2 of up to 5 (3 of 6 tasks done)"
    display.update(event(event="activity", calls=10, activity=doing))
    clock.now += 7
    display.update(event(event="call", calls=11, activity=doing))
    clock.now += 3
    text = render(display)
    display.close()
    assert out.getvalue() == printed  # per-call events print nothing
    assert doing in text and "11 calls" in text and "last 0:03 ago" in text


def test_a_quiet_stretch_in_plain_mode_says_what_runs_now() -> None:
    out, clock = io.StringIO(), Clock()
    display = TrainDisplay(stream=out, live=False, clock=clock)
    display.update(event(event="phase"))
    for i in range(3):  # calls keep coming, but no decision line for a while
        clock.now += 30
        display.update(event(event="call", calls=1234 + i, activity="rolling out minibatch 1"))
        display.tick()
    display.close()
    beat = [line for line in out.getvalue().splitlines() if "still working" in line]
    assert len(beat) == 1 and "rolling out minibatch 1" in beat[0] and "1235 calls" in beat[0]


def test_the_panel_is_up_before_the_first_event() -> None:
    display = TrainDisplay(stream=io.StringIO(), live=False, clock=Clock())
    assert "starting: loading" in render(display)
    out = io.StringIO()
    live = TrainDisplay(stream=out, live=True, clock=Clock())
    live.begin()  # no event yet: the panel is drawn now
    live.close()
    assert "starting: loading" in out.getvalue()


def test_event_lines_are_cut_to_the_terminal_width_not_wrapped() -> None:
    out = io.StringIO()
    display = TrainDisplay(stream=out, live=True, clock=Clock())
    display.begin()
    name = "a-skill-with-a-very-long-name-" * 6
    display.update(event(event="edit", target=name, verdict=False, score=0.25))
    display.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", out.getvalue())  # the terminal's controls
    lines = [line for line in text.splitlines() if "step 3 skills: edit" in line]
    assert len(lines) == 1 and "rejected (0.250)" not in text  # cut, not wrapped onto a 2nd line
    assert len(lines[0].rstrip()) <= 80 and lines[0].rstrip().endswith("…")


def test_a_one_epoch_run_has_an_eta_from_the_plans_calls() -> None:
    clock = Clock()
    display = TrainDisplay(stream=io.StringIO(), live=False, clock=clock)
    display.update(event(event="activity", epochs=1, calls=0, planned_calls=100))
    assert "ETA - (after 5 calls; about 100 planned)" in render(display)
    clock.now += 50
    display.update(event(event="call", epochs=1, calls=25, planned_calls=100))
    text = render(display)
    display.close()
    assert "ETA ~2:30 (from the plan's 100 calls)" in text  # 2 s a call, 75 calls to go


def test_the_edit_line_uses_the_one_vocabulary() -> None:
    out = io.StringIO()
    display = TrainDisplay(stream=out, live=False, clock=Clock())
    display.update(
        event(event="edit", target="s", verdict=False, score=0.5, unusable=2, not_applied=1)
    )
    display.close()
    assert "edits 1 accepted, 2 rejected, 2 unusable, 1 not applied" in out.getvalue()


def test_a_resumed_runs_eta_counts_only_the_epochs_it_ran() -> None:
    clock = Clock()
    display = TrainDisplay(stream=io.StringIO(), live=False, clock=clock)
    display.update(event(event="phase", epoch=2, epochs=4, calls=500, planned_calls=100))
    clock.now += 60
    display.update(event(event="phase", epoch=3, epochs=4, calls=560, planned_calls=100))
    clock.now += 20
    text = render(display)
    display.close()
    assert "ETA 0:40" in text  # one epoch took 60 s here; 20 s into the last one


def test_a_note_on_a_terminal_wraps_between_words_and_is_read_whole() -> None:
    out = io.StringIO()
    display = TrainDisplay(stream=out, live=True, clock=Clock())
    display.begin()
    words = [f"word{i}" for i in range(40)]
    display.note(" ".join(words))
    display.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", out.getvalue())
    assert all(w in text.split() for w in words)  # every word whole: none cut or split
