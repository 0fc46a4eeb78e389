"""The add-ons' parts of the run state: a state of today's format before them (v2, with the
`niches`, `memory` and `router` fields) and older ones load with each part under its add-on's
name, and a part from a newer add-on is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from moscopt.errors import UserError
from moscopt.extensions.memory.params import stored_memory
from moscopt.extensions.niches.records import stored_niches
from moscopt.routing.engine import stored_router
from moscopt.run.migrations import Migration
from moscopt.run.state import SCHEMA_VERSION, RunState, migrate

ROUTER = {"embedding_model": "hashing-256", "boilerplate": [], "model": {"routed": 3}}
NICHES = {"source": "field:family", "routed": {"a>b": 2}, "sessions": 1}
MEMORY = {"rollouts": 5, "write_examples": [[0.5, 1.0]]}


def v2_state(**fields: Any) -> dict[str, Any]:
    return {"schema_version": 2, "benchmark": "offline", "status": "stopped", **fields}


def test_a_v2_state_moves_each_add_on_field_into_its_part() -> None:
    state = RunState.model_validate(migrate(v2_state(niches=NICHES, memory=MEMORY, router=ROUTER)))
    assert state.schema_version == SCHEMA_VERSION
    assert set(state.extensions) == {"niches", "memory", "familiarity"}
    assert all(part.version == 1 for part in state.extensions.values())
    assert stored_router(state) == ROUTER
    niches = stored_niches(state)
    assert niches is not None and niches.routed == {"a>b": 2} and niches.sessions == 1
    memory = stored_memory(state)
    assert memory is not None and memory.rollouts == 5


def test_absent_add_ons_keep_no_part() -> None:
    for data in (v2_state(niches=None, memory=None, router=None), {"schema_version": 1}):
        state = RunState.model_validate(migrate(data))
        assert state.extensions == {}
        assert stored_niches(state) is stored_memory(state) is stored_router(state) is None


def test_a_part_is_upgraded_by_its_own_named_steps() -> None:
    state = RunState()
    state.keep("demo", {"count": 4})
    steps = [Migration("demo v1-to-v2: count becomes total", lambda d: {"total": d["count"]})]
    assert state.part("demo", steps) == {"total": 4}
    assert state.extensions["demo"].data == {"count": 4}  # stored as it was until saved again
    state.keep("demo", {"total": 4}, steps)
    assert state.extensions["demo"].version == 2 and state.part("demo", steps) == {"total": 4}


def test_a_part_newer_than_its_add_on_is_refused_by_name() -> None:
    state = RunState()
    state.keep("demo", {}, [Migration("a", dict), Migration("b", dict)])
    with pytest.raises(UserError, match=r"extensions\.demo\.version 3 is newer"):
        state.part("demo")
