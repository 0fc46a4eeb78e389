"""Section 7 of issue 17: rough edges a user hit, each with a test."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.cli.options import Shared
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder, write_project

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    # the full template (every key at its default, as `moscopt init` writes it)
    template = Path(__file__).resolve().parents[2] / "moscopt/templates/moscopt.yaml"
    write_project(tmp_path, seed_dir, template.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--max-calls", "0"], "--max-calls 0 (field 'llm.max_calls'): "),
        (["--timeout", "0"], "--timeout 0.0 (field 'llm.timeout'): "),
        (["--concurrency", "0"], "--concurrency 0 (field 'llm.concurrency'): "),
        (["--set", "llm.max_retries=-1"], "--set llm.max_retries=-1 (field 'llm.max_retries'): "),
        (["--api-base", "http://u:pw-123456@h/v1"], "--api-base (field 'api_base'): "),
    ],
)
def test_a_bad_flag_is_blamed_on_the_flag_not_on_a_line_of_the_file(
    project: Path, flags: list[str], says: str
) -> None:
    result = runner.invoke(app, ["train", "--benchmark", "addition.yaml", *flags])
    assert result.exit_code == 2
    assert says in result.output and "moscopt.yaml" not in result.output
    assert "pw-123456" not in result.output  # a URL's password is never echoed


def test_timeout_is_a_flag_of_every_command_that_calls_models() -> None:
    assert Shared(timeout=600).overrides() == {"llm.timeout": 600}
    for command in ("train", "eval", "export", "route"):
        assert "--timeout" in runner.invoke(app, [command, "--help"]).output
    export = runner.invoke(app, ["export", "--help"]).output
    assert "--max-tokens" in export and "--model" in export


def test_resume_accepts_the_same_data_file_given_as_a_relative_path(project: Path) -> None:
    with FakeServer(responder=server_responder) as server:
        args = ["--model", "openai/scripted", "--api-base", server.url, "--data", "addition.jsonl"]
        train = [
            "train", "--benchmark", "addition.yaml", *args, "--n", "3", "--k", "2",
            "--epochs", "1", "--steps-per-epoch", "1", "--run", "runs/r", "--no-evolution",
        ]  # fmt: skip
        assert runner.invoke(app, train).exit_code == 0
        again = runner.invoke(app, ["train", "--resume", "--run", "runs/r", *args])
    assert again.exit_code == 2
    assert "already finished" in again.output and "data.path" not in again.output


def test_a_bad_split_is_refused_before_any_data_is_read(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gsm8k has no local data here: reading it would go to the hub (and retry)
    from moscopt.benchmarks import Benchmark

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was read before the split was checked")

    monkeypatch.setattr(Benchmark, "load", no_reading)
    monkeypatch.setattr(Benchmark, "load_every", no_reading)
    result = runner.invoke(
        app, ["eval", "--benchmark", "gsm8k", "--mode", "none", "--split", "dev"]
    )
    assert result.exit_code == 2 and "'dev' is not one of" in result.output
