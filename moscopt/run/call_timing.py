"""Queueing apart from answering, for a model that answers one request at a time.

A call's logged `latency` runs from the moment it asked for a slot to its answer, so it holds
the time it waited: for a free slot of `llm.concurrency`, and for a serial model (the embedded
one: one engine per process, its calls served one after another on one worker thread) for the
calls ahead of it. For such a model the wait can be told apart exactly from the ledger: a call
that ended at `end` after `latency` seconds asked at `end - latency`, and the model was busy
with the previous call until that call's end, so it answered this one from
`max(asked, previous end)` to `end`; the rest is queueing (`one_at_a_time`). For a model that
serves many requests at once the split is not in the ledger: its latency is shown as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moscopt.run.ledger import LLMCall


def serves_one_at_a_time(model: str) -> bool:
    """Whether `model` answers one request at a time whatever `llm.concurrency` says: the
    embedded model (`local/...`)."""
    from moscopt.lm.local import is_embedded

    return is_embedded(model)


@dataclass(frozen=True)
class Timing:
    """Seconds of one call made: `answering` (the model at work on it) and `queued`."""

    answering: float
    queued: float


def one_at_a_time(calls: Sequence[LLMCall]) -> list[tuple[LLMCall, Timing]]:
    """Each call made (cache hits are not calls), in the order they ended, with the time the
    serial model spent answering it and the time it waited (see the module docstring). A call
    whose time stamp does not read is left out."""
    ended: list[tuple[datetime, int, LLMCall]] = []
    for i, c in enumerate(calls):
        if c.cache_hit:
            continue
        try:
            ended.append((datetime.fromisoformat(c.t), i, c))
        except ValueError:
            continue
    ended.sort(key=lambda x: (x[0], x[1]))
    out: list[tuple[LLMCall, Timing]] = []
    previous: datetime | None = None
    for end, _, call in ended:
        latency = max(0.0, call.latency)
        free_for = (end - previous).total_seconds() if previous is not None else latency
        answering = min(latency, max(0.0, free_for))
        out.append((call, Timing(answering, latency - answering)))
        previous = end
    return out


def mean_timing(timed: Sequence[tuple[LLMCall, Timing]]) -> Timing | None:
    """The mean answering and queueing seconds of `timed` (None: empty)."""
    if not timed:
        return None
    n = len(timed)
    return Timing(sum(t.answering for _, t in timed) / n, sum(t.queued for _, t in timed) / n)


def queueing_words(made: Sequence[LLMCall]) -> str | None:
    """For the calls made by a model that answers one request at a time: the mean latency split
    into answering and queueing, in words (None: no such call)."""
    models = {m for m in {c.model for c in made} if serves_one_at_a_time(m)}  # once per model
    serial = [c for c in made if not c.cache_hit and c.model in models]
    mean = mean_timing(one_at_a_time(serial))
    if mean is None:
        return None
    return (
        f"{serial[0].model} answers one request at a time: per call {mean.answering:.2f} s "
        f"answering + {mean.queued:.2f} s queued behind other calls ({len(serial)} calls)"
    )
