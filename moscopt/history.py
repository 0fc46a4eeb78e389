"""A run's history: its edits, evolution events and gate restorations, and its pool at any step.

Step: the trainer's `state.step` counter. It starts at 0 and goes up by one after each minibatch
of the skills phase and after each gate-editing step; the evolution phase and the end of an epoch
do not move it. Every `edit`, `evolution`, `gate_restored` and `validation` event carries the step
at which it happened, so one step may hold several events (e.g. the evolution of epoch e and the
first edits of epoch e + 1 share a step).

The pool at step S is the initial pool (the one `train_start` names) with every change logged at a
step <= S applied in log order: accepted edits (their RFC 6902 `patch` against `Pool.to_json()`),
accepted evolution cycles and gate restorations (the checkpoint the trainer saved right after
them; their events carry no patch). Rejected edits never change it.

Only the events up to `state.events_bytes` count: lines after the last save are work in flight,
or work that a resumed run discards and redoes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from moscopt.errors import UserError
from moscopt.rundir import RunDir
from moscopt.skills import GATE_NAME, Pool
from moscopt.state import RunState

# The event types the inspection commands read; `llm_call` and `rollout` lines are the bulk of a
# log, so readers ask for them only when they need them.
CORE_KINDS = frozenset({"train_start", "edit", "evolution", "gate_restored", "validation"})
_CHECKPOINT = re.compile(r"^(\d+)-([0-9a-f]{12})\.json$")
_TYPE = re.compile(r'"type": *"([a-z_]+)"')


def read_events(run: RunDir, state: RunState, kinds: Iterable[str] | None = None) -> list[Any]:
    """The saved events of `run` (up to `state.events_bytes`), only those of `kinds` if given.

    A malformed line is corruption and a `UserError` naming the file and line, except a torn last
    line (a process killed mid-append), which is skipped.
    """
    path = run.events_path
    if not path.is_file():
        return []
    with open(path, "rb") as f:
        data = f.read(state.events_bytes) if state.events_bytes > 0 else b""
    wanted = None if kinds is None else frozenset(kinds)
    lines = data.decode("utf-8", errors="replace").split("\n")
    events = []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        if wanted is not None:
            # the type sits near the start of every line the EventLog writes: skip the big
            # lines of other types without parsing them
            m = _TYPE.search(raw, 0, 200)
            if m is not None and m.group(1) not in wanted:
                continue
        try:
            event = json.loads(raw)
        except json.JSONDecodeError as e:
            if i == len(lines) - 1:
                break
            raise UserError(f"bad JSON line: {e.msg}", path=path, line=i + 1) from None
        if isinstance(event, dict) and (wanted is None or event.get("type") in wanted):
            events.append(event)
    return events


# -- entries -------------------------------------------------------------------------------------


def _score(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


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

    @classmethod
    def from_event(cls, e: dict[str, Any]) -> EditEntry:
        summary = str(e.get("summary") or "")
        if not summary and e.get("status") == "unusable":
            summary = f"unusable proposal: {e.get('reason', '')}"
        elif not summary and e.get("status") == "not_applied":
            reasons = sorted(
                {str(o.get("reason")) for o in e.get("outcomes", []) if o.get("reason")}
            )
            summary = "not applied: " + ("; ".join(reasons) or "no edits")
        return cls(
            step=int(e.get("step", 0)),
            epoch=int(e.get("epoch", 0)),
            phase=str(e.get("phase", "")),
            target=str(e.get("target", "")),
            status=str(e.get("status", "")),
            before=_score(e.get("before")),
            after=_score(e.get("after")),
            summary=summary,
            reasoning=str(e.get("reasoning") or ""),
            patch=e.get("patch") or None,
            t=str(e.get("t", "")),
            outcomes=list(e.get("outcomes") or []),
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

    def to_json(self) -> dict[str, Any]:
        return {
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

    @classmethod
    def from_event(cls, e: dict[str, Any]) -> EvolutionEntry:
        return cls(
            step=int(e.get("step", 0)),
            epoch=int(e.get("epoch", 0)),
            accepted=bool(e.get("accepted")),
            before=_score(e.get("before")),
            after=_score(e.get("after")),
            changes=list(e.get("changes") or []),
            t=str(e.get("t", "")),
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
        return next((_score(c.get("similarity")) for c in self.changes if "similarity" in c), None)

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
            "changes": self.changes,
            "t": self.t,
        }


@dataclass(frozen=True)
class RestoreEntry:
    """The gate was rebuilt from its last good version after repeated parse failures."""

    step: int
    epoch: int
    t: str = ""

    def touches(self, name: str) -> bool:
        return name == GATE_NAME

    def to_json(self) -> dict[str, Any]:
        return {"kind": "gate_restored", "step": self.step, "epoch": self.epoch, "t": self.t}


Entry = EditEntry | EvolutionEntry | RestoreEntry


@dataclass(frozen=True)
class Version:
    """One pool of the run's history: the pool after the change logged at `step` (None: start)."""

    step: int | None
    cause: str  # start, edit, evolution, gate_restored
    pool: Pool

    @property
    def order(self) -> int:
        return -1 if self.step is None else self.step


