"""SIGKILL `moscopt train` at points spread over a run, resume, and get the uninterrupted result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moscopt.fsio import iter_jsonl
from moscopt.rundir import RunDir
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


def test_sigkill_at_many_points_then_resume_gives_the_same_pool(project: Path) -> None:
    t0 = time.monotonic()
    moscopt(project, "benchmarks").communicate(timeout=60)
    startup = time.monotonic() - t0  # interpreter and imports, before any work
    with FakeServer(responder=responder, latency=0.05) as server:
        t0 = time.monotonic()
        proc = moscopt(project, *train_args(server.url, "runs/ref"))
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        duration = time.monotonic() - t0
        ref = RunDir.open(project / "runs/ref")
        ref_pool, ref_state = ref.load_pool(), ref.load_state()
        assert ref_state.accepted_edits() >= 1

        landed: list[str] = []
        fractions = [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.72, 0.8, 0.88]
        for i, fraction in enumerate(fractions):
            run = f"runs/k{i}"
            proc = moscopt(project, *train_args(server.url, run))
            time.sleep(startup + (duration - startup) * fraction)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
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
            events = list(iter_jsonl(done.events_path))  # parseable, no torn lines
            ref_events = list(iter_jsonl(ref.events_path))
            for kind in ("rollout", "edit", "evolution", "epoch_end"):
                got = [e for e in events if e["type"] == kind]
                want = [e for e in ref_events if e["type"] == kind]
                assert len(got) == len(want), (run, kind)
        print("kills landed at:", landed)
        assert len(set(landed)) >= 4  # spread over the run, not all in one place


def _where(path: Path) -> str:
    if not (path / "state.json").exists():
        return "before the run existed"
    state = RunDir.open(path).load_state()
    c = state.cursor
    return f"{state.status} e{c.epoch} {c.phase} b{c.batch} t{c.target} credited={c.credited}"
