"""A disk that is really full or really read-only (a tiny tmpfs, a read-only bind mount, in a
user and mount namespace made with `unshare`): one line naming the path and the OS error, exit
1, no traceback, and the saved state intact. Skipped where `unshare` is not allowed; the
in-process tests of `test_loud_failures` cover the same paths everywhere.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import snapshot, train_args

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # real processes


def namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0


needs_namespaces = pytest.mark.skipif(not namespaces_work(), reason="unshare is not allowed")


def moscopt(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "moscopt", *args])


def in_namespace(project: Path, script: str) -> subprocess.CompletedProcess[str]:
    """Run `script` (sh) in the project, in new user and mount namespaces."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", script],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def errors(stderr: str) -> list[str]:
    """The error lines (progress lines start with '[', notes with 'note:' or 'no price')."""
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("moscopt:")]


@needs_namespaces
def test_disk_full_mid_run_is_one_line_and_the_state_resumes(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        train = moscopt(*train_args(server.url, "runs/r1"))
        check = shlex.join([sys.executable, "-c", "from moscopt.run.rundir import RunDir; "
                            "r = RunDir.open('runs/r1'); r.load_pool(r.load_state())"])  # fmt: skip
        done = in_namespace(
            project,
            "mkdir -p runs && mount -t tmpfs -o size=64k tmpfs runs && "
            f"{train}; echo rc=$? >&2; {check} && cp -a runs/r1 saved",
        )
        lines = errors(done.stderr)
        assert "rc=1" in done.stderr, done.stderr
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("moscopt: cannot write runs/r1/"), lines
        assert lines[0].endswith(": No space left on device (ENOSPC)"), lines
        saved = RunDir.open(project / "saved")  # what the full disk held loads and resumes
        assert saved.load_state().status != "done"
        resumed = subprocess.run(
            shlex.split(moscopt("train", "--resume", "--run", "saved")),
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert resumed.returncode == 0, resumed.stderr
    assert RunDir.open(project / "saved").load_state().status == "done"


@needs_namespaces
def test_a_read_only_run_directory_is_one_line_for_every_command(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        first = subprocess.run(
            shlex.split(moscopt(*train_args(server.url), "--max-calls", "12")),
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert first.returncode == 1 and "stopped" in first.stderr, first.stderr
        before = snapshot(project / "runs/r1")
        commands = {
            "resume": moscopt("train", "--resume", "--run", "runs/r1", "--max-calls", "999"),
            "eval": moscopt("eval", "--run", "runs/r1", "--split", "test"),
            "report": moscopt("report", "--run", "runs/r1"),
        }
        script = "mount --bind runs/r1 runs/r1 && mount -o remount,bind,ro runs/r1 && " + "; ".join(
            f"{command}; echo {name}=$? >&2" for name, command in commands.items()
        )
        done = in_namespace(project, script)
    lines = errors(done.stderr)
    for name in commands:
        assert f"{name}=1" in done.stderr, done.stderr
    assert len(lines) == len(commands), done.stderr
    for line in lines:
        assert line.startswith("moscopt: cannot write runs/r1/"), lines
        assert line.endswith(": Read-only file system (EROFS)"), lines
    assert snapshot(project / "runs/r1") == before
