"""The run's ledger: typed events in `events.jsonl`, written and read through this module only.

Each line is one event, a pydantic model with a `type` discriminator and `extra="forbid"`. Events
that change the pool (`train_start`, accepted `edit`, accepted `evolution`, `gate_restored`)
name the checkpoint they produced, so replaying a run's pools is a lookup. Fields added after the
first release have defaults, so logs written by older versions still validate.

The log is append-only. `EventLog.append` returns the byte offset of the line it wrote, which the
trainer keeps in its cursor to read back the rollouts a step reflects on (`read_at`) without
scanning the log; `read_events` reads the saved prefix (up to `RunState.events_bytes`) for the
inspection commands, skipping the bulky line types a reader did not ask for without parsing them.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from moscopt.errors import UserError
from moscopt.run.fsio import append_line, repair_jsonl_tail


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class BaseEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    t: str = Field(default_factory=_now)


class _Where(BaseEvent):
    """Where in the run an event happened."""

    epoch: int = 0
    step: int = 0
    phase: str = ""


class Decision(BaseModel):
    """How an acceptance policy decided: the evidence behind a verdict."""

    model_config = ConfigDict(extra="forbid")

    policy: str
    samples: int  # sample indices evaluated
    n: int  # paired observations
    mean_diff: float  # candidate - incumbent
    low: float
    high: float
    reason: str


class TrainStart(BaseEvent):
    type: Literal["train_start"] = "train_start"
    pool: str  # digest[:12] of the initial pool
    n: int
    checkpoint: str | None = None  # None: written before checkpoints were named in events


class Validation(_Where):
    type: Literal["validation"] = "validation"
    pool: str
    score: float
    tasks: int
    fallbacks: int = 0
    sample: int = 0


class RolloutEvent(_Where):
    type: Literal["rollout"] = "rollout"
    batch: int
    task_id: str
    skills: list[str]
    activation: str = ""
    gate_error: str | None = None
    reward: float
    answer: str | None = None
    response: str = ""
    error: str | None = None
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    # step-level gating: every selection made during the rollout (the first is `skills`)
    selections: list[list[str]] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)  # how each selection was made
    # the skills the gate chose from, when not the whole pool (the hybrid router's shortlist)
    offered: list[str] = Field(default_factory=list)
    # halting (`memory.halting`): the step (from 0) where it stopped a run that would have gone
    # on, and the steps the budget still allowed then (the agent calls saved, at most)
    halted_at: int | None = None
    steps_left: int = 0
    # the grader's word on the reply (a task file's judge: which checks or criteria it missed)
    detail: str = ""


class LLMCall(BaseEvent):
    type: Literal["llm_call"] = "llm_call"
    model: str
    purpose: str
    sample: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    saving: float = 0.0  # USD the provider's prompt cache saved on this call
    latency: float = 0.0
    cache_hit: bool = False
    retries: int = 0
    ok: bool = True
    error: str | None = None
    status: int | None = None
    deployment: str | None = None
    # where the trainer was; None in logs written before calls carried it
    epoch: int | None = None
    step: int | None = None
    phase: str | None = None


class DeploymentEvent(BaseEvent):
    """A deployment behind the Router went down (past `routing.allowed_fails` failures in a
    row: the Router rests it) or answered again (`moscopt.lm.health`)."""

    type: Literal["deployment"] = "deployment"
    deployment: str
    state: Literal["down", "up"]
    failures: int = 0  # failures in a row when it went down
    error: str | None = None  # the last one's message
    down_for: float | None = None  # seconds it was down (when it came back)


def lm_event(record: dict[str, Any]) -> LLMCall | DeploymentEvent:
    """The event of one record of the LM layer's sink: a `deployment` change, else a call.
    Keys the ledger does not know are dropped, so a new field in the LM layer never breaks a
    run."""
    kind = DeploymentEvent if record.get("type") == "deployment" else LLMCall
    return kind(**{k: v for k, v in record.items() if k in kind.model_fields and k != "type"})


EditStatus = Literal["accepted", "rejected", "not_applied", "unusable"]


class EditEvent(_Where):
    type: Literal["edit"] = "edit"
    target: str
    status: EditStatus
    before: float | None = None
    after: float | None = None
    summary: str = ""
    reasoning: str = ""
    reason: str = ""  # why a proposal was unusable
    # each proposed operation: op, status, reason and (in newer logs) anchor and content in
    # full (`moscopt.run.edit_detail`)
    outcomes: list[dict[str, Any]] = Field(default_factory=list)
    patch: list[dict[str, Any]] | None = None
    checkpoint: str | None = None  # the pool an accepted edit produced
    decision: Decision | None = None
    diff: str = ""  # unified diff of the targeted SKILL.md(s): the incumbent -> the candidate
    incumbent: str | None = None  # digest[:12] of the pool decided against
    candidate: str | None = None  # digest[:12] of the candidate pool
    # the per-task rewards of each sample the decision used: {"incumbent": [[...], ...], ...}
    samples: dict[str, list[list[float]]] = Field(default_factory=dict)


class EvolutionEvent(_Where):
    type: Literal["evolution"] = "evolution"
    changes: list[dict[str, Any]] = Field(default_factory=list)
    before: float | None = None
    after: float | None = None
    accepted: bool = False
    pool: str | None = None  # digest[:12] of the candidate pool
    checkpoint: str | None = None
    decision: Decision | None = None


class GateRestored(_Where):
    type: Literal["gate_restored"] = "gate_restored"
    pool: str | None = None
    checkpoint: str | None = None
    source: str = "last_good"  # last_good | seed
    before: float | None = None
    after: float | None = None
    accepted: bool = True
    decision: Decision | None = None


class EpochEnd(BaseEvent):
    type: Literal["epoch_end"] = "epoch_end"
    epoch: int
    best_val: float | None = None


class Notice(_Where):
    """Something the user should know about the run (e.g. unsandboxed code execution)."""

    type: Literal["notice"] = "notice"
    kind: str
    message: str


TransferOutcome = Literal["routed", "accepted", "rejected", "not_applied", "unusable", "dropped"]


class TransferEvent(_Where):
    """An insight routed by CODREAM from a skill strong on a niche to one weak on it
    (`routed`), and later what the recipient's validated edit made of it."""

    type: Literal["transfer"] = "transfer"
    giver: str
    recipient: str
    niche: str
    insight: str  # the insight's text
    insight_id: str = ""
    scope: str = "niche"  # niche | meta
    outcome: TransferOutcome = "routed"
    trigger: str = ""  # failure | disagreement
    task_id: str = ""


