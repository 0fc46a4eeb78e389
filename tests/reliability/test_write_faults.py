"""Crashes and I/O errors *during state writes*, inside a real trainer run, then resume.

`os.replace` (the commit point of every atomic write) or `os.fsync` fails at the Nth call of a
run: as a crash (a `BaseException` that unwinds everything, like an interrupt) or as a disk error
(`OSError(ENOSPC)`). Stray temporary files, as a SIGKILL between write and rename leaves them,
are added before resuming. The resumed run must load a consistent state and end with the pool,
Q-scores and validation history of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from moscopt.app.workspace import make_trainer
from moscopt.core.skills import Pool
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing.scripted import make_run, scripted_lm

OVERRIDES: dict[str, Any] = {"evolution.enabled": True, "credit.c_min": 1}


class Crash(BaseException):
    """A crash mid-write: nothing in moscopt may catch it."""


def train(run: RunDir, config: Any, bench: Any, sp: Any, seeds: Pool) -> None:
    trainer = make_trainer(
        run=RunDir.open(run.path),
        config=config,
        benchmark=bench,
        splits=sp,
        agent_lm=scripted_lm(),
        optimizer_lm=scripted_lm(),
        seeds=seeds,
    )
    asyncio.run(trainer.train())


def outcome(run: RunDir) -> tuple[Any, ...]:
    state = run.load_state()
    return (
        state.status,
        run.load_pool().digest(),
        state.q,
        state.activations,
        [(p.epoch, p.phase, p.score) for p in state.val_history],
        state.accepted_edits(),
    )


def failing_at(real: Callable[..., Any], n: int, error: BaseException) -> Callable[..., Any]:
    calls = 0

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == n:
            raise error
        return real(*args, **kwargs)

    return wrapper


def counting(real: Callable[..., Any], counter: list[int]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        return real(*args, **kwargs)

    return wrapper


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The uninterrupted run's outcome and how many replace/fsync calls it makes."""
    tmp = tmp_path_factory.mktemp("ref")
    seed_dir = Path(__file__).resolve().parents[2] / "skills"
    run, config, bench, sp, seeds = make_run(tmp, seed_dir, **OVERRIDES)
    counts = {"replace": [0], "fsync": [0]}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", counting(os.replace, counts["replace"]))
        mp.setattr(os, "fsync", counting(os.fsync, counts["fsync"]))
        train(run, config, bench, sp, seeds)
    return {"outcome": outcome(run), "replace": counts["replace"][0], "fsync": counts["fsync"][0]}


def leave_stray_temp_files(run: RunDir) -> None:
    """What a SIGKILL between write and rename leaves behind."""
    for folder in (run.path, run.checkpoints_dir, *run.skills_dir.iterdir()):
        (folder / ".state.json.abc123.tmp").write_text('{"half": ')
        (folder / ".SKILL.md.abc123.tmp").write_text("---\nname: half")


POINTS = [0.02, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 0.99]


@pytest.mark.parametrize("fraction", POINTS)
@pytest.mark.parametrize(
    ("call", "error"),
    [("replace", Crash()), ("fsync", OSError(errno.ENOSPC, "No space left on device"))],
    ids=["replace-crash", "fsync-enospc"],
)
def test_write_failure_then_resume_is_consistent(
    tmp_path: Path,
    seed_dir: Path,
    reference: dict[str, Any],
    fraction: float,
    call: str,
    error: BaseException,
) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **OVERRIDES)
    n = max(1, int(reference[call] * fraction))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, call, failing_at(getattr(os, call), n, error))
        try:
            train(run, config, bench, sp, seeds)
        except type(error):
            pass
        else:
            # only a directory fsync failed: that is deliberately ignored (some filesystems
            # cannot fsync a directory), and the run went on
            assert call == "fsync"
            assert outcome(RunDir.open(run.path)) == reference["outcome"]
            return

    # what is on disk right after the failure is a consistent, loadable run
    reopened = RunDir.open(run.path)
    state = reopened.load_state()
    assert state.status != "done"
    pool = reopened.load_pool(state)
    assert Pool.load(reopened.skills_dir).digest() == pool.digest() == state.pool_digest
    read_events(reopened.events.path)  # every line parses (a torn tail is skipped)

    leave_stray_temp_files(reopened)
    train(reopened, config, bench, sp, seeds)
    final = RunDir.open(run.path)
    assert outcome(final) == reference["outcome"]
    assert Pool.load(final.skills_dir).digest() == final.load_pool().digest()
    # each minibatch's rollouts are in the log once, however often its step was redone
    keys = [
        (e.epoch, e.batch, e.task_id) for e in read_events(final.events.path, kinds={"rollout"})
    ]
    assert len(keys) == len(set(keys))
