"""What `moscopt train` shows while it runs (on stderr).

On a terminal: a live panel (rich), up from the first instant (`begin`), with the phase, epoch
and step, what runs now (`validating candidate <skill>: sample 2 of up to 5 (3 of 6 tasks
done)`), the validation score, the edit decisions (`run.outcomes`' words), the gate's fallback
rate, calls, tokens and cost (moved by every LLM call, so they agree with the ledger), elapsed
time and an ETA (from the finished epochs, or during the first epoch from the plan's call
count), redrawn four times a second. Decisions scroll above it, cut to the terminal's width.
Elsewhere (a pipe, a log file, CI): one plain line per decision, never wrapped, and a line
`... still working` with what runs now when no line was printed for `HEARTBEAT` seconds.

When the gate's answers fall back often (the model is not following the gate's format), the
run says so once and says what to change (`moscopt.routing.gate.fallback_hint`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from moscopt.app.pace import left_by_calls
from moscopt.routing.gate import HIGH_FALLBACK, fallback_hint

HEARTBEAT = 60.0  # seconds without a line before a plain-mode "still working" line


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _edits(e: dict[str, Any]) -> str:
    """The edit decisions so far, in `run.outcomes`' words (unusable / not applied if any)."""
    from moscopt.run.outcomes import outcome_words

    return outcome_words(e, always=("accepted", "rejected"))


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class TrainDisplay:
    """Progress of one training run; `update` is the trainer's progress callback."""

    def __init__(
        self,
        quiet: bool = False,
        *,
        stream: IO[str] | None = None,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.live = (not quiet) and (self.stream.isatty() if live is None else live)
        self.clock = clock
        self.start = clock()
        self.last_event = self.start
        self.last_beat = self.start
        self.state: dict[str, Any] = {}
        self.last_line = "starting"
        self.last_call: float | None = None
        self.run_path: str | None = None  # set by `started` as soon as the run exists
        self.first_calls: tuple[float, int] | None = None  # (when, calls) at the first event
        self.epoch_started: dict[int, float] = {}  # when this process saw each epoch begin
        self.first_epoch: int | None = None  # the epoch this process started in (a resume: >0)
        self.hinted = False
        self.down: set[str] = set()  # deployments down now
        self._live: Any = None
        self._console: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the callbacks -------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if not self.quiet:
            self._print(f"note: {text}", cut=False)

    def begin(self) -> None:
        """Show the panel now, before the first event (loading a model can take a while)."""
        if not self.quiet:
            self._ensure_started()

    def started(self, run_path: str | Path) -> None:
        """The run exists at `run_path` (what an interrupted run's hint names)."""
        self.run_path = str(run_path)

    def update(self, e: dict[str, Any]) -> None:
        if self.quiet:
            return
        if e.get("event") == "deployment":
            self._print(self.deployment(e), cut=False)
            return
        now = self.clock()
        self.last_event = now
        if e.get("event") == "call":
            self.last_call = now
        if self.first_calls is None:
            self.first_calls = (now, int(e.get("calls", 0)))
        if self.first_epoch is None and "epoch" in e:
            self.first_epoch = e["epoch"]
            self.epoch_started[e["epoch"]] = self.start
        if e.get("epoch") not in self.epoch_started:
            self.epoch_started[e["epoch"]] = now
        self.state = e
        line = self.describe(e)
        if line is not None:
            self.last_line = line
            self.last_beat = now
            self._print(f"{self.head(e)} {line} | {self.tail(e)}")
        rate = e.get("gate_fallback")
        if rate is not None and rate > HIGH_FALLBACK and not self.hinted:
            self.hinted = True
            self.note(fallback_hint(rate, bool(e.get("gate_constrained"))))
        self._ensure_started()

    def tick(self) -> None:
        """Called every second by the display's thread: the plain-mode heartbeat."""
        now = self.clock()
        if self.live or self.quiet or now - self.last_beat < HEARTBEAT:
            return
        self.last_beat = now
        e = self.state
        phase = e.get("phase", "start")
        doing = f"{e['activity']}; " if e.get("activity") else ""
        calls = f"{e['calls']} calls; " if "calls" in e else ""
        idle = _clock(now - self.last_event)
        self._print(
            f"... still working ({phase}; {doing}{calls}{idle} since the last event; "
            f"last: {self.last_line})"
        )

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
        if self._live is not None:
            self._live.stop()
            self._live = None

    # -- text ----------------------------------------------------------------------------------

    @staticmethod
    def head(e: dict[str, Any]) -> str:
        return f"[{e['epoch'] + 1}/{e['epochs']}] step {e['step']} {e['phase']}:"

    @staticmethod
    def tail(e: dict[str, Any]) -> str:
        best = "-" if e.get("best_val") is None else f"{e['best_val']:.3f}"
        rate = e.get("gate_fallback")
        gate = "" if rate is None else f" | gate fallback {rate:.0%}"
        return (
            f"val {best} | edits {_edits(e)}{gate} | {e['calls']} calls, "
            f"{_tokens(e['tokens'])} tok, ${e['cost']:.4f}"
        )

    @staticmethod
    def describe(e: dict[str, Any]) -> str | None:
        kind = e.get("event")
        if kind == "edit":
            verdict = "accepted" if e["verdict"] else "rejected"
            return f"edit {e['target']} {verdict} ({e['score']:.3f})"
        if kind == "evolution":
            return f"evolution {'accepted' if e['verdict'] else 'rejected'} ({e['score']:.3f})"
        if kind == "phase":
            return "start"
        if kind == "done":
            return "finished"
        return None  # a step boundary: the live panel shows it, plain lines do not

    def deployment(self, e: dict[str, Any]) -> str:
        """The line of a deployment that went down or came back (the panel lists the down)."""
        name = e["deployment"]
        if e["state"] == "down":
            self.down.add(name)
            why = f": {e['error']}" if e.get("error") else ""
            count = e["failures"]
            return f"deployment {name} down ({count} failure{'s' * (count != 1)} in a row){why}"
        self.down.discard(name)
        return f"deployment {name} back up after {_clock(e.get('down_for') or 0.0)}"

    def eta(self) -> str:
        """From the mean time of the epochs this process finished; before that (the first epoch,
        so all along a one-epoch run, or a resumed run's first), from the pace of the calls so
        far and the plan's call count."""
        e = self.state
        if not e:
            return "-"
        epoch, epochs = e["epoch"], e["epochs"]
        if e.get("event") == "done":
            return "done"
        first = self.first_epoch if self.first_epoch is not None else epoch
        if epoch > first and epoch in self.epoch_started:  # epochs this process has finished
            per_epoch = (self.epoch_started[epoch] - self.epoch_started[first]) / (epoch - first)
            left = per_epoch * (epochs - epoch) - (self.clock() - self.epoch_started[epoch])
            return _clock(max(0.0, left))
        planned = e.get("planned_calls")
        if not planned or self.first_calls is None:
            return "- (after the first epoch)"
        left = left_by_calls(planned, self.first_calls, int(e["calls"]), self.clock())
        if isinstance(left, str):
            return left
        return f"~{_clock(left)} (from the plan's {planned} calls)"

    def panel(self) -> Any:
        """The live panel (a rich renderable)."""
        from rich.table import Table

        e, now = self.state, self.clock()
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(no_wrap=True, overflow="ellipsis")
        if e:
            best = "-" if e.get("best_val") is None else f"{e['best_val']:.3f}"
            rate = e.get("gate_fallback")
            table.add_row(
                "phase", f"{e['phase']}  (epoch {e['epoch'] + 1}/{e['epochs']}, step {e['step']})"
            )
            table.add_row("now", e.get("activity") or "-")
            table.add_row("validation", best)
            table.add_row("edits", _edits(e))
            table.add_row("gate fallback", "-" if rate is None else f"{rate:.0%}")
            last_call = (
                "" if self.last_call is None else f", last {_clock(now - self.last_call)} ago"
            )
            table.add_row(
                "LLM",
                f"{e['calls']} calls, {_tokens(e['tokens'])} tokens, ${e['cost']:.4f}{last_call}",
            )
        else:
            table.add_row("now", "starting: loading the benchmark, the pool and the model")
        if self.down:
            table.add_row("deployments", "down: " + ", ".join(sorted(self.down)))
        table.add_row("time", f"{_clock(now - self.start)} elapsed, ETA {self.eta()}")
        waiting = now - self.last_event
        table.add_row("last", f"{self.last_line} ({_clock(waiting)} ago)")
        return table

    # -- output --------------------------------------------------------------------------------

    def _print(self, text: str, *, cut: bool = True) -> None:
        """One line: on a terminal an event line (`cut`) is cut to its width with an ellipsis,
        never wrapped; a note (a sentence to read whole) wraps between words."""
        if self._live is not None:
            from rich.text import Text

            console = self._live.console
            if cut:
                line = Text(text, no_wrap=True, overflow="ellipsis")
                console.print(line, highlight=False, no_wrap=True, overflow="ellipsis")
            else:
                console.print(Text(text), highlight=False)
        else:
            print(text, file=self.stream, flush=True)  # plain: one line, never wrapped

    def _ensure_started(self) -> None:
        if self._thread is not None or self._stop.is_set():
            return
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.stream, highlight=False, force_terminal=True)
            self._live = Live(
                get_renderable=self.panel,
                console=self._console,
                refresh_per_second=4,
                transient=True,
            )
            self._live.start()
        self._thread = threading.Thread(target=self._beat, name="moscopt-display", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            self.tick()
