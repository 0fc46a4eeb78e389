"""The entries of a run's history, built from typed ledger events: edit decisions, evolution
cycles and gate restorations, each with the acceptance decision behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from moscopt.core.skills import GATE_NAME
from moscopt.run.ledger import Decision, EditEvent, EvolutionEvent, GateRestored


@dataclass(frozen=True)
class EditEntry:
    """One edit decision: accepted, rejected, not_applied (no op matched) or unusable."""

    step: int
    epoch: int
    phase: str
    target: str
    status: str
    before: float | None
    after: float | None
    summary: str
    reasoning: str
    patch: list[dict[str, Any]] | None
    t: str = ""
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    decision: Decision | None = None
    diff: str = ""  # the targeted skill(s), incumbent -> candidate (`run.edit_detail`)
    incumbent: str | None = None
    candidate: str | None = None
    samples: dict[str, list[list[float]]] = field(default_factory=dict)

    @classmethod
    def from_event(cls, e: EditEvent) -> EditEntry:
        summary = e.summary
        if not summary and e.status == "unusable":
            summary = f"unusable proposal: {e.reason}"
        elif not summary and e.status == "not_applied":
            reasons = sorted({str(o.get("reason")) for o in e.outcomes if o.get("reason")})
            summary = "not applied: " + ("; ".join(reasons) or "no edits")
        return cls(
            step=e.step,
            epoch=e.epoch,
            phase=e.phase,
            target=e.target,
            status=e.status,
            before=e.before,
            after=e.after,
            summary=summary,
            reasoning=e.reasoning,
            patch=e.patch or None,
            t=e.t,
            outcomes=list(e.outcomes),
            decision=e.decision,
            diff=e.diff,
            incumbent=e.incumbent,
            candidate=e.candidate,
            samples=dict(e.samples),
        )

    def touches(self, name: str) -> bool:
        """Whether this edit is about `name` (its target, or a skill its patch changes)."""
        if self.target == name:
            return True
        prefix = "/gate" if name == GATE_NAME else f"/skills/{name}"
        return any(
            op.get("path", "") == prefix or str(op.get("path", "")).startswith(prefix + "/")
            for op in self.patch or []
        )

    def to_json(self, full: bool = False) -> dict[str, Any]:
        """The entry as `log --json` shows it; `full`: with every operation in full and the
        diff (`log --full`)."""
        extra = (
            {"operations": self.outcomes, "diff": self.diff, "samples": self.samples}
            if full
            else {}
        )
        return extra | {
            "kind": "edit",
            "step": self.step,
            "epoch": self.epoch,
            "phase": self.phase,
            "target": self.target,
            "status": self.status,
            "before": self.before,
            "after": self.after,
            "summary": self.summary,
            "reasoning": self.reasoning,
            "decision": self.decision.model_dump() if self.decision else None,
            "t": self.t,
        }


@dataclass(frozen=True)
class EvolutionEntry:
    """One evolution cycle: what it eliminated and added, and whether the pool kept it."""

    step: int
    epoch: int
    accepted: bool
    before: float | None
    after: float | None
    changes: list[dict[str, Any]]
    t: str = ""
    decision: Decision | None = None

    @classmethod
    def from_event(cls, e: EvolutionEvent) -> EvolutionEntry:
        return cls(
            step=e.step,
            epoch=e.epoch,
            accepted=e.accepted,
            before=e.before,
            after=e.after,
            changes=list(e.changes),
            t=e.t,
            decision=e.decision,
        )

    @property
    def eliminated(self) -> list[str]:
        """Skills taken out: eliminated by Q-score or replaced by a forced mutation/fresh skill."""
        out = []
        for c in self.changes:
            if c.get("kind") == "eliminate" and c.get("skill"):
                out.append(str(c["skill"]))
            elif c.get("kind") in ("forced_mutation", "fresh") and c.get("skill"):
                out.append(str(c.get("replaced")))
        return out

    @property
    def added(self) -> list[str]:
        kinds = ("crossover", "mutate", "forced_mutation", "fresh")
        return [str(c["skill"]) for c in self.changes if c.get("kind") in kinds and c.get("skill")]

    @property
    def similarity(self) -> float | None:
        values = (c.get("similarity") for c in self.changes if "similarity" in c)
        return next((float(v) for v in values if isinstance(v, int | float)), None)

    @property
    def diversity(self) -> dict[str, Any] | None:
        """The cycle's diversity check: the pool's mean pairwise similarity, the method that
        measured it (an embedding model, or `difflib` when none could load) and the threshold
        above which the pool was rediversified."""
        note = next((c for c in self.changes if c.get("kind") == "diversity"), None)
        if note is None:
            return None
        return {k: note.get(k) for k in ("similarity", "method", "threshold")}

    def touches(self, name: str) -> bool:
        return name in self.eliminated or name in self.added

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "evolution",
            "step": self.step,
            "epoch": self.epoch,
            "accepted": self.accepted,
            "before": self.before,
            "after": self.after,
            "eliminated": self.eliminated,
            "added": self.added,
            "similarity": self.similarity,
            "diversity": self.diversity,
            "changes": self.changes,
            "decision": self.decision.model_dump() if self.decision else None,
            "t": self.t,
        }


@dataclass(frozen=True)
class RestoreEntry:
    """The gate was rebuilt from its last good version after repeated parse failures."""

    step: int
    epoch: int
    t: str = ""
    accepted: bool = True
    source: str = "last_good"
    decision: Decision | None = None

    @classmethod
    def from_event(cls, e: GateRestored) -> RestoreEntry:
        return cls(e.step, e.epoch, e.t, e.accepted, e.source, e.decision)

    def touches(self, name: str) -> bool:
        return name == GATE_NAME

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "gate_restored",
            "step": self.step,
            "epoch": self.epoch,
            "accepted": self.accepted,
            "source": self.source,
            "decision": self.decision.model_dump() if self.decision else None,
            "t": self.t,
        }


Entry = EditEntry | EvolutionEntry | RestoreEntry
