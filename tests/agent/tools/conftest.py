from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from attack_helpers import ATTACK_MODES, Planted

from moscopt.agent.tools import _bwrap, _isolation, _workdir, sandbox


@pytest.fixture
def sandbox_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private temp root for the sandbox's run dirs, so a test can check they are removed.

    It sits in the temp dir (or, when that is private, where the sandbox itself would go) and is
    traversable (0711) because, as root, the sandboxed code runs under another uid that must
    reach its work dir.
    """
    parent = _workdir._parent_for((65534, 65534))
    root = Path(tempfile.mkdtemp(prefix="moscopt-test-sandbox-", dir=parent))
    os.chmod(root, 0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def child_pids() -> set[int]:
    """Processes (zombies included) whose parent is this test process. A thread that ends while
    it is read is skipped: its children, if any, passed to another thread of the process."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            with open(task / "children") as handle:
                pids.update(int(pid) for pid in handle.read().split())
        except FileNotFoundError:
            continue
    return pids


@pytest.fixture
def no_leftover_processes() -> Iterator[None]:
    """Fail the test if it leaves a child process (running or zombie) of this process behind."""
    before = child_pids()
    yield
    assert child_pids() - before == set()


@pytest.fixture
def sandbox_survivors(sandbox_tmp: Path) -> Callable[[], list[int]]:
    """A check: PIDs of processes still running from a sandbox run of this test."""
    return lambda: _processes_mentioning(sandbox_tmp)


def _processes_mentioning(root: Path) -> list[int]:
    """PIDs whose command line carries ``root`` (the sandbox passes its run paths, hex-encoded)."""
    needle = str(root).encode().hex().encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline or str(root).encode() in cmdline:
            found.append(int(entry.name))
    return found


# ------------------------------------------------------------------------------ attack suite


@pytest.fixture(params=sorted(ATTACK_MODES))
def attack_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mode: str = request.param
    if mode == "bwrap-alone" and not _bwrap.available():
        pytest.skip("bubblewrap is not installed or does not work here")
    if mode == "landlock-seccomp" and _isolation.landlock_abi() < 1:
        pytest.skip("the kernel has no Landlock")
    monkeypatch.setattr(sandbox, "_LAYERS", ATTACK_MODES[mode])
    return mode


@pytest.fixture
def planted() -> Iterator[Planted]:
    root = Path(tempfile.mkdtemp(prefix="moscopt-planted-", dir="/tmp"))
    try:
        home, project = root / "home" / "user", root / "home" / "user" / "project"
        (home / ".ssh").mkdir(parents=True)
        project.mkdir()
        secrets = Planted(root, home / ".ssh" / "id_rsa", project / ".env", root / "other.db")
        secrets.ssh_key.write_text(secrets.key_text + "\n")
        secrets.dotenv.write_text(secrets.env_text + "\n")
        (secrets.ssh_key.parent / secrets.file_name).write_text("ssh-ed25519 AAAA\n")
        with contextlib.closing(sqlite3.connect(secrets.database)) as db:
            db.execute("create table secrets (value text)")
            db.execute("insert into secrets values (?)", (secrets.db_text,))
            db.commit()
        for path in [root, *root.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        yield secrets
    finally:
        shutil.rmtree(root, ignore_errors=True)
