"""What `status` and the report show of a familiarity-routed run: the specialization index of
its activations over the niches, the calibration of the fitted execution memory, and the
insight-transfer channels."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from moscopt.app.workspace import make_trainer
from moscopt.cli import app
from moscopt.extensions.memory.halting import HALTING_FEATURES
from moscopt.extensions.memory.params import NAME as memory_part
from moscopt.extensions.memory.params import MemoryState, ModelParams
from moscopt.extensions.niches.records import NAME as niches_part
from moscopt.extensions.niches.records import NicheState
from moscopt.report.page import write_report
from moscopt.report.summary import run_summary
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.router_world import make_router_run, trainer_routes


def test_status_and_report_show_specialization_memory_and_channels(
    tmp_path: Path, seed_dir: Path
) -> None:
    run, config, bench, sp, seeds, world = make_router_run(tmp_path, seed_dir)
    lm = FakeLM(routes=trainer_routes(world))
    trainer = make_trainer(
        run=RunDir.open(run.path), config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    asyncio.run(trainer.train())
    state = run.load_state()
    halting = ModelParams(
        features=list(HALTING_FEATURES),
        weights=[0.0] * len(HALTING_FEATURES),
        bias=0.5,
        examples=40,
        base_rate=0.6,
        brier=0.21,
        ece=0.04,
        accuracy=0.7,
    )
    state.keep(memory_part, MemoryState(halting=halting, rollouts=12).model_dump(mode="json"))
    names = run.load_pool(state).names
    giver, recipient = names[0], names[1]
    niches = NicheState(source="field:family", routed={f"{giver}>{recipient}": 2})
    state.keep(niches_part, niches.model_dump(mode="json"))
    run.save(state)

    data = run_summary(RunDir.open(run.path))
    spec = data["specialization"]
    assert spec["index"] is not None and 0.0 <= spec["index"] <= 1.0
    assert set(spec["niches"]) == set(world.families)  # the offline families are the niches
    assert data["memory"][2].startswith("halting: 40 examples, base rate 0.60, Brier 0.210")
    assert data["memory"][0] == "write: not fitted (untrained rule)"

    result = CliRunner().invoke(app, ["status", "--run", str(run.path)])
    assert result.exit_code == 0, result.output
    assert f"specialization index {spec['index']:.3f}" in result.output
    assert "execution memory:" in result.output and "ECE 0.040" in result.output
    assert f"{giver} -> {recipient}: 2 routed, 0 adopted" in result.output

    report = write_report(RunDir.open(run.path), now=datetime(2026, 1, 1, tzinfo=UTC))
    page = report.path.read_text()
    assert "## Specialization of the familiarity router" in page
    assert f"Specialization index {spec['index']:.3f}" in page
    assert "## Execution memory: calibration" in page and "| halting | 40 | 0.60 |" in page
    assert "## Insight transfer channels" in page
    assert f"| {giver} | {recipient} | 2 | 0 |" in page
