"""`moscopt ablate --batch`: the configurations' validations and evaluations go through the
provider's batch API, the study's table is the one the same study gives without it, and
nothing is logged about clients closed on a dead loop (a study runs many loops in a process;
litellm's batch calls leave an SDK client each, see `moscopt.lm.litellm_env`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from study_world import common, project, responder
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer

REPO = Path(__file__).resolve().parents[2]


def without_wall_times(table: dict[str, Any]) -> dict[str, Any]:
    rows = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in table["rows"]]
    return {**table, "rows": rows}


def test_a_batched_ablation_gives_the_unbatched_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = project(tmp_path, REPO / "skills")
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.setenv("MOSCOPT_HOME", str(root / "home" / ".moscopt"))
    tables, batches = {}, {}
    with FakeServer(responder=responder, batch_polls=1) as server:
        for name, extra in (("plain", []), ("batched", ["--batch"])):
            args = [
                "ablate", *common(server.url), "--config", str(root / "moscopt.yaml"),
                "--budget-calls", "120", "--seeds", "1", "--only", "reflect-edit",
                "--study", f"studies/{name}", "--no-cache", "--set", "llm.batch_poll=0.01",
                *extra,
            ]  # fmt: skip
            with caplog.at_level(logging.ERROR, logger="asyncio"):
                result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
            assert "Event loop is closed" not in result.output
            tables[name] = json.loads((root / f"studies/{name}/table.json").read_text())
            batches[name] = len(server.batches.created)
    assert batches["plain"] == 0 and batches["batched"] > 0
    assert [r for r in caplog.records if r.name == "asyncio"] == []
    assert without_wall_times(tables["batched"]) == without_wall_times(tables["plain"])
    rows = {r["configuration"]: r for r in tables["batched"]["rows"]}
    assert rows["full"]["accuracy"]["mean"] == 1.0 and rows["reflect-edit"]["accuracy"]["mean"] == 0
