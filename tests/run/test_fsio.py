from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moscopt.errors import UserError
from moscopt.run import fsio


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.txt"
    fsio.atomic_write_text(target, "one")
    fsio.atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert os.listdir(target.parent) == ["f.txt"]


def test_interrupted_write_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "state.json"
    fsio.atomic_write_text(target, "old")

    def boom(fd: int) -> None:
        raise OSError("disk died mid-write")

    monkeypatch.setattr(fsio.os, "fsync", boom)
    with pytest.raises(OSError, match="disk died"):
        fsio.atomic_write_text(target, "new" * 1000)
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["state.json"]


_WRITER = """
import sys
from moscopt.run.fsio import atomic_write_bytes
path = sys.argv[1]
i = 0
while True:
    i += 1
    atomic_write_bytes(path, (str(i % 10) * 2_000_000).encode())
"""


def test_sigkill_during_writes_never_leaves_a_torn_file(tmp_path: Path) -> None:
    target = tmp_path / "big.txt"
    target.write_bytes(b"0" * 2_000_000)
    root = Path(__file__).resolve().parents[2]
    for delay in (0.05, 0.11, 0.17, 0.23, 0.31):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(target)],
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        data = target.read_bytes()
        assert len(data) == 2_000_000 and len(set(data)) == 1  # one complete version
    leftovers = [p for p in tmp_path.iterdir() if p.name != "big.txt"]
    for p in leftovers:  # a killed writer may leave its temp file, never a half target
        assert p.name.startswith(".big.txt.") and p.name.endswith(".tmp")


def test_jsonl_skips_torn_tail_and_rejects_middle_corruption(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    fsio.append_line(log, '{"a": 1}')
    with open(log, "a") as f:
        f.write('{"a": 2, "tor')
    assert list(fsio.iter_jsonl(log)) == [{"a": 1}]
    assert fsio.repair_jsonl_tail(log)
    fsio.append_line(log, '{"a": 3}')
    assert list(fsio.iter_jsonl(log)) == [{"a": 1}, {"a": 3}]
    log.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(UserError, match=r"events.jsonl:2: bad JSON line"):
        list(fsio.iter_jsonl(log))


def test_read_text_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="file not found"):
        fsio.read_text(tmp_path / "x")
    with pytest.raises(UserError, match="directory"):
        fsio.read_text(tmp_path)
    p = tmp_path / "crlf.txt"
    p.write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    assert fsio.read_text(p) == "a\nb\n"


@pytest.mark.parametrize(
    ("mask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)]
)
def test_shared_writes_follow_the_umask_even_inside_a_private_folder(
    tmp_path: Path, mask: int, file_mode: int, dir_mode: int
) -> None:
    """Skill files and export trees (`shared=True`) get the umask's modes, as `cp` would give,
    wherever they are; other writes inside a private folder stay private."""
    import stat

    private = tmp_path / "run"
    private.mkdir(mode=0o700)
    old = os.umask(mask)
    try:
        assert fsio.umask() == mask
        fsio.atomic_write_text(private / "skills" / "a" / "SKILL.md", "x", shared=True)
        fsio.atomic_write_text(private / "state.json", "{}")
    finally:
        os.umask(old)

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    assert mode(private / "skills" / "a" / "SKILL.md") == file_mode
    assert mode(private / "skills" / "a") == dir_mode == mode(private / "skills")
    assert mode(private / "state.json") == 0o600
