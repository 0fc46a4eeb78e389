"""A training run with transfer stopped at a call (a fatal LM error) and resumed ends with the
pool and the niche state of an uninterrupted run."""

from __future__ import annotations

from typing import Any

import pytest

from moscopt.extensions.niches.records import stored_niches
from moscopt.lm.base import LMRequest
from moscopt.lm.errors import LMUnavailableError
from moscopt.run.ledger_read import read_events
from moscopt.testing import FakeLM


def stopping_at(lm: FakeLM, call: int) -> FakeLM:
    """`lm`'s routes, but call number `call` (0-based) fails fatally."""
    count = [0]

    def wrap(route: Any) -> Any:
        def answer(request: LMRequest) -> str:
            count[0] += 1
            if count[0] - 1 == call:
                raise LMUnavailableError("the endpoint went away")
            return str(route(request))

        return answer

    return FakeLM(routes={k: wrap(v) for k, v in lm.routes.items()})


def comparable(w: Any, state: Any) -> dict[str, Any]:
    """The niche state with log offsets replaced by what they point at (a resumed log may
    hold a line more, such as the notice of the stop)."""
    stored = stored_niches(state)
    assert stored is not None
    ns = stored.model_dump()

    def at(offset: int) -> tuple[str, int, float]:
        (e,) = w.run.events.read_at([offset])
        return (e.task_id, e.epoch, e.reward)

    ns["successes"] = {k: [at(o) for o in v] for k, v in ns["successes"].items()}
    ns["last"] = {k: (v["reward"], at(v["offset"])) for k, v in ns["last"].items()}
    return dict(ns)


def test_stopped_anywhere_then_resumed_gives_the_uninterrupted_result(world_run: Any) -> None:
    ref = world_run(transfer=True, **{"training.epochs": 2})
    ref_state = ref.train().state
    purposes = ref.lm.purposes
    points = [
        purposes.index("codream-contrast"),  # inside a session
        purposes.index("codream-distill") + 1,  # right after the first routing
        max(i for i, p in enumerate(purposes) if p == "propose-skill"),  # a late proposal
        len(purposes) - 3,
    ]
    for point in points:
        w = world_run(transfer=True, **{"training.epochs": 2})
        w.lm = stopping_at(w.lm, point)
        with pytest.raises(LMUnavailableError):
            w.train()
        w.lm = FakeLM(routes=w.world.routes())
        state = w.train().state
        assert state.pool_digest == ref_state.pool_digest, point
        assert comparable(w, state) == comparable(ref, ref_state), point
        kinds = [e.outcome for e in read_events(w.run.events.path, kinds={"transfer"})]
        assert kinds == [e.outcome for e in read_events(ref.run.events.path, kinds={"transfer"})], (
            point
        )
