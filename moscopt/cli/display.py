"""What `moscopt train` shows while it runs (on stderr).

On a terminal: a live panel (rich) with the phase, epoch and step, the validation score, edits
accepted and rejected, the gate's fallback rate, calls, tokens, cost, elapsed time and an ETA,
redrawn four times a second, so that a long single call (a distillation, a slow server) is seen
to be running: the panel counts the seconds since the last event. Decisions scroll above it.
Elsewhere (a pipe, a log file, CI): one plain line per event, never wrapped, and a line
`... still working` when nothing happened for `HEARTBEAT` seconds.

When the gate's answers fall back often (the model is not following the gate's format), the
run says so once and says what to change (`moscopt.routing.gate.fallback_hint`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from moscopt.routing.gate import HIGH_FALLBACK, fallback_hint

HEARTBEAT = 60.0  # seconds without an event before a plain-mode "still working" line


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


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
        self.epoch_started: dict[int, float] = {0: self.start}
        self.hinted = False
        self._live: Any = None
        self._console: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the callbacks -------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if not self.quiet:
            self._print(f"note: {text}")

    def update(self, e: dict[str, Any]) -> None:
        if self.quiet:
            return
        now = self.clock()
        self.last_event = self.last_beat = now
        if e.get("epoch") not in self.epoch_started:
            self.epoch_started[e["epoch"]] = now
        self.state = e
        line = self.describe(e)
        if line is not None:
            self.last_line = line
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
        idle = _clock(now - self.last_event)
        phase = self.state.get("phase", "start")
        self._print(f"... still working ({phase}; {idle} since the last event; {self.last_line})")

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
            f"val {best} | edits +{e['accepted']}/-{e['rejected']}{gate} | {e['calls']} calls, "
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

    def eta(self) -> str:
        """From the mean time of the finished epochs; '-' during the first one."""
        e = self.state
        if not e:
            return "-"
        epoch, epochs = e["epoch"], e["epochs"]
        if e.get("event") == "done":
            return "done"
        if epoch == 0:
            return "- (after the first epoch)"
        per_epoch = (self.epoch_started[epoch] - self.start) / epoch
        left = per_epoch * (epochs - epoch) - (self.clock() - self.epoch_started[epoch])
        return _clock(max(0.0, left))

    def panel(self) -> Any:
        """The live panel (a rich renderable)."""
        from rich.table import Table

        e, now = self.state, self.clock()
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        if e:
            best = "-" if e.get("best_val") is None else f"{e['best_val']:.3f}"
            rate = e.get("gate_fallback")
            table.add_row(
                "phase", f"{e['phase']}  (epoch {e['epoch'] + 1}/{e['epochs']}, step {e['step']})"
            )
            table.add_row("validation", best)
            table.add_row("edits", f"{e['accepted']} accepted, {e['rejected']} rejected")
            table.add_row("gate fallback", "-" if rate is None else f"{rate:.0%}")
            table.add_row(
                "LLM", f"{e['calls']} calls, {_tokens(e['tokens'])} tokens, ${e['cost']:.4f}"
            )
        table.add_row("time", f"{_clock(now - self.start)} elapsed, ETA {self.eta()}")
        waiting = now - self.last_event
        table.add_row("last", f"{self.last_line} ({_clock(waiting)} ago)")
        return table

    # -- output --------------------------------------------------------------------------------

    def _print(self, text: str) -> None:
        if self._live is not None:
            self._live.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            print(text, file=self.stream, flush=True)  # plain: one line, never wrapped

    def _ensure_started(self) -> None:
        if self._thread is not None or self._stop.is_set():
            return
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.stream, highlight=False)
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
