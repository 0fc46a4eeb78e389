"""The one vocabulary of edit decisions, and their counts, for every place that shows them.

An edit proposal ends one of four ways, as its `edit` event in the ledger says: `accepted` (the
candidate won its validation), `rejected` (it lost), `unusable` (no candidate: the proposal could
not be parsed or used) or `not_applied` (its edits matched nothing, so there was nothing to
validate). `moscopt train`'s live display and last lines, `moscopt status` (summary and
breakdown) and the report all count these, from the ledger, with these words.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

OUTCOMES = ("accepted", "rejected", "unusable", "not_applied")


def count_outcomes(statuses: Iterable[str]) -> dict[str, int]:
    """How many of each outcome (every outcome present, zero if none)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return counts


def outcome_counts(edits: Iterable[Any]) -> dict[str, int]:
    """The counts of logged `edit` events (anything with a `status`)."""
    return count_outcomes(e.status for e in edits)


def outcome_word(status: str) -> str:
    """One outcome as a user reads it: `not_applied` -> `not applied`."""
    return status.replace("_", " ")


def outcome_words(counts: dict[str, int], *, always: tuple[str, ...] = OUTCOMES) -> str:
    """`1 accepted, 2 rejected, 1 unusable, 0 not applied`; outcomes outside `always` are left
    out when zero."""
    parts = [
        f"{counts.get(name, 0)} {outcome_word(name)}"
        for name in OUTCOMES
        if counts.get(name, 0) or name in always
    ]
    return ", ".join(parts)
