"""A study's runs at once: which run starts when, and what the study shows while they go.

Every run is a `Job`. Up to `live` jobs run at once, each on its own thread (its own event
loop, run directory, cache and seed), all taking their requests from one `InFlight` cap, so
`--concurrency` bounds the requests in flight for the whole study and `live` bounds what is in
memory (a waiting run holds nothing). A job that reads another's record (a deployment row or
another optimizer reads its seed's `full` run) starts once that record is written. Jobs start
in the study's order, training runs first (they are the long ones).

When a run fails or the study is interrupted, the cap is closed: every live run stops at its
next request and saves its state (an interrupted run resumes when the study is run again);
the first real error (not the `Stopped` of the others) is raised.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from moscopt.lm.inflight import InFlight, Lane, Stopped

TRAINED = ("train", "gepa")  # kinds that spend a training budget
RANK = {"train": 0, "gepa": 1, "none": 2, "export": 3}


@dataclass(frozen=True)
class Job:
    name: str
    configuration: str
    kind: str  # train | gepa | none | export
    seed: int
    needs: str | None  # the run whose record it reads, which must be finished first
    budget: int  # training calls it may spend (0: none)


class Board:
    """Where every job of the study stands: waiting, running (training or test) or done, and
    the training calls spent against the study's total budget. Thread-safe."""

    def __init__(self, jobs: list[Job], clock: Callable[[], float] = time.monotonic) -> None:
        self.jobs = jobs
        self.clock = clock
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}  # name -> training calls of the finished run
        self._lanes: dict[str, Lane] = {}
        self._trained: dict[str, int] = {}  # running, in its test: the calls its training made
        self.started = clock()
        self._start_fraction = 0.0

    def finished_before(self, job: Job, record: dict[str, Any]) -> None:
        with self._lock:
            self._done[job.name] = _training_calls(job, record)
            self._start_fraction = self._fraction()

    def is_done(self, name: str) -> bool:
        with self._lock:
            return name in self._done

    def start(self, job: Job, lane: Lane) -> None:
        with self._lock:
            self._lanes[job.name] = lane

    def testing(self, name: str) -> None:
        """`name` finished training: what follows is its test evaluation."""
        with self._lock:
            lane = self._lanes.get(name)
            if lane is not None:
                self._trained[name] = lane.sent

    def finish(self, job: Job, record: dict[str, Any] | None) -> None:
        with self._lock:
            self._lanes.pop(job.name, None)
            self._trained.pop(job.name, None)
            if record is not None:
                self._done[job.name] = _training_calls(job, record)

    def snapshot(self) -> dict[str, Any]:
        """The study as a whole: runs done / running / waiting, training calls against the
        total budget, and an ETA (seconds; None until this invocation has made progress)."""
        with self._lock:
            live = []
            for job in self.jobs:
                if job.name in self._lanes:
                    phase = "test" if job.name in self._trained or job.budget == 0 else "train"
                    live.append({"run": job.name, "phase": phase, "calls": self._calls(job)})
            spent = sum(self._calls(j) for j in self.jobs if j.budget > 0)
            fraction = self._fraction()
        elapsed = self.clock() - self.started
        made = fraction - self._start_fraction
        eta = None
        if fraction >= 1.0:
            eta = 0.0
        elif made > 0.01 and elapsed > 0:
            eta = elapsed * (1.0 - fraction) / made
        done = sum(1 for j in self.jobs if j.name in self._done)
        return {
            "runs": {
                "done": done,
                "running": len(live),
                "waiting": len(self.jobs) - done - len(live),
                "total": len(self.jobs),
            },
            "training_calls": spent,
            "training_budget": sum(j.budget for j in self.jobs),
            "elapsed_seconds": round(elapsed, 1),
            "eta_seconds": None if eta is None else round(eta, 1),
            "live": live,
        }

    def _calls(self, job: Job) -> int:
        if job.name in self._done:
            return self._done[job.name]
        if job.name in self._trained:
            return self._trained[job.name]
        lane = self._lanes.get(job.name)
        return lane.sent if lane is not None and job.budget > 0 else 0

    def _fraction(self) -> float:
        """How far the study is, 0..1: a finished run counts 1, a training run 0.9 of its
        budget's share while it trains (0.9 in its test), any other live run 0.5."""
        total = 0.0
        for job in self.jobs:
            if job.name in self._done:
                total += 1.0
            elif job.name in self._trained:
                total += 0.9
            elif job.name in self._lanes:
                share = min(1.0, self._calls(job) / job.budget) if job.budget else 0.5 / 0.9
                total += 0.9 * share
        return total / max(1, len(self.jobs))


def order(jobs: list[Job]) -> list[Job]:
    """The order jobs start in: training runs first, each kind in the study's order."""
    return sorted(jobs, key=lambda j: RANK.get(j.kind, len(RANK)))


Work = Callable[[Job], dict[str, Any]]
Event = Callable[[str, Job | None, dict[str, Any] | None], None]


def run_jobs(
    jobs: list[Job],
    work: Work,
    *,
    live: int,
    cap: InFlight,
    board: Board,
    on_event: Event,
    tick: float = 1.0,
) -> None:
    """Run every job not done on `board` with `work`, at most `live` at once; `on_event`
    hears `start`, `done` (with the record) and, every `tick` seconds, `progress`."""
    pending = [j for j in order(jobs) if not board.is_done(j.name)]
    errors: list[BaseException] = []
    running: dict[Future[dict[str, Any]], Job] = {}
    if live < 1:
        raise ValueError("live must be at least 1")
    pool = ThreadPoolExecutor(max_workers=live, thread_name_prefix="moscopt-run")
    try:
        while running or (pending and not errors):
            while not errors and len(running) < live:
                job = next((j for j in pending if j.needs is None or board.is_done(j.needs)), None)
                if job is None:
                    break
                pending.remove(job)
                lane = cap.lane()
                board.start(job, lane)
                on_event("start", job, None)
                context = contextvars.copy_context()  # each run gets its own copy
                running[pool.submit(context.run, _in_lane, work, job, lane)] = job
            if not running:
                break  # nothing can start: the run they need failed
            finished, _ = wait(list(running), timeout=tick, return_when=FIRST_COMPLETED)
            for future in finished:
                job = running.pop(future)
                error = future.exception()
                if error is None:
                    record = future.result()
                    board.finish(job, record)
                    on_event("done", job, record)
                    continue
                board.finish(job, None)
                if not isinstance(error, Stopped) or not errors:
                    errors.append(error)
                cap.close(f"the study stopped ({type(error).__name__} in {job.name})")
            on_event("progress", None, None)
    except BaseException:  # KeyboardInterrupt: every live run saves its state and stops
        cap.close("interrupted")
        pool.shutdown(wait=True)
        raise
    pool.shutdown(wait=True)
    real = [e for e in errors if not isinstance(e, Stopped)]
    if real or errors:
        raise (real or errors)[0]
    if pending:  # a job whose needed run is not part of the study: a bug, never a silent gap
        raise RuntimeError("runs that could not start: " + ", ".join(j.name for j in pending))


def _in_lane(work: Work, job: Job, lane: Lane) -> dict[str, Any]:
    from moscopt.lm.inflight import sharing

    with sharing(lane):
        return work(job)


def _training_calls(job: Job, record: dict[str, Any]) -> int:
    if job.budget == 0:
        return 0
    return int(record.get("training", {}).get("calls", 0))
