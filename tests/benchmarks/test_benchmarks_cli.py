from __future__ import annotations

import json

from typer.testing import CliRunner

from moscopt.cli import app


def test_benchmarks_command_lists_every_spec() -> None:
    result = CliRunner().invoke(app, ["benchmarks"])
    assert result.exit_code == 0, result.output
    for name in ("aime", "gpqa-diamond", "offline"):
        assert name in result.output
    assert "generated (no download)" in result.output
    assert "openai/gsm8k@740312a" in result.output


def test_benchmarks_json() -> None:
    result = CliRunner().invoke(app, ["benchmarks", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)
    by_name = {r["name"]: r for r in rows}
    assert by_name["aime"]["splits"] == {"train": 50, "val": 10, "test": 30}
    assert by_name["gpqa-diamond"]["local_files"] == ["gpqa/gpqa_diamond.zip"]
    assert by_name["offline"]["generated"] is True
