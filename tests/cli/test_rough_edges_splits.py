"""Issue 17, section 7: split sizes never shrink silently; `--split all` is every row."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.benchmarks import get_benchmark
from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import ADDITION_SPEC, server_responder

runner = CliRunner()
ROWS = 14  # the addition.jsonl of write_project


def test_a_small_data_file_says_in_one_line_what_was_asked_and_what_it_got(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = project / "big.yaml"
    spec.write_text(
        ADDITION_SPEC.replace("train: 6, val: 6, test: 2", "train: 20, val: 4, test: 4")
    )
    with caplog.at_level(logging.WARNING, logger="moscopt.benchmarks"):
        splits = get_benchmark(str(spec)).load(data=project / "addition.jsonl")
    got = splits.sizes()
    assert sum(got.values()) == ROWS
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "\n" not in warned[0]
    shown = f"{got['train']}/{got['val']}/{got['test']}"
    assert "only 14 tasks for train/val/test 20/4/4" in warned[0] and f"are {shown}" in warned[0]


def test_data_that_fits_says_nothing(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="moscopt.benchmarks"):
        splits = get_benchmark(str(project / "addition.yaml")).load(data=project / "addition.jsonl")
    assert splits.sizes() == {"train": 6, "val": 6, "test": 2} and not caplog.records


def eval_json(*extra: str) -> dict[str, object]:
    with FakeServer(responder=server_responder) as server:
        args = ["eval", "--benchmark", "small.yaml", "--data", "addition.jsonl", "--json"]
        result = runner.invoke(
            app, [*args, "--model", "openai/x", "--api-base", server.url, *extra]
        )
    assert result.exit_code == 0, result.output
    summary: dict[str, object] = json.loads(result.output)
    return summary


def test_split_all_evaluates_every_row_of_the_data_not_the_union_of_the_splits(
    project: Path,
) -> None:
    # splits of 3 + 2 + 1 tasks out of 14 rows: "all" once meant those 6
    (project / "small.yaml").write_text(
        ADDITION_SPEC.replace("train: 6, val: 6, test: 2", "train: 3, val: 2, test: 1")
    )
    every = eval_json("--split", "all")
    assert every["tasks"] == ROWS and every["split"] == "all"
    assert eval_json("--split", "all", "--limit", "5")["tasks"] == 5
    assert eval_json("--split", "test")["tasks"] == 1


def test_split_sizes_and_seed_set_on_the_command_line(project: Path) -> None:
    (project / "small.yaml").write_text(
        ADDITION_SPEC.replace("train: 6, val: 6, test: 2", "train: 3, val: 2, test: 1")
    )
    sized = ["--set", "data.split_sizes={train: 2, val: 2, test: 9}"]
    assert eval_json(*sized)["tasks"] == 9
    ids = [
        sorted(t.id for t in get_benchmark(str(project / "small.yaml")).load(
            data=project / "addition.jsonl", seed=seed)["test"])
        for seed in (1, 2)
    ]  # fmt: skip
    assert ids[0] != ids[1]  # the seed changes which rows a split gets
    assert eval_json(*sized, "--set", "data.split_seed=1")["tasks"] == 9
    bad = runner.invoke(
        app, ["eval", "--benchmark", "small.yaml", "--set", "data.split_sizes={tests: 3}"]
    )
    assert bad.exit_code == 2 and "data.split_sizes" in bad.output
