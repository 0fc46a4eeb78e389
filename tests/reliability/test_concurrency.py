"""Two processes on one run directory: the second refuses (exit 2, a clear message) and the first
finishes uncorrupted, with the same pool as a run nobody disturbed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from moscopt.core.skills import Pool
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import train_args

pytestmark = pytest.mark.slow  # real processes (interpreter start-up, ~10 s in all)
REPO = Path(__file__).resolve().parents[2]


def moscopt(project: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "moscopt", *args],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_until_training(project: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Until the first process holds the lock and has saved its state."""
    lock, state = project / "runs/r1/.lock", project / "runs/r1/state.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the first process ended early: {proc.communicate()}")
        if state.exists() and lock.exists() and lock.read_text().strip() == str(proc.pid):
            return
        time.sleep(0.02)
    raise AssertionError("the first process never started training")


def test_second_process_on_the_same_run_refuses(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first process is held at its first LLM call until the checks are done (progress, not
    # time: however fast the machine, it cannot finish before the second process is refused).
    held, release = threading.Event(), threading.Event()

    def responder(body: Any) -> str:
        if held.is_set():
            release.wait(timeout=120)
        return server_responder(body)

    with FakeServer(responder=responder) as server:
        ref = moscopt(project, *train_args(server.url, "runs/ref", epochs=2, evolution=True))
        _, err = ref.communicate(timeout=300)
        assert ref.returncode == 0, err.decode()

        # its own cache: replaying the reference's answers would make no call to hold
        monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(project / "cache-r1"))
        held.set()
        first = moscopt(project, *train_args(server.url, "runs/r1", epochs=2, evolution=True))
        wait_until_training(project, first)
        attempts = {
            "resume": ["train", "--resume", "--run", "runs/r1"],
            "new": train_args(server.url, "runs/r1", epochs=2, evolution=True),
        }
        for name, args in attempts.items():
            second = moscopt(project, *args)
            out, err = second.communicate(timeout=120)
            assert second.returncode == 2, (name, out, err)
            message = (out + err).decode().strip().splitlines()
            assert len(message) == 1 and "runs/r1" in message[0], (name, message)
            assert first.poll() is None, "the first process ended before the check was made"
            # both are refused by the lock, before anything is read or written
            assert "another moscopt process is using this run directory" in message[0]
        release.set()
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err.decode()

    run, reference = RunDir.open(project / "runs/r1"), RunDir.open(project / "runs/ref")
    state = run.load_state()
    assert state.status == "done"
    assert Pool.load(run.skills_dir).digest() == run.load_pool().digest()
    assert run.load_pool().digest() == reference.load_pool().digest()
    events = read_events(run.events.path)  # every line parses
    assert [e.type for e in events].count("train_start") == 1
    assert state.q == reference.load_state().q
