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

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from moscopt.core.skills import GATE_NAME, Pool
from moscopt.errors import UserError
from moscopt.run.entries import EditEntry, Entry, EvolutionEntry, RestoreEntry
from moscopt.run.ledger import (
    CORE_KINDS,
    POOL_CHANGES,
    EditEvent,
    Event,
    EvolutionEvent,
    GateRestored,
    LifecycleEvent,
    TrainStart,
    Validation,
)
from moscopt.run.rundir import RunDir
from moscopt.run.state import RunState

__all__ = ["CORE_KINDS", "EditEntry", "Entry", "EvolutionEntry", "History", "RestoreEntry"]


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

    def __init__(self, run: RunDir, state: RunState, events: list[Event]) -> None:
        self.run = run
        self.state = state
        self.events = events
        self.warnings: list[str] = []

    @classmethod
    def load(
        cls, run: RunDir, state: RunState | None = None, kinds: Iterable[str] | None = CORE_KINDS
    ) -> History:
        state = state or run.load_state()
        return cls(run, state, run.read_events(state, kinds))

    # -- entries ---------------------------------------------------------------------------------

    @cached_property
    def entries(self) -> list[Entry]:
        """Edits, evolution cycles and gate restorations, in log order."""
        out: list[Entry] = []
        for e in self.events:
            if isinstance(e, EditEvent):
                out.append(EditEntry.from_event(e))
            elif isinstance(e, EvolutionEvent):
                out.append(EvolutionEntry.from_event(e))
            elif isinstance(e, GateRestored):
                out.append(RestoreEntry.from_event(e))
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

    def entries_about(self, skill: str | None) -> list[Entry]:
        """The entries that concern `skill` (a name or 'gate'; None: all); a `UserError` naming
        the known skills for a name this run never had."""
        if skill is not None and skill not in (known := self.known_names()):
            message = f"unknown skill '{skill}' in this run (known: {', '.join(known)})"
            raise UserError(message, field="skill")
        return [e for e in self.entries if skill is None or e.touches(skill)]

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
    """Rebuilds the sequence of pools: each event that changed the pool names its checkpoint.

    Logs written before events named checkpoints (ledger v1) are replayed from the edits'
    RFC 6902 patches and, for evolution and gate restorations, from the checkpoint whose digest
    the event (or the validation just before it) names.
    """

    def __init__(self, history: History) -> None:
        self.h = history
        self.run = history.run
        self.by_digest: dict[str, str] = {}
        for path in self.run.checkpoints():
            digest = path.stem.rpartition("-")[2]
            self.by_digest.setdefault(digest, path.name)

    def load(self, name: str) -> Pool | None:
        if not (self.run.checkpoints_dir / name).is_file():
            return None
        return self.run.load_checkpoint(name)

    def initial(self) -> Pool:
        start = next((e for e in self.h.events if isinstance(e, TrainStart)), None)
        if start is not None:
            name = start.checkpoint or self.by_digest.get(start.pool)
            pool = self.load(name) if name else None
            if pool is not None:
                return pool
        if any(e.type in POOL_CHANGES for e in self.h.events):
            raise UserError(
                "cannot rebuild the run's history: events.jsonl has no train_start event naming "
                "a checkpoint",
                path=self.run.events_path,
            )
        return self.run.load_pool(self.h.state)

    def replay(self) -> list[Version]:
        pool = self.initial()
        versions = [Version(None, "start", pool)]
        last_validated: str | None = None
        for e in self.h.events:
            if isinstance(e, Validation):
                last_validated = e.pool
                continue
            changed = (
                (isinstance(e, EditEvent) and e.status == "accepted")
                or (isinstance(e, EvolutionEvent) and e.accepted)
                or (isinstance(e, GateRestored) and e.accepted)
                or (isinstance(e, LifecycleEvent) and e.accepted)
            )
            if not changed:
                continue
            assert isinstance(e, EditEvent | EvolutionEvent | GateRestored | LifecycleEvent)
            new = self.after(pool, e, last_validated)
            if new is None:
                self.h.warnings.append(
                    f"cannot rebuild the pool after the {e.type} event at step {e.step}: "
                    "later pools may be off"
                )
                continue
            pool = new
            versions.append(Version(e.step, e.type, pool))
        state = self.h.state
        if state.pool_digest and versions[-1].pool.digest() != state.pool_digest:
            self.h.warnings.append(
                "replaying the logged changes does not reproduce the run's current pool "
                f"(checkpoint {state.checkpoint}); the history may be incomplete"
            )
        return versions

    def after(
        self,
        pool: Pool,
        e: EditEvent | EvolutionEvent | GateRestored | LifecycleEvent,
        validated: str | None,
    ) -> Pool | None:
        """The pool `e` produced: its checkpoint; for v1 logs its patch or its digest."""
        if e.checkpoint:
            return self.load(e.checkpoint)
        if isinstance(e, EditEvent):
            return self.patched(pool, e)
        digest = e.pool or validated
        name = self.by_digest.get(digest) if digest else None
        return self.load(name) if name else None

    def patched(self, pool: Pool, e: EditEvent) -> Pool | None:
        if not e.patch:
            return None
        import jsonpatch

        try:
            return Pool.from_json(jsonpatch.apply_patch(pool.to_json(), e.patch))
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, ValueError) as err:
            self.h.warnings.append(f"the patch logged at step {e.step} does not apply: {err}")
            return None


