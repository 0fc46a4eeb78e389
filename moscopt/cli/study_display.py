"""What `moscopt ablate` and `moscopt compare` show while their runs go (on stderr).

The study as a whole: runs done / running / waiting, training calls spent against the study's
total budget, the elapsed time and an ETA, and each live run's phase and calls.
- On a terminal: a live panel (rich) redrawn twice a second; a finished run's line scrolls
  above it.
- Elsewhere (a pipe, a log, CI): one plain line per run started or finished, each ending with
  the study's state, and that state alone every `HEARTBEAT` seconds without an event.
- With `--json`: one JSON object per line for each event (`skipped`, `start`, `done`, and
  `progress` every `JSON_EVERY` seconds), each with the study's state under `study`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from moscopt.cli.display import _clock

HEARTBEAT = 60.0
JSON_EVERY = 5.0


def study_line(s: dict[str, Any]) -> str:
    """`2/6 done, 3 running, 1 waiting | training calls 130/240 | 1:20 elapsed, ETA 0:45`."""
    runs = s["runs"]
    eta = "-" if s["eta_seconds"] is None else _clock(s["eta_seconds"])
    return (
        f"{runs['done']}/{runs['total']} done, {runs['running']} running, "
        f"{runs['waiting']} waiting | training calls {s['training_calls']}/"
        f"{s['training_budget']} | {_clock(s['elapsed_seconds'])} elapsed, ETA {eta}"
    )


def run_line(e: dict[str, Any]) -> str | None:
    """A run's own line for a `start`, `done` or `skipped` event."""
    record = e.get("record")
    head = f"{e['run']}:"
    if e["event"] == "start":
        return f"{head} running"
    if record is None:
        return None
    if "failed" in record:
        return f"{head} failed: {record['failed']}"
    test, training = record["test"], record["training"]
    lo, hi = test["ci95"]
    stop = ", stopped at budget" if training.get("stopped_at_budget") else ""
    was = " (finished before)" if e["event"] == "skipped" else ""
    return (
        f"{head} test {test['score']:.3f} ({lo:.3f}-{hi:.3f}), "
        f"{training['calls']} training calls{stop}{was}"
    )


class StudyDisplay:
    """The `notify` callback of `run_study`; `close()` when the study ends."""

    def __init__(
        self,
        *,
        json_lines: bool = False,
        stream: IO[str] | None = None,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.json_lines = json_lines
        self.live = not json_lines and (self.stream.isatty() if live is None else live)
        self.clock = clock
        self.last = clock()
        self.study: dict[str, Any] | None = None
        self._live: Any = None
        self._lock = threading.Lock()

    def __call__(self, e: dict[str, Any]) -> None:
        with self._lock:
            self.study = e["study"]
            now = self.clock()
            if self.json_lines:
                if e["event"] != "progress" or now - self.last >= JSON_EVERY:
                    self.last = now
                    record = e.get("record")
                    out = {k: v for k, v in e.items() if k not in ("record", "index", "total")}
                    if record is not None and "test" in record:
                        out["test"] = record["test"]["score"]
                        out["training_calls"] = record["training"].get("calls")
                    self._write(json.dumps(out))
                return
            if self.live:
                self._ensure_live()
                line = run_line(e) if e["event"] != "start" else None
                if line is not None:
                    self._live.console.print(line, markup=False, highlight=False, soft_wrap=True)
                return
            line = run_line(e) if e["event"] != "progress" else None
            if line is not None:
                self.last = now
                self._write(f"{line} | {study_line(e['study'])}")
            elif now - self.last >= HEARTBEAT:
                self.last = now
                self._write(f"study: {study_line(e['study'])}")

    def panel(self) -> Any:
        """The live panel (a rich renderable)."""
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        s = self.study
        if s is not None:
            table.add_row("study", study_line(s))
            for run in s["live"]:
                table.add_row(f"  {run['run']}", f"{run['phase']}, {run['calls']} calls")
        return table

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _ensure_live(self) -> None:
        if self._live is not None:
            return
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self.stream, highlight=False)
        self._live = Live(
            get_renderable=self.panel, console=console, refresh_per_second=2, transient=True
        )
        self._live.start()

    def _write(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
