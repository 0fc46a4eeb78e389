"""SIGKILL `moscopt train` at points spread over a run, resume, and get the uninterrupted result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder as responder
from moscopt.testing.scripted import write_project

pytestmark = pytest.mark.slow


def moscopt(project: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        [sys.executable, "-m", "moscopt", *args],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def train_args(url: str, run: str) -> list[str]:
    return [
        "train", "--benchmark", "addition.yaml", "--data", "addition.jsonl",
        "--model", "openai/scripted", "--api-base", url, "--n", "3", "--k", "2",
        "--epochs", "2", "--steps-per-epoch", "2", "--run", run, "--concurrency", "2",
    ]  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    seeds = Path(__file__).resolve().parents[2] / "skills"
    write_project(tmp_path, seeds, "credit:\n  c_min: 1\nevolution:\n  embedding_model: difflib\n")
    return tmp_path


def finish(project: Path, url: str, run: str) -> None:
    """Resume (or restart, if the kill came before the run existed) until the run is done."""
    errors = []
    for _ in range(5):
        started = (project / run / "state.json").exists()
        if started and RunDir.open(project / run).load_state().status == "done":
            return  # the kill came after the end
        args = ["train", "--resume", "--run", run] if started else train_args(url, run)
        proc = moscopt(project, *args)
        _, err = proc.communicate(timeout=300)
        if proc.returncode == 0:
            return
        errors.append(f"{proc.returncode}: {err.decode()[-2000:]}")
    raise AssertionError("the run did not finish after 5 resumes:\n" + "\n".join(errors))


def kill_at(proc: subprocess.Popen[bytes], events: Path, lines: int) -> None:
    """SIGKILL `proc` as soon as its run has logged `lines` events (progress, not time)."""
    while proc.poll() is None:
        if events.exists() and events.read_bytes().count(b"\n") >= lines:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.001)
    proc.wait()


def test_sigkill_at_many_points_then_resume_gives_the_same_pool(project: Path) -> None:
    with FakeServer(responder=responder, latency=0.02) as server:
        proc = moscopt(project, *train_args(server.url, "runs/ref"))
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        ref = RunDir.open(project / "runs/ref")
        ref_pool, ref_state = ref.load_pool(), ref.load_state()
        assert ref_state.accepted_edits() >= 1
        ref_events = read_events(ref.events.path)
        total = len(ref_events)

        landed: list[str] = []
        fractions = [0.02, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
        for i, fraction in enumerate(fractions):
            run = f"runs/k{i}"
            proc = moscopt(project, *train_args(server.url, run), "--no-cache")
            kill_at(proc, project / run / "events.jsonl", max(1, int(total * fraction)))
            landed.append(_where(project / run))
            finish(project, server.url, run)
            done = RunDir.open(project / run)
            state = done.load_state()
            assert state.status == "done", run
            assert done.load_pool() == ref_pool, run
            assert (state.q, state.synergy, state.activations) == (
                ref_state.q,
                ref_state.synergy,
                ref_state.activations,
            ), run
            events = read_events(done.events.path)  # every line parses, no torn lines
            for kind in ("rollout", "edit", "evolution", "epoch_end"):
                got = [e for e in events if e.type == kind]
                want = [e for e in ref_events if e.type == kind]
                assert len(got) == len(want), (run, kind)
        print("kills landed at:", landed)
        assert len(set(landed)) >= 5  # spread over the run, not all in one place


def _where(path: Path) -> str:
    if not (path / "state.json").exists():
        return "before the run existed"
    state = RunDir.open(path).load_state()
    c = state.cursor
    return f"{state.status} e{c.epoch} {c.phase} b{c.batch} t{c.target} credited={c.credited}"
