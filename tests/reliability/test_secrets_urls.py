"""Secrets beyond the API-key variable: credentials in an `api_base` URL are refused (never
frozen into a run, never echoed), the value of any `*_API_KEY` found in a task or a model reply
is masked in what moscopt writes (eval results, events, reports), and run directories are
private to the user (0700 directories, 0600 files).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import common, snapshot, train_args

runner = CliRunner()
PASSWORD = "hunter2-PASSWORD-6a1f"
KEY = "sk-TASKKEY-MARKER-3b9d27"


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{PASSWORD}@127.0.0.1:9/v1",
        f"https://{PASSWORD}@api.example.com/v1",
        f"user:{PASSWORD}@127.0.0.1:9/v1",
    ],
)
def test_api_base_with_credentials_is_refused_and_never_written(project: Path, url: str) -> None:
    before = snapshot(project)
    for command in ("train", "eval"):
        args = (
            train_args(url)
            if command == "train"
            else ["eval", "--benchmark", "addition.yaml", *common(url), "--skills", "skills"]
        )
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, lines
        assert "field 'api_base'" in lines[0] and "user name or password" in lines[0]
        assert PASSWORD not in result.output
    assert snapshot(project) == before


def test_credentials_in_moscopt_yaml_are_refused_naming_the_line(project: Path) -> None:
    config = project / "moscopt.yaml"
    cases = {
        f"api_base: http://me:{PASSWORD}@127.0.0.1:9/v1\n": ":1: field 'api_base'",
        "llm:\n  deployments:\n    - model: openai/a\n"
        f"      api_base: http://me:{PASSWORD}@h/v1\n": "field 'llm.deployments.0.api_base'",
    }
    for text, where in cases.items():
        config.write_text(text)
        result = runner.invoke(app, ["status"])
        assert result.exit_code == 2, result.output
        assert "moscopt.yaml" in result.output and where in result.output, result.output
        assert PASSWORD not in result.output
    config.write_text("api_base: http://127.0.0.1:8000/v1/@latest\n")  # an @ in the path is fine
    assert runner.invoke(app, ["status"]).exit_code == 0


def leaking(root: Path, needle: str) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*"))
        if p.is_file() and needle.encode() in p.read_bytes()
    ]


def test_an_api_key_in_a_task_or_a_reply_is_masked_in_what_moscopt_writes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", KEY)
    rows = [json.loads(line) for line in (project / "addition.jsonl").read_text().splitlines()]
    with open(project / "addition.jsonl", "w") as f:
        for row in rows:  # a task that carries a key (pasted logs, a config dump, ...)
            row["question"] += f" (the service key is {KEY})"
            f.write(json.dumps(row) + "\n")

    def echoing(body: dict[str, Any]) -> str:  # a model that repeats it
        return f"The key {KEY} is not needed.\n" + server_responder(body)

    with FakeServer(responder=echoing) as server:
        steps = [
            train_args(server.url),
            ["eval", "--run", "runs/r1", "--split", "test"],
            ["eval", "--benchmark", "addition.yaml", *common(server.url), "--skills", "skills",
             "--out", "results.jsonl"],
            ["report", "--run", "runs/r1"],
        ]  # fmt: skip
        for args in steps:
            result = runner.invoke(app, args)
            assert result.exit_code == 0, result.output
    evals = sorted((project / "runs/r1/exports").glob("eval-*.jsonl"))
    assert evals and (project / "results.jsonl").is_file()
    assert "***" in evals[0].read_text()
    assert leaking(project / "runs", KEY) == []
    assert KEY not in (project / "results.jsonl").read_text()


def test_run_directories_are_private_but_skills_and_exports_follow_the_umask(
    project: Path,
) -> None:
    """A run's own files stay owner-only; its trained skills and its export trees follow the
    umask (0644/0755 under 022) as `moscopt init`'s do, so a copy of them is readable (issue
    28: they were 0600/0700 whatever the umask)."""
    old_umask = os.umask(0o022)
    try:
        _check_run_modes(project)
    finally:
        os.umask(old_umask)


def _check_run_modes(project: Path) -> None:
    project.chmod(0o755)  # an ordinary project folder
    (project / "runs/r1").mkdir(parents=True, mode=0o755)  # an empty folder is a new run's
    with FakeServer(responder=server_responder) as server:
        for args in (
            train_args(server.url),
            ["eval", "--run", "runs/r1", "--split", "test"],
            ["export", "--mode", "static", "--run", "runs/r1"],
            ["report", "--run", "runs/r1"],
        ):
            result = runner.invoke(app, args)
            assert result.exit_code == 0, result.output
    run = project / "runs/r1"
    modes = {
        str(p.relative_to(project)): stat.S_IMODE(p.stat().st_mode) for p in [run, *run.rglob("*")]
    }
    # exports/seed: the given pool, written by training for the certificate's comparison
    shared = {"runs/r1/skills", "runs/r1/exports/static", "runs/r1/exports/seed"}
    readable = {p for p in modes if any(p == s or p.startswith(s + "/") for s in shared)}
    assert {p for p in readable if p.endswith("/SKILL.md")}, "no skill file was written"
    own = {p: m for p, m in modes.items() if p not in readable}
    loose = {p: oct(m) for p, m in own.items() if m & 0o077}
    assert not loose, loose
    assert {m for p, m in own.items() if (project / p).is_dir()} == {0o700}
    assert {m for p, m in own.items() if (project / p).is_file()} == {0o600}
    assert {m for p in readable if (project / p).is_dir() for m in [modes[p]]} == {0o755}
    assert {m for p in readable if (project / p).is_file() for m in [modes[p]]} == {0o644}
    # outside a run, folders keep the usual mode
    assert stat.S_IMODE((project / "runs").stat().st_mode) == 0o755
