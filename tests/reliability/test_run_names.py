"""Default run names (issue 38, item 5): runs started in the same second in one project each get
their own directory (`-2`, `-3`, ...), claimed atomically, so a shell loop that starts seeds in
parallel loses none."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run import rundir
from moscopt.run.rundir import RunDir, new_run_path
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import train_args

runner = CliRunner()
STAMP = "20260101-120000"


def test_two_trains_in_the_same_second_get_two_runs(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rundir, "_stamp", lambda: STAMP)  # both start in the same second
    args = train_args("URL")
    i = args.index("--run")
    del args[i : i + 2]
    with FakeServer(responder=server_responder) as server:
        url = [server.url if a == "URL" else a for a in args]
        for _ in range(2):
            result = runner.invoke(app, url)
            assert result.exit_code == 0, result.output
    runs = sorted(p.name for p in (project / "runs").iterdir())
    assert runs == [f"addition-{STAMP}", f"addition-{STAMP}-2"]
    for name in runs:
        assert RunDir.open(project / "runs" / name).load_state().status == "done"


def test_parallel_claims_never_share_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rundir, "_stamp", lambda: STAMP)
    paths: list[Path] = []
    start = threading.Barrier(16)

    def claim() -> None:
        start.wait()
        paths.append(new_run_path(tmp_path / "runs", "seed"))

    threads = [threading.Thread(target=claim) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(paths)) == 16 and all(p.is_dir() for p in paths)
    assert (tmp_path / "runs" / f"seed-{STAMP}") in paths
    assert (tmp_path / "runs" / f"seed-{STAMP}").stat().st_mode & 0o777 == 0o700
