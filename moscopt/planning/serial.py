"""Planning for a model that answers one request at a time (the embedded model).

`llm.concurrency` lets many calls be in flight, but a serial model answers them one after
another: waves of concurrent calls do not overlap, and a call's measured latency is mostly its
wait behind the others. So the plan of such a run takes the model's real concurrency, 1
(`shape_of`), times each call by the seconds the model spent answering it in the pilot (the
queueing taken out: `run.call_timing.one_at_a_time`), and counts every call of every phase one
after another: time = calls x answering time, agent and optimizer alike when both are served
by the same engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from moscopt.run.call_timing import mean_timing, one_at_a_time, serves_one_at_a_time

if TYPE_CHECKING:
    from moscopt.config import Config
    from moscopt.planning import Plan, Role
    from moscopt.planning.model import Part
    from moscopt.run.ledger import LLMCall


def is_serial(config: Config) -> bool:
    """Whether the run's agent model answers one request at a time."""
    return serves_one_at_a_time(config.model)


def real_concurrency(config: Config) -> int:
    """The calls the agent model answers at once: 1 for a serial model, else
    `llm.concurrency`."""
    return 1 if is_serial(config) else config.llm.concurrency


def pilot_answering(
    events: Sequence[LLMCall], rollout_purposes: tuple[str, ...]
) -> dict[str, dict[str, float]]:
    """Per role (`agent`, `optimizer`) served by a serial model in the pilot: the mean seconds
    answering and queued per call. The serial model's calls are timed together (one engine
    serves both roles)."""
    timed = one_at_a_time([e for e in events if serves_one_at_a_time(e.model)])
    out: dict[str, dict[str, float]] = {}
    for role, mine in (
        ("agent", [x for x in timed if x[0].purpose.startswith(rollout_purposes)]),
        ("optimizer", [x for x in timed if not x[0].purpose.startswith(rollout_purposes)]),
    ):
        mean = mean_timing(mine)
        if mean is not None:
            out[role] = {"answering": mean.answering, "queued": mean.queued}
    return out


def answering_roles(
    agent: Role, optimizer: Role, answering: dict[str, dict[str, float]]
) -> tuple[Role, Role]:
    """The roles with the serial model's answering time as their latency (queueing left out)."""
    if "agent" in answering:
        agent = replace(agent, latency=answering["agent"]["answering"])
    if "optimizer" in answering:
        optimizer = replace(optimizer, latency=answering["optimizer"]["answering"])
    return agent, optimizer


def serial_seconds(p: Part, agent: Role, optimizer: Role) -> float | None:
    """A part's time when every call waits for the one before: calls x answering time."""
    if agent.latency is None or optimizer.latency is None:
        return None
    return p.agent * agent.latency + p.optimizer * optimizer.latency


def serial_note(plan: Plan) -> str:
    """What the plan says of a serial model's time."""
    answering: dict[str, Any] = plan.pilot.answering if plan.pilot is not None else {}
    measured = "; ".join(
        f"{role} {a['answering']:.1f} s answering + {a['queued']:.1f} s queued per call"
        for role, a in answering.items()
    )
    return (
        f"{plan.agent.model} answers one request at a time: concurrency 1 whatever "
        "llm.concurrency says, time = calls x the seconds it spends answering one"
        + (f" (pilot: {measured}; queueing is not time of its own)" if measured else "")
    )
