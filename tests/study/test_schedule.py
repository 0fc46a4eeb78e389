"""`moscopt.study.schedule`: which run starts when, how many are live, how a study stops, and
what the board says (no LLM: the jobs are plain functions)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from moscopt.lm.errors import LMAuthError
from moscopt.lm.inflight import InFlight, Stopped, current_lane
from moscopt.study.schedule import Board, Job, order, run_jobs


def jobs(count: int, seeds: int = 1) -> list[Job]:
    out = []
    for seed in range(seeds):
        out.append(Job(f"full-s{seed}", "full", "train", seed, None, 10))
        for i in range(1, count):
            out.append(Job(f"c{i}-s{seed}", f"c{i}", "train", seed, None, 10))
        out.append(Job(f"static-s{seed}", "static", "export", seed, f"full-s{seed}", 0))
    return out


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.lock = threading.Lock()

    def __call__(self, event: str, job: Job | None, record: dict[str, Any] | None) -> None:
        with self.lock:
            self.seen.append((event, job.name if job else None))


def record(calls: int = 0) -> dict[str, Any]:
    return {"training": {"calls": calls}, "test": {"score": 1.0}}


def test_thirty_runs_are_never_more_than_runs_at_once_live() -> None:
    """What bounds a study's memory: a waiting run holds nothing, at most `live` run."""
    live, peak, lock = 0, 0, threading.Lock()

    def work(job: Job) -> dict[str, Any]:
        nonlocal live, peak
        with lock:
            live += 1
            peak = max(peak, live)
        time.sleep(0.005)
        with lock:
            live -= 1
        return record(3)

    all_jobs = jobs(4, seeds=6)  # 30 runs
    assert len(all_jobs) == 30
    board, events = Board(all_jobs), Events()
    run_jobs(all_jobs, work, live=4, cap=InFlight(4), board=board, on_event=events, tick=0.01)
    assert peak == 4
    assert sorted(n for e, n in events.seen if e == "done") == sorted(j.name for j in all_jobs)
    snap = board.snapshot()
    assert snap["runs"] == {"done": 30, "running": 0, "waiting": 0, "total": 30}
    assert snap["training_calls"] == 24 * 3 and snap["training_budget"] == 24 * 10


def test_a_row_that_reads_full_starts_after_it_and_training_runs_go_first() -> None:
    all_jobs = jobs(3, seeds=2)
    assert [j.kind for j in order(all_jobs)] == ["train"] * 6 + ["export"] * 2
    events = Events()

    def work(job: Job) -> dict[str, Any]:
        time.sleep(0.02 if job.configuration == "full" else 0.001)
        return record()

    run_jobs(
        all_jobs, work, live=8, cap=InFlight(2), board=Board(all_jobs), on_event=events, tick=0.01
    )
    seen = events.seen
    for seed in (0, 1):
        assert seen.index(("done", f"full-s{seed}")) < seen.index(("start", f"static-s{seed}"))


def test_runs_done_before_are_not_run_again() -> None:
    all_jobs = jobs(2)
    board = Board(all_jobs)
    board.finished_before(all_jobs[0], record(7))
    ran: list[str] = []
    run_jobs(
        all_jobs,
        lambda j: ran.append(j.name) or record(),
        live=2,
        cap=InFlight(2),
        board=board,
        on_event=Events(),
    )
    assert sorted(ran) == ["c1-s0", "static-s0"]  # static needed full: it was finished before
    assert board.snapshot()["training_calls"] == 7


