"""Fixtures of the export tests: one scripted run trained per module, copied per test."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from export_env import Responder, Trained, question, train_args
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import write_project


@pytest.fixture(scope="module")
def _base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, FakeServer, Responder]]:
    root = tmp_path_factory.mktemp("project")
    seeds = Path(__file__).resolve().parents[2] / "skills"
    write_project(root, seeds)
    # eight validation tasks: the edit that fixes seven of them (the gate's answer for 5 + 5 is
    # unusable) is accepted by the per-task test (six distinct tasks at the least)
    spec = (root / "addition.yaml").read_text()
    (root / "addition.yaml").write_text(spec.replace("val: 6, test: 2", "val: 8, test: 2"))
    rows = [{"id": f"a{i}", "question": question(i), "answer": str(2 * i)} for i in range(1, 17)]
    (root / "addition.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    responder = Responder()
    with pytest.MonkeyPatch.context() as mp, FakeServer(responder=responder) as server:
        home = tmp_path_factory.mktemp("home")
        mp.setenv("HOME", str(home))
        mp.setenv("MOSCOPT_HOME", str(home / ".moscopt"))
        mp.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        mp.setenv("OPENAI_API_KEY", "sk-test")
        mp.chdir(root)
        result = CliRunner().invoke(app, train_args(server.url))
        assert result.exit_code == 0, result.output
        yield root, server, responder


@pytest.fixture
def trained(
    _base: tuple[Path, FakeServer, Responder],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Trained:
    root, server, responder = _base
    name = f"runs/{request.node.name}"
    shutil.copytree(root / "runs/base", root / name, ignore=shutil.ignore_patterns(".lock"))
    # the project's response cache is shared by its runs: each test answers from its own copy
    cache = tmp_path / "cache"
    shutil.copytree(root / ".moscopt/cache", cache)
    monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(cache))
    monkeypatch.chdir(root)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    responder.distill, responder.distill_calls = "good", 0
    return Trained(root, server, responder, Path(name))