def open_run(run: Path | None, config: Path | None = None, *, finished: bool = False) -> RunDir:
    """`run` if given, else the project's most recent run (`latest_run`)."""
    if run is not None:
        return RunDir.open(run)
    from moscopt.app.project import open_project

    runs_dir = open_project(config).runs_dir
    latest = latest_run(runs_dir, finished=finished)
    if latest is None:
        raise UserError("no run found: pass --run DIR", path=runs_dir)
    return RunDir.open(latest)


def latest_run(runs_dir: Path, *, finished: bool = False) -> Path | None:
    """The most recent run in `runs_dir` (by creation time, then name); None: there is none.

    `finished`: the most recent run that ran to its end (what `export` and `route` deploy by
    default): a run still running, interrupted or stopped is passed over, and when no run has
    finished the error names the latest and how to resume it.
    """
    found = []
    if runs_dir.is_dir():
        for folder in runs_dir.iterdir():
            if (folder / "state.json").is_file():
                try:
                    state = RunDir(folder).load_state()
                except UserError:
                    continue
                found.append((state.created_at, folder.name, folder, state.status))
    if not found:
        return None
    if finished:
        done = [f for f in found if f[3] == "done"]
        if not done:
            latest = RunDir(max(found)[2])
            raise UserError(
                f"no finished run: the latest is {latest.condition()} (finish it with "
                f"`moscopt train --resume --run {latest.path}`, or pass --run DIR)",
                path=runs_dir,
            )
        found = done
    return Path(max(found)[2])


@dataclass(frozen=True)
class SkillDiff:
    """A unified diff (empty: no change) and notes for the user (e.g. a skill added later)."""

    text: str
    notes: list[str]


def diff_json(
    history: History, name: str, from_step: int | None, to_step: int | None
) -> dict[str, object]:
    """`skill_diff` as `moscopt diff --json` (and the MCP `diff` tool) give it."""
    result = skill_diff(history, name, from_step, to_step)
    notes = [*history.warnings, *result.notes]
    return {"run": str(history.run.path), "skill": name, "from": from_step, "to": to_step,
            "changed": bool(result.text), "diff": result.text, "notes": notes}  # fmt: skip


def skill_diff(
    history: History, name: str, from_step: int | None, to_step: int | None
) -> SkillDiff:
    """The diff of `name`'s SKILL.md from the pool at `from_step` to the pool at `to_step`.

    None means the initial pool (`from_step`) and the run's current pool (`to_step`). A skill
    that exists on one side only is diffed against nothing, with a note saying when it existed;
    a skill on neither side, an unknown skill or a step outside 0..state.step is a `UserError`.
    """
    from moscopt.run.edit_detail import unified

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
    text = unified(name, old, new, old_label, new_label)
    if not text:
        notes.append(f"no change to '{name}' between {old_label} and {new_label}")
    return SkillDiff(text, notes)