class Dreamed(_Where):
    """One CODREAM session: the failure it reviewed and what it produced."""

    type: Literal["codream"] = "codream"
    niche: str
    task_id: str
    trigger: str
    givers: list[str] = Field(default_factory=list)
    recipients: list[str] = Field(default_factory=list)
    insights: list[str] = Field(default_factory=list)  # archive ids, new or merged into
    error: str | None = None


class LifecycleEvent(_Where):
    """One lifecycle operator (fork, merge, prune, seed), validated like an evolution cycle."""

    type: Literal["lifecycle"] = "lifecycle"
    op: str
    skills: list[str] = Field(default_factory=list)  # the skills it acted on
    created: str | None = None  # the skill it added (fork, merge, seed)
    niche: str | None = None
    reason: str = ""
    before: float | None = None
    after: float | None = None
    accepted: bool = False
    pool: str | None = None
    checkpoint: str | None = None
    decision: Decision | None = None


class CertificateEvent(BaseEvent):
    """The end of a run: its final pool against the pool it started from, on tasks no decision
    saw, paired per task (`moscopt.optimizer.engine.certificate`)."""

    type: Literal["certificate"] = "certificate"
    verdict: Literal["better", "no detectable difference", "worse", "skipped"]
    split: str = ""  # "test", or "val (held out)": validation tasks no decision used
    tasks: int = 0
    samples: int = 0  # sample indices per task
    seed_pool: str = ""  # digest[:12]
    final_pool: str = ""
    seed_score: float | None = None
    final_score: float | None = None
    mean_diff: float | None = None  # final - seed, mean over the tasks
    low: float | None = None  # 95% interval of mean_diff
    high: float | None = None
    p_value: float | None = None  # two-sided, by betting on the per-task differences
    detectable: float | None = None  # the smallest gain these tasks could show (None: too few)
    seed_checkpoint: str | None = None  # what `moscopt export` can hand back
    reason: str = ""  # why skipped