def test_a_failing_run_stops_the_others_at_their_next_request_and_its_error_is_raised() -> None:
    """The other live runs get `Stopped` from the closed cap; the real error is the one
    raised, not theirs, and nothing else starts."""
    all_jobs = jobs(4)
    started: list[str] = []
    failed = threading.Event()

    def work(job: Job) -> dict[str, Any]:
        started.append(job.name)
        if job.name == "c1-s0":
            time.sleep(0.02)
            failed.set()
            raise LMAuthError("bad key")
        lane = current_lane()
        assert lane is not None  # every run's LMs share the study's cap

        async def calls() -> None:
            for _ in range(1000):
                async with lane.slot():
                    await asyncio.sleep(0.001)

        asyncio.run(calls())
        return record()

    cap = InFlight(2)
    with pytest.raises(LMAuthError, match="bad key"):
        run_jobs(all_jobs, work, live=3, cap=cap, board=Board(all_jobs), on_event=Events())
    assert failed.is_set() and len(started) == 3  # nothing started after the failure
    with pytest.raises(Stopped):
        asyncio.run(_one(cap))


async def _one(cap: InFlight) -> None:
    async with cap.slot():
        pass


def test_an_interrupt_closes_the_cap_and_waits_for_the_live_runs() -> None:
    all_jobs = jobs(2)
    stopped: list[str] = []

    def work(job: Job) -> dict[str, Any]:
        lane = current_lane()
        assert lane is not None

        async def calls() -> None:
            while True:
                async with lane.slot():
                    await asyncio.sleep(0.001)

        try:
            asyncio.run(calls())
        except Stopped:
            stopped.append(job.name)
            raise
        return record()

    def on_event(event: str, job: Job | None, rec: dict[str, Any] | None) -> None:
        if event == "progress":
            raise KeyboardInterrupt  # Ctrl-C, as the main thread waits

    with pytest.raises(KeyboardInterrupt):
        run_jobs(
            all_jobs, work, live=2, cap=InFlight(1), board=Board(all_jobs), on_event=on_event,
            tick=0.01,
        )  # fmt: skip
    assert sorted(stopped) == ["c1-s0", "full-s0"]  # both saw the stop and ended


def test_the_board_counts_training_calls_and_gives_an_eta() -> None:
    now = [0.0]
    all_jobs = jobs(2)  # full (budget 10), c1 (budget 10), static (no budget)
    board = Board(all_jobs, clock=lambda: now[0])
    assert board.snapshot()["eta_seconds"] is None  # no progress yet
    cap = InFlight(4)
    lanes = {j.name: cap.lane() for j in all_jobs}
    board.start(all_jobs[0], lanes["full-s0"])
    board.start(all_jobs[1], lanes["c1-s0"])
    lanes["full-s0"].sent, lanes["c1-s0"].sent = 5, 5
    now[0] = 30.0
    snap = board.snapshot()
    assert snap["runs"] == {"done": 0, "running": 2, "waiting": 1, "total": 3}
    assert snap["training_calls"] == 10 and snap["training_budget"] == 20
    assert [r["phase"] for r in snap["live"]] == ["train", "train"]
    # 0.45 + 0.45 of 3 runs done in 30 s: 2.1 runs left at that pace
    assert snap["eta_seconds"] == pytest.approx(30 * (3 - 0.9) / 0.9, abs=0.1)
    board.testing("full-s0")
    lanes["full-s0"].sent = 9  # its test calls are not training calls
    assert board.snapshot()["training_calls"] == 10
    assert board.snapshot()["live"][0]["phase"] == "test"
    board.finish(all_jobs[0], record(6))
    assert board.snapshot()["training_calls"] == 11


def test_a_run_whose_needed_run_is_missing_is_an_error_not_a_gap() -> None:
    orphan = [Job("static-s0", "static", "export", 0, "full-s0", 0)]
    with pytest.raises(RuntimeError, match="could not start: static-s0"):
        run_jobs(orphan, lambda j: record(), live=2, cap=InFlight(2), board=Board(orphan),
                 on_event=Events())  # fmt: skip


def test_runs_at_once_below_one_is_refused(tmp_path: Any) -> None:
    from moscopt.errors import UserError
    from moscopt.study import StudySpec, run_study

    spec = StudySpec("ablate", None, 5, [1], ["full"], runs_at_once=0)
    with pytest.raises(UserError, match="--runs-at-once must be at least 1"):
        run_study(spec, tmp_path / "study")
    assert not (tmp_path / "study").exists()
