"""`RunState`: the versioned machine state of a run (`state.json`).

Statistics live here, never in SKILL.md, so a diff of a skill shows only text changes. The file
carries `schema_version`; older files are upgraded by the ordered, named steps in `MIGRATIONS`
(`moscopt.run.migrations`: the one migration path). Each add-on keeps its own part in
`extensions`, under its name, with its own version and migrations: this module knows none of
their fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from moscopt.errors import UserError
from moscopt.run.migrations import Migration as Migration
from moscopt.run.migrations import RunFacts as RunFacts
from moscopt.run.migrations import SchemaTooNew as SchemaTooNew
from moscopt.run.migrations import finish, upgraded


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Drop the unused `rng_state` and `extra`; a v1 cursor has no rollout index (marked, for
    `_index_v1` to rebuild from the log); skill-editing steps were not counted apart from gate
    steps (None, for `_index_v1` to derive)."""
    data.pop("rng_state", None)
    data.pop("extra", None)
    cursor = dict(data.get("cursor") or {})
    cursor["indexed"] = False
    data["cursor"] = cursor
    data.setdefault("skill_steps", None)
    return data


def _index_v1(state: RunState, facts: RunFacts) -> None:
    """A run saved before the rollout index (state v1): count its skill-editing steps, and index
    this epoch's rollouts once from the log."""
    from moscopt.run.ledger import RolloutEvent

    cursor = state.cursor
    if state.skill_steps is None:
        done = state.epoch * facts.batches_per_epoch
        state.skill_steps = done + (cursor.batch if cursor.phase == "skills" else 0)
    if cursor.indexed:
        return
    offsets, current = [], 0
    with open(facts.events_path, "rb") as f:
        offset = 0
        for line in f:
            if b'"type": "rollout"' in line[:200]:
                event = RolloutEvent.model_validate_json(line)
                if event.epoch == state.epoch:
                    offsets.append(offset)
                    current += event.batch == cursor.batch
            offset += len(line)
    cursor.rollouts = offsets
    cursor.batch_rollouts = current if cursor.credited else 0
    cursor.indexed = True


# The add-ons' fields of state v2, and the names they keep their parts under since v3.
_V2_ADD_ONS = {"niches": "niches", "memory": "memory", "router": "familiarity"}


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """The add-ons' top-level fields move to `extensions`, each as its part's version 1."""
    parts = dict(data.get("extensions") or {})
    for field, name in _V2_ADD_ONS.items():
        value = data.pop(field, None)
        if value is not None:
            parts[name] = {"version": 1, "data": value}
    data["extensions"] = parts
    return data


# MIGRATIONS[i] upgrades schema version i + 1 to i + 2. Append only; never edit a shipped one.
MIGRATIONS: list[Migration] = [
    Migration("v1-to-v2: typed ledger, rollout index", _v1_to_v2, _index_v1),
    Migration("v2-to-v3: each add-on's state in its own part", _v2_to_v3),
]
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
    calls: int = 0  # requests sent to a model (a cache hit is not one)
    cache_hits: int = 0  # requests answered from the response cache, on top of `calls`
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


def calls_words(calls: int, cache_hits: int) -> str:
    """`40 calls + 22 answered from the cache`: cache hits are not among the calls (a run's
    ledger has one `llm_call` line for each of both), and the words cannot be read otherwise."""
    if not cache_hits:
        return f"{calls} calls"
    return f"{calls} calls + {cache_hits} answered from the cache"


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
    # looks the adopted pools have decided on: a decision's look s is look val_base + s, so an
    # adopted pool is measured as incumbent on looks it did not win on (`Validator.adopt`)
    val_base: int = 0


class AddOnState(_Record):
    """An add-on's part of the run state: its JSON, at its own schema version."""

    version: int = 1
    data: dict[str, Any] = Field(default_factory=dict)


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
    # each add-on's part, under its name (`Extension.name`): only the add-on reads it
    extensions: dict[str, AddOnState] = Field(default_factory=dict)

    def accepted_edits(self) -> int:
        return sum(o.accepted for o in self.optimizers.values())

    def rejected_edits(self) -> int:
        return sum(o.rejected for o in self.optimizers.values())

    def part(self, name: str, migrations: Sequence[Migration] = ()) -> dict[str, Any] | None:
        """The add-on `name`'s part, upgraded by its `migrations` (None: it kept none)."""
        stored = self.extensions.get(name)
        if stored is None:
            return None
        what = f"extensions.{name}.version"
        try:
            return upgraded(dict(stored.data), stored.version, migrations, what)
        except SchemaTooNew as e:
            raise UserError(str(e), field=what) from None

    def keep(self, name: str, data: dict[str, Any], migrations: Sequence[Migration] = ()) -> None:
        """Store `data` as the add-on `name`'s part, at its current version."""
        self.extensions[name] = AddOnState(version=len(migrations) + 1, data=data)


def synergy_key(a: str, b: str) -> str:
    lo, hi = sorted((a, b))
    return f"{lo}|{hi}"


def migrate(data: dict[str, Any], migrations: Sequence[Migration] | None = None) -> dict[str, Any]:
    """Apply the named migrations that take `data` to the current schema version."""
    migrations = MIGRATIONS if migrations is None else migrations
    version = int(data.get("schema_version", 1))
    data = upgraded(data, version, migrations, "schema_version")
    data["schema_version"] = len(migrations) + 1
    return data


def finish_migrations(state: RunState, facts: RunFacts) -> None:
    """What the named steps leave for the run itself to finish on resume (`migrations.finish`)."""
    finish(state, facts, MIGRATIONS)
