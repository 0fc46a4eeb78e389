"""A run whose state file is in the format before the add-ons owned their parts (state v2: the
familiarity router's heads in a top-level `router` field) resumes from it to the same end as a
run never interrupted. The v2 file is written by the test from the crashed run's own state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from moscopt.routing.engine import stored_router
from moscopt.run.ledger_read import read_events
from moscopt.testing import FakeLM
from moscopt.testing.fake_lm import Crash, crash_on_call
from moscopt.testing.router_world import make_router_run, trainer_routes
from moscopt.testing.scripted import train_run

# the v2 fields the add-ons kept, by the names their parts have now
V2_FIELDS = {"niches": "niches", "memory": "memory", "familiarity": "router"}


def as_v2(path: Path) -> dict[str, Any]:
    """Rewrite `state.json` at `path` in the v2 format; the v2 JSON."""
    data = json.loads(path.read_text())
    parts = data.pop("extensions")
    for name, field in V2_FIELDS.items():
        part = parts.pop(name, None)
        data[field] = part["data"] if part is not None else None
    assert not parts
    data["schema_version"] = 2
    path.write_text(json.dumps(data, indent=2))
    return data


@pytest.mark.parametrize("crash_at", [23])
def test_a_v2_state_resumes_to_the_heads_of_an_uninterrupted_run(
    tmp_path: Path, seed_dir: Path, crash_at: int
) -> None:
    ref, config, bench, sp, seeds, world = make_router_run(tmp_path / "ref", seed_dir)
    train_run(ref, config, bench, sp, seeds, FakeLM(routes=trainer_routes(world)))
    reference = stored_router(ref.load_state())
    assert reference is not None

    run, config, bench, sp, seeds, world = make_router_run(tmp_path / "crash", seed_dir)
    crashing = crash_on_call(crash_at, world.respond)

    with pytest.raises(Crash):
        crash_lm = FakeLM(routes={**trainer_routes(world), "agent": crashing})
        train_run(run, config, bench, sp, seeds, crash_lm)
    old = as_v2(run.state_path)
    assert old["router"] is not None  # the crash came after the heads learned and were saved

    resumed = train_run(run, config, bench, sp, seeds, FakeLM(routes=trainer_routes(world)))
    assert resumed.state.status == "done"
    state = run.load_state()
    assert "router" not in json.loads(run.state_path.read_text())
    assert stored_router(state) == reference
    assert len(read_events(run.events.path, kinds={"rollout"})) == len(
        read_events(ref.events.path, kinds={"rollout"})
    )
