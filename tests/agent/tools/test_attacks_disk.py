"""The attack suite, part 3 (issue 38, item 6): model code fills the disk. Each file is capped by
RLIMIT_FSIZE (64 MiB), so it writes many: large files, or a flood of empty ones. The work dir's
total is bounded (`_workdir.DISK_LIMIT`, measured every 50 ms by the watcher, on every machine):
the run is killed with ``killed_reason="disk-limit"`` and its work dir removed.

Same modes as parts 1 and 2 (`ATTACK_MODES`), as root and (in CI) as nobody.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from attack_helpers import observe

from moscopt.agent.tools import _workdir
from moscopt.agent.tools.sandbox import run_python

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

BIG_FILES = """\
block = b"x" * (1 << 20)
for i in range(10_000):
    with open(f"f{i}", "wb") as f:
        for _ in range(32):
            f.write(block)
print("wrote them all")
"""
EMPTY_FILES = """\
import os
for d in range(1000):
    os.mkdir(f"d{d}")
    for i in range(1000):
        os.close(os.open(f"d{d}/{i}", os.O_CREAT | os.O_WRONLY, 0o600))
print("made them all")
"""

# enter and write, but not list: the watcher cannot count what the directory holds
HIDDEN_FILES = 'import os\nos.mkdir("h")\nos.chmod("h", 0o300)\nos.chdir("h")\n' + BIG_FILES


@pytest.mark.parametrize(
    "code", [BIG_FILES, EMPTY_FILES, HIDDEN_FILES], ids=["big-files", "empty-files", "hidden"]
)
def test_a_disk_flood_is_stopped_at_the_bound(
    attack_mode: str, sandbox_tmp: Path, code: str
) -> None:
    result = run_python(code, timeout=120.0)
    assert result.killed_reason == "disk-limit", (result.killed_reason, result.stderr[-300:])
    assert "all" not in result.stdout
    assert list(sandbox_tmp.iterdir()) == []  # the work dir is gone with what it held


def test_the_model_sees_the_disk_limit(attack_mode: str) -> None:
    assert "[error: disk-limit]" in observe(BIG_FILES, timeout=60.0)


def test_writing_below_the_bound_is_fine(attack_mode: str) -> None:
    code = 'open("a", "wb").write(b"x" * (8 << 20))\nprint(len(open("a", "rb").read()))'
    result = run_python(code, timeout=30.0)
    assert result.ok and result.stdout.strip() == str(8 << 20), result.stderr[-300:]


def test_disk_usage_counts_blocks_and_entries(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_bytes(b"x" * 100_000)
    for i in range(10):
        (tmp_path / f"e{i}").touch()
    used = _workdir.disk_usage(tmp_path, 1 << 30)
    assert used is not None and used >= 100_000 + 11 * _workdir.ENTRY_BYTES
    assert (_workdir.disk_usage(tmp_path, 1000) or 0) > 1000  # counting stops past the bound
