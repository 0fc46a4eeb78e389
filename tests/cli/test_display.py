"""`moscopt train`'s progress display: plain lines off a terminal, a live panel on one."""

from __future__ import annotations

import io
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
    assert "... still working (skills; 1:01 since the last event; start)" in out.getvalue()


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