# -- the history ---------------------------------------------------------------------------------


class History:
    """The saved history of one run. Build with `History.load(run)`."""

    def __init__(self, run: RunDir, state: RunState, events: list[dict[str, Any]]) -> None:
        self.run = run
        self.state = state
        self.events = events
        self.warnings: list[str] = []

    @classmethod
    def load(
        cls, run: RunDir, state: RunState | None = None, kinds: Iterable[str] | None = CORE_KINDS
    ) -> History:
        state = state or run.load_state()
        return cls(run, state, read_events(run, state, kinds))

    # -- entries ---------------------------------------------------------------------------------

    @cached_property
    def entries(self) -> list[Entry]:
        """Edits, evolution cycles and gate restorations, in log order."""
        out: list[Entry] = []
        for e in self.events:
            kind = e.get("type")
            if kind == "edit":
                out.append(EditEntry.from_event(e))
            elif kind == "evolution":
                out.append(EvolutionEntry.from_event(e))
            elif kind == "gate_restored":
                out.append(
                    RestoreEntry(int(e.get("step", 0)), int(e.get("epoch", 0)), e.get("t", ""))
                )
        return out

    @property
    def edits(self) -> list[EditEntry]:
        return [e for e in self.entries if isinstance(e, EditEntry)]

    @property
    def evolutions(self) -> list[EvolutionEntry]:
        return [e for e in self.entries if isinstance(e, EvolutionEntry)]

    @property
    def restorations(self) -> list[RestoreEntry]:
        return [e for e in self.entries if isinstance(e, RestoreEntry)]

    # -- steps -----------------------------------------------------------------------------------

    @property
    def last_step(self) -> int:
        return self.state.step

    def check_step(self, step: int, flag: str) -> int:
        """`step` if the run has it (0..state.step), else a `UserError` naming `flag`."""
        if not 0 <= step <= self.last_step:
            raise UserError(
                f"step {step} is out of range: this run has steps 0 to {self.last_step}",
                path=self.run.path,
                field=flag,
            )
        return step

    # -- pools -----------------------------------------------------------------------------------

    @cached_property
    def versions(self) -> list[Version]:
        """Every pool of the run in order, starting with the initial one (step None)."""
        return _Replay(self).replay()

    @property
    def initial_pool(self) -> Pool:
        return self.versions[0].pool

    def pool_at(self, step: int | None) -> Pool:
        """The pool after every change at steps <= `step`; None: the initial pool."""
        if step is None:
            return self.initial_pool
        pool = self.initial_pool
        for v in self.versions[1:]:
            if v.order > step:
                break
            pool = v.pool
        return pool

    def current_pool(self) -> Pool:
        """The run's current pool: the checkpoint the state names (equal to the last version
        when the log is complete)."""
        if self.state.checkpoint is not None:
            return self.run.load_checkpoint(self.state.checkpoint)
        return self.versions[-1].pool

    def known_names(self) -> list[str]:
        names = {n for v in self.versions for n in _names(v.pool)}
        for e in self.evolutions:
            names.update(e.added)
            names.update(e.eliminated)
        return sorted(names)

    def lifespan(self, name: str) -> str:
        """When `name` was in the pool, in words (for messages about a skill not at a step)."""
        present = [v for v in self.versions if name in _names(v.pool)]
        if not present:
            return "it is never in the pool"
        first, last = present[0], present[-1]
        after_last = next((v for v in self.versions if v.order > last.order), None)
        since = "the start" if first.step is None else f"step {first.step} (added by {first.cause})"
        if last is self.versions[-1] or after_last is None:
            return f"it is in the pool from {since}"
        return f"it is in the pool from {since} until it was removed at step {after_last.step}"


