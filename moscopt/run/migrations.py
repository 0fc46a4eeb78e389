"""The one migration path of a run's machine state: ordered, named steps.

Each `Migration` takes the JSON of schema version v to v + 1 (`data`, applied when the state is
read, pure). What only the run itself can tell — its event log, the number of minibatches of an
epoch — is the step's `resume` part: the trainer calls `finish` when it resumes a run, and each
such part acts once, on the marker its `data` part left (it is a no-op on a run without it).

The same steps, with their own list and version, upgrade an add-on's part of the state
(`RunState.extensions`; see `moscopt.optimizer.engine.extension`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from moscopt.run.state import RunState


@dataclass(frozen=True)
class RunFacts:
    """What a `resume` part may read: the run's event log and the shape of its epochs."""

    events_path: Path
    batches_per_epoch: int


class Migration(NamedTuple):
    name: str
    data: Callable[[dict[str, Any]], dict[str, Any]]
    resume: Callable[[RunState, RunFacts], None] | None = None


class SchemaTooNew(Exception):
    def __init__(self, found: int, current: int, what: str = "schema_version") -> None:
        super().__init__(
            f"{what} {found} is newer than this moscopt understands ({current}); upgrade moscopt"
        )
        self.found = found
        self.what = what


def upgraded(
    data: dict[str, Any], version: int, migrations: Sequence[Migration], what: str
) -> dict[str, Any]:
    """`data` of schema `version` taken by the named steps to the current version
    (`len(migrations) + 1`); `SchemaTooNew` (naming `what`) for a version from the future."""
    current = len(migrations) + 1
    if version > current:
        raise SchemaTooNew(version, current, what)
    for step in migrations[version - 1 :]:
        data = step.data(dict(data))
    return data


def finish(state: RunState, facts: RunFacts, migrations: Sequence[Migration]) -> None:
    """Complete every step's `resume` part on `state` (each acts only on its own marker)."""
    for step in migrations:
        if step.resume is not None:
            step.resume(state, facts)
