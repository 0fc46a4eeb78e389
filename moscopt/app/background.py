"""Training runs started in the background of a long-lived process (the MCP server).

`start` and `resume` do what `moscopt train [--resume]` does (`moscopt.app.runner`), in a
thread of their own, and return as soon as the run directory exists, so a caller gets the
run's id at once; a bad flag, benchmark or model is still raised to it, before any work. The
run is an ordinary run: its lock, state and ledger are on disk, so `moscopt status` in a
terminal sees it and `moscopt train --resume` continues it if this process goes away.
`Tracker` keeps what the trainer last reported (phase, calls, cost, the last decision) for
`status` to show while the run goes on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.app.pace import left_by_calls
from moscopt.errors import MoscoptError, UserError

if TYPE_CHECKING:
    from moscopt.app.runner import TrainOutcome
    from moscopt.config import Config

# the calls before an ETA is given from the pace of the calls (as the CLI's panel waits)


def require_budget(config: Config, how: str) -> None:
    """A run started where nobody watches it (the MCP server) must have a hard budget:
    `llm.max_calls` or `llm.max_cost`. `how` says how the caller gives one."""
    if config.llm.max_calls is None and config.llm.max_cost is None:
        raise UserError(
            f"a run started here needs a budget: {how}, or set llm.max_calls (or llm.max_cost) "
            "in moscopt.yaml",
            field="llm.max_calls",
        )


@dataclass
class Tracker:
    """What the trainer of one background run last reported, and how it ended."""

    path: Path | None = None
    started_at: float = field(default_factory=time.monotonic)
    last: dict[str, Any] = field(default_factory=dict)  # the trainer's last progress event
    decision: dict[str, Any] | None = None  # its last edit or evolution event
    first_call: tuple[float, int] | None = None  # (when, calls) at the first report
    outcome: TrainOutcome | None = None
    error: str | None = None  # the one-line message of a run that stopped on an error
    # the run directory exists (or the start failed); the thread ended
    created: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def update(self, e: dict[str, Any]) -> None:
        """The trainer's progress callback (called from the run's thread)."""
        if e.get("event") == "deployment":
            return
        with self.lock:
            if self.first_call is None and "calls" in e:
                self.first_call = (time.monotonic(), int(e["calls"]))
            self.last = dict(e)
            if e.get("event") in ("edit", "evolution"):
                self.decision = dict(e)

    def snapshot(self) -> dict[str, Any]:
        """The live view: running or how it ended, the trainer's last report and an ETA."""
        with self.lock:
            e, decision = dict(self.last), self.decision
        state = "running"
        if self.finished.is_set():
            state = "stopped" if self.error else "done"
        out: dict[str, Any] = {
            "state": state,
            "elapsed_s": round(time.monotonic() - self.started_at, 1),
            "eta": self.eta(e) if state == "running" else None,
            "last_event": e or None,
            "last_decision": decision,
        }
        if self.error:
            out["error"] = self.error
        return out

    def eta(self, e: dict[str, Any]) -> str:
        """From the pace of the calls so far and the plan's call count (an upper estimate)."""
        planned = e.get("planned_calls")
        calls = int(e["calls"]) if "calls" in e else None
        left = left_by_calls(planned, self.first_call, calls, time.monotonic())
        if isinstance(left, str):
            return left
        return f"~{round(left)} s (from the plan's {planned} calls)"


_RUNS: dict[Path, Tracker] = {}
_RUNS_LOCK = threading.Lock()


def tracker(path: Path) -> Tracker | None:
    """The tracker of the run at `path` if this process started it."""
    with _RUNS_LOCK:
        return _RUNS.get(path.resolve())


def start(
    *,
    config: Config,
    skills_dir: Path,
    benchmark: str | None,
    run_path: Path | None,
    project_root: Path,
    notes: Callable[[str], None] | None = None,
    tasks: Path | None = None,
    held_out: Path | None = None,
) -> Path:
    """Start a new run (`runner.train`) in a thread; its path once it exists."""
    from moscopt.app import runner

    def work(t: Tracker) -> TrainOutcome:
        return runner.train(
            config=config,
            skills_dir=skills_dir,
            benchmark=benchmark,
            run_path=run_path,
            project_root=project_root,
            progress=t.update,
            notes=notes,
            started=lambda p: _created(t, Path(p)),
            tasks=tasks,
            held_out=held_out,
        )

    return _launch(work)


def resume(*, run_path: Path, overrides: dict[str, Any]) -> Path:
    """Continue a stopped run (`runner.resume`) in a thread; its path."""
    from moscopt.app import runner
    from moscopt.run.rundir import RunDir

    path = RunDir.open(run_path).path  # a missing or broken run: raised here

    def work(t: Tracker) -> TrainOutcome:
        _created(t, path)
        return runner.resume(run_path=path, overrides=overrides, progress=t.update)

    return _launch(work)


def _created(t: Tracker, path: Path) -> None:
    t.path = path.resolve()
    with _RUNS_LOCK:
        _RUNS[t.path] = t
    t.created.set()


def _launch(work: Callable[[Tracker], TrainOutcome]) -> Path:
    t = Tracker()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            t.outcome = work(t)
        except MoscoptError as e:  # a user error, a bad key, the budget: the run is saved
            t.error = str(e)
            if not t.created.is_set():
                failure.append(e)
        except BaseException as e:  # a bug: the run is saved up to its last decision
            t.error = f"{type(e).__name__}: {e}"
            if not t.created.is_set():
                failure.append(e)
        finally:
            t.finished.set()
            t.created.set()

    threading.Thread(target=target, name="moscopt-run", daemon=True).start()
    t.created.wait()
    if failure:
        raise failure[0]
    assert t.path is not None
    return t.path