def skill_text(pool: Pool, name: str) -> str | None:
    """The SKILL.md text of `name` (or of the gate) in `pool`; None if the pool lacks it."""
    if name == GATE_NAME:
        return pool.gate.dumps() if pool.gate is not None else None
    return pool.get(name).dumps() if name in pool else None


def _names(pool: Pool) -> set[str]:
    return set(pool.names) | ({GATE_NAME} if pool.gate is not None else set())


class _Replay:
    """Rebuilds the sequence of pools from `train_start`, the patches and the checkpoints."""

    def __init__(self, history: History) -> None:
        self.h = history
        self.run = history.run
        self.by_digest: dict[str, str] = {}
        self.by_step: dict[int, list[str]] = {}
        for path in self.run.checkpoints():
            m = _CHECKPOINT.match(path.name)
            if m:
                self.by_digest.setdefault(m.group(2), path.name)
                self.by_step.setdefault(int(m.group(1)), []).append(path.name)
        self.seen: set[str] = set()

    def load(self, name: str) -> Pool:
        return self.run.load_checkpoint(name)

    def initial(self) -> Pool:
        start = next((e for e in self.h.events if e.get("type") == "train_start"), None)
        if start is not None and str(start.get("pool")) in self.by_digest:
            return self.load(self.by_digest[str(start["pool"])])
        # no training yet (or a log from before train_start named its pool): the state's pool,
        # which is the start only if nothing changed it
        if any(e.get("type") in ("edit", "evolution", "gate_restored") for e in self.h.events):
            raise UserError(
                "cannot rebuild the run's history: events.jsonl has no train_start event naming "
                "a checkpoint",
                path=self.run.events_path,
            )
        return self.run.load_pool(self.h.state)

    def replay(self) -> list[Version]:
        pool = self.initial()
        versions = [Version(None, "start", pool)]
        self.seen.add(pool.digest()[:12])
        last_validated: tuple[int, str] | None = None
        for e in self.h.events:
            kind, step = e.get("type"), int(e.get("step", 0))
            if kind == "validation":
                last_validated = (step, str(e.get("pool")))
                continue
            new: Pool | None = None
            if kind == "edit" and e.get("status") == "accepted":
                new = self.patched(pool, e)
                if new is None:
                    new = self.guess(step, lambda p: True)
            elif kind == "evolution" and e.get("accepted"):
                new = self.patched(pool, e)
                hint = last_validated[1] if last_validated and last_validated[0] == step else None
                if new is None and hint in self.by_digest and hint not in self.seen:
                    new = self.load(self.by_digest[hint])
                if new is None:
                    new = self.guess(step, lambda p: True)
            elif kind == "gate_restored":
                new = self.patched(pool, e)
                if new is None:
                    new = self.guess(step, _gate_changed(pool))
            else:
                continue
            if new is None:
                self.h.warnings.append(
                    f"cannot rebuild the pool after the {kind} event at step {step}: "
                    "later pools may be off"
                )
                continue
            pool = new
            self.seen.add(pool.digest()[:12])
            versions.append(Version(step, str(kind), pool))
        state = self.h.state
        if state.pool_digest and versions[-1].pool.digest() != state.pool_digest:
            self.h.warnings.append(
                "replaying the logged changes does not reproduce the run's current pool "
                f"(checkpoint {state.checkpoint}); the history may be incomplete"
            )
        return versions

    def patched(self, pool: Pool, e: dict[str, Any]) -> Pool | None:
        patch = e.get("patch")
        if not patch:
            return None
        import jsonpatch

        try:
            return Pool.from_json(jsonpatch.apply_patch(pool.to_json(), patch))
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, ValueError) as err:
            self.h.warnings.append(
                f"the patch logged at step {e.get('step')} does not apply: {err}"
            )
            return None

    def guess(self, step: int, fits: Callable[[Pool], bool]) -> Pool | None:
        """The one checkpoint saved at `step` that is not an earlier pool and `fits`."""
        fitting = []
        for name in self.by_step.get(step, []):
            m = _CHECKPOINT.match(name)
            if m is None or m.group(2) in self.seen:
                continue
            candidate = self.load(name)
            if fits(candidate):
                fitting.append(candidate)
        return fitting[0] if len(fitting) == 1 else None


