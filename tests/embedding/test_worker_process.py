"""The model's process never runs the user's program again: a script without a main guard, or a
program read from standard input, gets its vectors and runs once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moscopt.embedding.worker import SentenceEmbedder, loader_name
from moscopt.testing.fake_embedder import hashing_loader

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """\
from pathlib import Path
from moscopt.embedding.worker import SentenceEmbedder
from moscopt.testing.fake_embedder import hashing_loader

with open(Path({runs!r}), "a") as f:  # the program's top level, run once per start
    f.write("ran\\n")
embedder = SentenceEmbedder("fake/model", loader=hashing_loader)
print(len(embedder.encode_many(["one text", "another"])))
embedder.close()
"""


def run_python(args: list[str], program: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, *args], input=program, capture_output=True, text=True, cwd=cwd, env=env
    )


@pytest.mark.parametrize("how", ["script without a main guard", "program on stdin"])
def test_the_users_program_runs_once_and_gets_its_vectors(tmp_path: Path, how: str) -> None:
    runs = tmp_path / "runs.txt"
    program = PROGRAM.format(runs=str(runs))
    if how == "program on stdin":
        done = run_python(["-"], program, tmp_path)
    else:
        (tmp_path / "script.py").write_text(program)
        done = run_python([str(tmp_path / "script.py")], "", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
    assert runs.read_text() == "ran\n"


def test_a_loader_must_be_importable_by_name() -> None:
    assert loader_name(hashing_loader) == "moscopt.testing.fake_embedder:hashing_loader"

    def local(name: str, threads: int | None) -> object:
        return None

    with pytest.raises(ValueError, match="module-level function"):
        SentenceEmbedder("fake/model", loader=local).start()  # type: ignore[arg-type]


def test_the_process_ends_when_its_embedder_closes() -> None:
    embedder = SentenceEmbedder("fake/model", loader=hashing_loader)
    embedder.encode("x")
    process = embedder._process
    assert process is not None and process.poll() is None
    embedder.close()
    assert process.poll() is not None and not embedder.started


def test_the_process_ends_with_its_parent_even_while_the_model_loads(tmp_path: Path) -> None:
    program = (
        "import os\n"
        "from moscopt.embedding.worker import SentenceEmbedder\n"
        "from moscopt.testing.fake_embedder import slow_loader\n"
        "e = SentenceEmbedder('fake/model', loader=slow_loader)\n"
        "e.start()\n"
        "print(e._process.pid, flush=True)\n"
        "os._exit(0)  # no clean-up: as if killed\n"
    )
    done = run_python(["-"], program, tmp_path)
    assert done.returncode == 0, done.stderr
    child = int(done.stdout)
    deadline = time.monotonic() + 20
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(child), "the embedding process outlived its parent"


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
