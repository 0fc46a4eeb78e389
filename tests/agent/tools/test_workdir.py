"""The sandbox's run directory: layout, ownership, and removal whatever the code did to it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from moscopt.agent.tools._workdir import remove_tree, run_dirs


def test_layout_and_removal(sandbox_tmp: Path) -> None:
    with run_dirs("print(1)", "in", {"a/b.txt": "x"}, owner=None) as dirs:
        assert dirs.code.read_text() == "print(1)"
        assert dirs.stdin.read_text() == "in"
        assert (dirs.work / "a" / "b.txt").read_text() == "x"
        assert stat.S_IMODE(dirs.code.stat().st_mode) == 0o600
        assert dirs.base.parent == sandbox_tmp
    assert not dirs.base.exists()


def test_ownership_is_given_to_the_sandbox_identity(sandbox_tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    owner = (1_999_999_123, 1_999_999_123)
    with run_dirs("", "", {"f.py": "x"}, owner=owner) as dirs:
        assert (dirs.work.stat().st_uid, dirs.work.stat().st_gid) == owner
        assert (dirs.work / "f.py").stat().st_uid == owner[0]
        assert dirs.code.stat().st_uid == 0  # the code stays private to the launcher
        assert stat.S_IMODE(dirs.base.stat().st_mode) == 0o711
    assert not dirs.base.exists()


def test_removed_even_when_an_error_is_raised(sandbox_tmp: Path) -> None:
    with pytest.raises(RuntimeError), run_dirs("", "", None, owner=None) as dirs:
        raise RuntimeError("boom")
    assert not dirs.base.exists()


def test_remove_tree_handles_unreadable_directories(tmp_path: Path) -> None:
    top = tmp_path / "t"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f").write_text("x")
    os.symlink("/etc", top / "a" / "etc-link")
    for d in (top / "a" / "b", top / "a", top):
        os.chmod(d, 0)
    remove_tree(top)
    assert not top.exists()
    assert Path("/etc").is_dir()  # the symlink's target is untouched