Event = Annotated[
    TrainStart
    | Validation
    | RolloutEvent
    | LLMCall
    | DeploymentEvent
    | EditEvent
    | EvolutionEvent
    | GateRestored
    | EpochEnd
    | Notice
    | TransferEvent
    | Dreamed
    | LifecycleEvent
    | CertificateEvent,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
POOL_CHANGES = frozenset({"edit", "evolution", "gate_restored", "lifecycle"})
# What the inspection commands read; `llm_call` and `rollout` lines are the bulk of a log.
CORE_KINDS = frozenset(
    {"train_start", "edit", "evolution", "gate_restored", "lifecycle", "validation", "certificate"}
)
TYPE_PATTERN = re.compile(rb'"type": *"([a-z_]+)"')


def parse_event(line: str | bytes) -> Event:
    """One event from one JSONL line; raises ValueError (bad JSON) or ValidationError."""
    return _ADAPTER.validate_json(line)


class EventLog:
    """Append-only JSONL of typed events. Thread-safe; one `write` per event."""

    def __init__(
        self, path: Path, listeners: list[Callable[[BaseEvent], None]] | None = None
    ) -> None:
        """`listeners` are told each event once it is written (tracing: `RunDir.watch`)."""
        self.path = path
        self._lock = threading.Lock()
        self.listeners = listeners if listeners is not None else []
        repair_jsonl_tail(path)

    def append(self, event: BaseEvent) -> int:
        """Write `event`; the byte offset of its line. Fields at their defaults are left out
        (they read back the same), `t` and `type` come first."""
        data = event.model_dump(mode="json", exclude_defaults=True)
        head = {"t": event.t, "type": getattr(event, "type", "")}
        line = json.dumps({**head, **data}, ensure_ascii=False)
        with self._lock:
            offset = self.path.stat().st_size if self.path.exists() else 0
            append_line(self.path, line)
        for listener in self.listeners:
            listener(event)
        return offset

    def read_at(self, offsets: Sequence[int]) -> list[Event]:
        """The events whose lines start at `offsets` (as `append` returned them)."""
        out: list[Event] = []
        if not offsets:
            return out
        with open(self.path, "rb") as f:
            for offset in offsets:
                f.seek(offset)
                out.append(_parse_line(f.readline(), self.path, offset=offset))
        return out


class CallSink:
    """The LM layer's event sink: each call record becomes an `llm_call` event, stamped with
    where the trainer is (`where`, set by the engine); a deployment that goes down or comes
    back, a `deployment` event, also told to `on_deployment` (the live display)."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.where: Callable[[], dict[str, Any]] = dict
        self.after: Callable[[], None] = _nothing  # told after each record (the live display)
        self.on_deployment: Callable[[DeploymentEvent], None] = _ignore

    def __call__(self, record: dict[str, Any]) -> None:
        event = lm_event(record)
        if isinstance(event, DeploymentEvent):
            self.log.append(event)
            self.on_deployment(event)
            return
        self.log.append(event.model_copy(update=self.where()))
        self.after()


def _nothing() -> None:
    return None


def _ignore(event: DeploymentEvent) -> None:
    return None


def _parse_line(raw: bytes, path: Path, *, offset: int) -> Event:
    try:
        return parse_event(raw)
    except ValidationError as e:
        raise UserError(f"at byte {offset}: {describe_error(e)}", path=path) from None


def describe_error(e: ValidationError) -> str:
    err = e.errors()[0]
    if err.get("type") == "json_invalid":
        return f"bad JSON line: {err.get('msg', '')}"
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"bad event: {where}: {err.get('msg', '')}" if where else f"bad event: {err['msg']}"
