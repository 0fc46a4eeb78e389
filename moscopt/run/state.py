"""`RunState`: the versioned machine state of a run (`state.json`).

Statistics live here, never in SKILL.md, so a diff of a skill shows only text changes. The file
carries `schema_version`; older files are upgraded by the ordered, named migrations in
`MIGRATIONS` (each takes the JSON of version v and returns version v + 1).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from moscopt.extensions.memory.params import MemoryState
from moscopt.extensions.niches.records import NicheState

Migration = tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Drop the unused `rng_state` and `extra`; a v1 cursor has no rollout index (the trainer
    rebuilds it once from the log); skill-editing steps were not counted apart from gate steps."""
    data.pop("rng_state", None)
    data.pop("extra", None)
    cursor = dict(data.get("cursor") or {})
    cursor["indexed"] = False
    data["cursor"] = cursor
    data.setdefault("skill_steps", None)
    return data


# MIGRATIONS[i] upgrades schema version i + 1 to i + 2. Append only; never edit a shipped one.
MIGRATIONS: list[Migration] = [("v1-to-v2: typed ledger, rollout index", _v1_to_v2)]
SCHEMA_VERSION = len(MIGRATIONS) + 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RejectionRecord(_Record):
    """One rejected edit, as shown to the next proposal (EditAdam's rejection buffer)."""

    step: int
    score_before: float
    score_after: float
    summary: str = Field(max_length=200)
    failure_patterns: list[str] = Field(default_factory=list)


class OptimizerState(_Record):
    """EditAdam's textual state for one skill or the gate."""

    step_buffer: list[str] = Field(default_factory=list)  # epoch-local failure analyses
    rejection_buffer: list[RejectionRecord] = Field(default_factory=list)  # epoch-local FIFO
    long_term_memory: list[str] = Field(default_factory=list)  # durable lessons across epochs
    accepted: int = 0
    rejected: int = 0


class Totals(_Record):
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class ScorePoint(_Record):
    epoch: int
    step: int
    phase: str
    score: float


class Cursor(_Record):
    """Where the trainer is: work before this point is done and saved."""

    epoch: int = 0
    phase: Literal["skills", "gate", "evolve", "memory", "done"] = "skills"
    batch: int = 0  # minibatches of the phase completed
    target: int = 0  # edit targets of the current minibatch already decided
    credited: bool = False  # the current minibatch's rollouts are logged and credited
    batch_start: str | None = None  # checkpoint of the pool the minibatch was rolled out with
    # Byte offsets in events.jsonl of this epoch's rollout events, and how many of them belong
    # to the current minibatch (the last ones): what reflection and gate editing read back.
    rollouts: list[int] = Field(default_factory=list)
    batch_rollouts: int = 0
    indexed: bool = True  # False: a run from before the index; rebuilt from the log on resume
    # The gate's view of the statistics, frozen per phase so that validation scores compare.
    val_q: dict[str, float] = Field(default_factory=dict)
    val_activations: dict[str, int] = Field(default_factory=dict)
    best_val: float | None = None  # validation score of the current pool under that view


class RunState(_Record):
    schema_version: int = SCHEMA_VERSION
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    benchmark: str | None = None
    status: Literal["new", "running", "stopped", "failed", "done"] = "new"
    epoch: int = 0
    step: int = 0  # skill-editing minibatches and gate-editing steps done
    # skill-editing steps done (what edit-budget schedules count); None: a v1 run, derived
    # from the step and the epoch on resume
    skill_steps: int | None = 0
    phase: str = "init"
    q: dict[str, float] = Field(default_factory=dict)
    activations: dict[str, int] = Field(default_factory=dict)
    # C(i, j) for i < j, keyed "i|j" (skill names never contain '|').
    synergy: dict[str, int] = Field(default_factory=dict)
    optimizers: dict[str, OptimizerState] = Field(default_factory=dict)
    # Every skill name ever used in this run: new skills get fresh slugs, never a reused one.
    names_used: list[str] = Field(default_factory=list)
    splits: dict[str, list[str]] = Field(default_factory=dict)
    totals: Totals = Field(default_factory=Totals)
    val_history: list[ScorePoint] = Field(default_factory=list)
    checkpoint: str | None = None  # file name under checkpoints/ holding the current pool
    pool_digest: str | None = None
    cursor: Cursor = Field(default_factory=Cursor)
    events_bytes: int = 0  # size of events.jsonl at the last save: later lines are redone work
    events_sha256: str | None = None  # of those bytes (None: a run saved before it was kept)
    last_good_gate: dict[str, Any] | None = None  # gate restored after repeated parse failures
    gate_failure_rates: list[float] = Field(default_factory=list)
    epoch_accepted: dict[str, list[str]] = Field(default_factory=dict)  # summaries, per target
    niches: NicheState | None = None  # niches, competence and transfer (None: niches off)
    # the execution memory's gates and the halting controller, fitted from rollouts
    # (moscopt.extensions.memory; None: not fitted)
    memory: MemoryState | None = None
    # the familiarity router's heads, counts and buffer (moscopt.routing.engine; None: not used)
    router: dict[str, Any] | None = None

    def accepted_edits(self) -> int:
        return sum(o.accepted for o in self.optimizers.values())

    def rejected_edits(self) -> int:
        return sum(o.rejected for o in self.optimizers.values())


def synergy_key(a: str, b: str) -> str:
    lo, hi = sorted((a, b))
    return f"{lo}|{hi}"


class SchemaTooNew(Exception):
    def __init__(self, found: int) -> None:
        super().__init__(
            f"schema_version {found} is newer than this moscopt understands ({SCHEMA_VERSION}); "
            "upgrade moscopt"
        )
        self.found = found


def migrate(data: dict[str, Any], migrations: list[Migration] | None = None) -> dict[str, Any]:
    """Apply the named migrations that take `data` to the current schema version."""
    migrations = MIGRATIONS if migrations is None else migrations
    current = len(migrations) + 1
    version = int(data.get("schema_version", 1))
    if version > current:
        raise SchemaTooNew(version)
    while version < current:
        _name, step = migrations[version - 1]
        data = step(dict(data))
        version += 1
        data["schema_version"] = version
    return data