def _gate_changed(current: Pool) -> Callable[[Pool], bool]:
    """A gate restoration changes the gate and nothing else."""
    return lambda p: p.skills == current.skills and p.gate != current.gate


def open_run(run: Path | None, config: Path | None = None) -> RunDir:
    """`run` if given, else the project's most recent run (by creation time, then name)."""
    if run is not None:
        return RunDir.open(run)
    from moscopt.project import open_project

    runs_dir = open_project(config).runs_dir
    found = []
    if runs_dir.is_dir():
        for folder in runs_dir.iterdir():
            if (folder / "state.json").is_file():
                try:
                    created = RunDir(folder).load_state().created_at
                except UserError:
                    continue
                found.append((created, folder.name, folder))
    if not found:
        raise UserError("no run found: pass --run DIR", path=runs_dir)
    return RunDir.open(max(found)[2])


@dataclass(frozen=True)
class SkillDiff:
    """A unified diff (empty: no change) and notes for the user (e.g. a skill added later)."""

    text: str
    notes: list[str]


def skill_diff(
    history: History, name: str, from_step: int | None, to_step: int | None
) -> SkillDiff:
    """The diff of `name`'s SKILL.md from the pool at `from_step` to the pool at `to_step`.

    None means the initial pool (`from_step`) and the run's current pool (`to_step`). A skill
    that exists on one side only is diffed against nothing, with a note saying when it existed;
    a skill on neither side, an unknown skill or a step outside 0..state.step is a `UserError`.
    """
    import difflib

    if from_step is not None:
        history.check_step(from_step, "from")
    if to_step is not None:
        history.check_step(to_step, "to")
    if from_step is not None and to_step is not None and from_step > to_step:
        raise UserError(f"--from {from_step} is after --to {to_step}", field="from")
    known = history.known_names()
    if name not in known:
        raise UserError(
            f"unknown skill '{name}' in this run (known: {', '.join(known)})", field="skill"
        )
    old_label = "start" if from_step is None else f"step {from_step}"
    new_label = f"step {history.last_step if to_step is None else to_step}"
    at_old = "at the start" if from_step is None else f"at step {from_step}"
    at_new = f"now (step {history.last_step})" if to_step is None else f"at step {to_step}"
    old = skill_text(history.pool_at(from_step), name)
    new_pool = history.pool_at(to_step) if to_step is not None else history.current_pool()
    new = skill_text(new_pool, name)
    if old is None and new is None:
        raise UserError(
            f"skill '{name}' is neither in the pool {at_old} nor {at_new}: "
            f"{history.lifespan(name)}",
            field="skill",
        )
    notes = []
    if old is None:
        notes.append(f"'{name}' is not in the pool {at_old} ({history.lifespan(name)})")
    if new is None:
        notes.append(f"'{name}' is not in the pool {at_new} ({history.lifespan(name)})")
    text = "".join(
        difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{name}/SKILL.md ({old_label})" if old is not None else "/dev/null",
            tofile=f"b/{name}/SKILL.md ({new_label})" if new is not None else "/dev/null",
        )
    )
    if not text:
        notes.append(f"no change to '{name}' between {old_label} and {new_label}")
    return SkillDiff(text, notes)
