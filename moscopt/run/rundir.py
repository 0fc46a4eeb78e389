"""The run directory: the one place that reads and writes a run's files.

    runs/<name>/
      moscopt.yaml       frozen, fully resolved config (no secrets)
      skills/            current best pool: the thing to diff (a view of the checkpoint)
      state.json         versioned RunState
      events.jsonl       append-only log (LLM calls, rollouts, edits, evolution)
      checkpoints/       pool snapshots, one JSON file per distinct pool
      cache/             LLM response cache (gitignored)
      exports/
      .lock              held by the process that trains in this directory

A new run goes only into a missing or empty directory (anything else is a `UserError` naming
it, and nothing is touched), and the directory is private to the user (0700; what moscopt
writes inside it is 0600): it holds prompts, model outputs and caches.

Consistency: `save` writes the checkpoint (if the pool changed), then `state.json` (which names
the checkpoint and the pool digest), then materializes `skills/`. Every file write is atomic, so
a process killed at any instant leaves a state that names a complete checkpoint; `load_pool`
restores `skills/` from it if the kill came before `skills/` was rewritten.

State and ledger agree: each save records the length of `events.jsonl` and the SHA-256 of
those bytes (hashed incrementally: a save reads only what was appended since the last one).
Resuming, and every command that reads the history (`status`, `log`, `diff`, `report`), checks
both first: a log lost, cut or rewritten since is one `UserError` (exit 2) before any call.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from moscopt.config import CONFIG_FILE, Config, load_config
from moscopt.core import jsonio
from moscopt.core.skills import Pool
from moscopt.core.validation import user_error
from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_json, atomic_write_text, make_dirs, read_text, storage
from moscopt.run.ledger import BaseEvent, Event, EventLog
from moscopt.run.ledger_read import check_ledger, read_events
from moscopt.run.oslock import try_lock, unlock
from moscopt.run.state import RunState, SchemaTooNew, migrate

STATE_FILE = "state.json"
EVENTS_FILE = "events.jsonl"
LOCK_FILE = ".lock"
PRIVATE_DIR = 0o700


class RunDir:
    """A run directory on disk. Create with `RunDir.create`, reopen with `RunDir.open`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._events: EventLog | None = None
        self._listeners: list[Callable[[BaseEvent], None]] = []  # shared by its EventLogs
        self._lock_fd: int | None = None
        self._dumped: str | None = None  # digest of the pool this object last wrote to skills/
        self._hashed: tuple[int, hashlib._Hash] | None = None  # events.jsonl bytes hashed so far

    # -- layout ----------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def skills_dir(self) -> Path:
        return self.path / "skills"

    @property
    def state_path(self) -> Path:
        return self.path / STATE_FILE

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def cache_dir(self) -> Path:
        return self.path / "cache"

    @property
    def exports_dir(self) -> Path:
        return self.path / "exports"

    @property
    def events(self) -> EventLog:
        if self._events is None:
            self._events = EventLog(self.events_path, self._listeners)
        return self._events

    def watch(self, listener: Callable[[BaseEvent], None]) -> None:
        """Tell `listener` each event appended to this run's log from now on (tracing)."""
        self._listeners.append(listener)

    def unwatch(self, listener: Callable[[BaseEvent], None]) -> None:
        self._listeners.remove(listener)

    # -- lifecycle -------------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path, config: Config, pool: Pool, state: RunState) -> RunDir:
        """Make a new run in a missing or empty directory; refuses anything else, untouched."""
        run = cls(path)
        if run.state_path.exists():
            raise UserError(
                "already holds a run: use --resume, or choose another --run", path=run.path
            )
        run.check_new()
        run.make_private()
        for d in (run.checkpoints_dir, run.cache_dir, run.exports_dir):
            make_dirs(d)
        from moscopt.lm.cache import RECORD_FILE

        # the LM layer appends to this file; created here so that it is private too
        with storage(run.cache_dir / RECORD_FILE):
            os.close(os.open(run.cache_dir / RECORD_FILE, os.O_WRONLY | os.O_CREAT, 0o600))
        atomic_write_text(run.config_path, config.to_yaml())
        run.save(state, pool)
        return run

    def check_new(self) -> None:
        """Refuse (`UserError`, nothing touched) a path a new run may not go into: a file, or a
        directory holding anything but a run (only this module's lock file is tolerated)."""
        if not self.path.exists():
            return
        if not self.path.is_dir():
            raise UserError("exists and is not a directory", path=self.path)
        if self.state_path.exists():
            return
        others = sorted(p.name for p in self.path.iterdir() if p.name != LOCK_FILE)
        if others:
            shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
            raise UserError(
                f"is not empty and holds no moscopt run ({shown}): a new run goes only into a "
                "missing or empty directory; choose another --run",
                path=self.path,
            )

    def make_private(self) -> None:
        """Create the run directory (mode 0700), or make the empty one given private."""
        with storage(self.path):
            if self.path.is_dir():
                os.chmod(self.path, PRIVATE_DIR)
                return
            make_dirs(self.path.parent)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.path, PRIVATE_DIR)
            os.chmod(self.path, PRIVATE_DIR)

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """Open an existing run; a path that is not a run is a `UserError`."""
        run = cls(path)
        if not run.path.exists():
            raise UserError("run directory not found", path=run.path)
        if not run.path.is_dir():
            raise UserError("not a directory", path=run.path)
        if not run.state_path.is_file():
            raise UserError(f"not a moscopt run directory (no {STATE_FILE})", path=run.path)
        return run

    # -- config, state, pool ---------------------------------------------------------------------

    def load_config(self) -> Config:
        return load_config(self.config_path)

    def load_state(self) -> RunState:
        text = read_text(self.state_path)
        try:
            data = jsonio.loads(text)
        except json.JSONDecodeError as e:
            raise UserError(
                f"not valid JSON: {e.msg}", path=self.state_path, line=e.lineno
            ) from None
        if not isinstance(data, dict):
            raise UserError("must be a JSON object", path=self.state_path)
        try:
            data = migrate(data)
            return RunState.model_validate(data)
        except SchemaTooNew as e:
            raise UserError(str(e), path=self.state_path, field="schema_version") from None
        except ValidationError as e:
            raise user_error(e, self.state_path) from None

    def load_pool(self, state: RunState | None = None) -> Pool:
        """The pool the state names; `skills/` is rewritten from it if it drifted."""
        state = state or self.load_state()
        if state.checkpoint is None:
            return Pool.load(self.skills_dir)
        pool = self.load_checkpoint(state.checkpoint)
        try:
            on_disk = Pool.load(self.skills_dir).digest()
        except UserError:
            on_disk = None
        if on_disk != pool.digest():
            pool.dump(self.skills_dir, prune=True)
        return pool

    def write_checkpoint(self, pool: Pool, step: int) -> str:
        """Save `pool` as a checkpoint (once per distinct pool); its file name."""
        digest = pool.digest()
        for existing in self.checkpoints_dir.glob(f"*-{digest[:12]}.json"):
            return existing.name
        name = f"{step:06d}-{digest[:12]}.json"
        atomic_write_json(self.checkpoints_dir / name, pool.to_json())
        return name

    def save(self, state: RunState, pool: Pool | None = None) -> None:
        """Persist `state` (and `pool`, if given) in crash-consistent order."""
        if pool is not None:
            digest = pool.digest()
            if digest != state.pool_digest or state.checkpoint is None:
                state.checkpoint = self.write_checkpoint(pool, state.step)
                state.pool_digest = digest
        state.events_bytes = self.events_path.stat().st_size if self.events_path.exists() else 0
        state.events_sha256 = self._events_digest(state.events_bytes)
        atomic_write_json(self.state_path, state.model_dump(mode="json"))
        if pool is not None and digest != self._dumped:  # skills/ already holds this pool
            pool.dump(self.skills_dir, prune=True)
            self._dumped = digest

    def _events_digest(self, size: int) -> str:
        """SHA-256 of the first `size` bytes of events.jsonl (appended to since the last call:
        only the new bytes are read)."""
        start, hasher = self._hashed if self._hashed is not None else (0, hashlib.sha256())
        if start > size:  # the log was cut (a rewind): hash it again
            start, hasher = 0, hashlib.sha256()
        if size > start:
            with open(self.events_path, "rb") as f:
                f.seek(start)
                left = size - start
                while left > 0 and (chunk := f.read(min(left, 1 << 20))):
                    hasher.update(chunk)
                    left -= len(chunk)
        self._hashed = (size, hasher)
        return hasher.hexdigest()

    def check_events(self, state: RunState) -> None:
        """A `UserError` (exit 2) if events.jsonl no longer agrees with `state`: lost, shorter
        than it recorded, or not the bytes it hashed (see the module docstring)."""
        check_ledger(self.events_path, state.events_bytes, state.events_sha256)

    def rewind_events(self, state: RunState) -> int:
        """Drop events logged after the last save (work that a resumed run redoes); bytes cut.

        The kept log is checked against the state (length and digest) and read through once,
        before anything is cut, so that a lost, rewritten or damaged log is a `UserError` before
        the run spends any call (the trainer reads the log again later, mid-phase).
        """
        read_events(self.events_path, state.events_bytes, sha256=state.events_sha256)
        if not self.events_path.exists():
            return 0
        size = self.events_path.stat().st_size
        if size <= state.events_bytes:
            return 0
        with storage(self.events_path), open(self.events_path, "r+b") as f:
            f.truncate(state.events_bytes)
            f.flush()
            os.fsync(f.fileno())
        self._events = None
        self._hashed = None
        return size - state.events_bytes

    def read_events(
        self, state: RunState | None = None, kinds: Iterable[str] | None = None
    ) -> list[Event]:
        """The saved events (up to `state.events_bytes`), only those of `kinds` if given; a log
        that no longer agrees with `state` is a `UserError` (see the module docstring)."""
        state = state or self.load_state()
        return read_events(self.events_path, state.events_bytes, kinds, sha256=state.events_sha256)

    def load_checkpoint(self, name: str) -> Pool:
        path = self.checkpoints_dir / name
        try:
            return Pool.from_json(jsonio.loads(read_text(path)))
        except (json.JSONDecodeError, ValidationError) as e:
            raise UserError(f"checkpoint is corrupt: {e}", path=path) from None

    def checkpoints(self) -> list[Path]:
        return sorted(self.checkpoints_dir.glob("*.json"))

    # -- exclusivity -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[RunDir]:
        """Hold the run's lock; a second process gets a clear `UserError` instead of a race.

        A path that may hold no run (see `check_new`) is refused before anything is created.
        """
        self.check_new()
        if not self.path.exists():
            self.make_private()
        with storage(self.path / LOCK_FILE):
            fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        if not try_lock(fd):
            os.close(fd)
            raise UserError(
                "another moscopt process is using this run directory", path=self.path
            ) from None
        try:
            with storage(self.path / LOCK_FILE):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            yield self
        finally:
            unlock(fd)
            os.close(fd)

    def in_use(self) -> bool:
        """Whether a live process holds the run's lock (a dead one's lock is released by the
        system, so a `running` state with no holder is a run whose process is gone)."""
        try:
            fd = os.open(self.path / LOCK_FILE, os.O_RDONLY)
        except OSError:
            return False
        try:
            if not try_lock(fd, shared=True):
                return True
            unlock(fd)
        finally:
            os.close(fd)
        return False

    def condition(self, state: RunState | None = None) -> str:
        """The run as a user should see it: `running` (a process holds it), `interrupted` (its
        state says running but its process is gone: resumable), `stopped` (it stopped itself,
        e.g. out of budget: resumable), `failed` or `done`. A run made but never started (state
        `new`) with no process is interrupted too: it resumes from its start."""
        state = state or self.load_state()
        if state.status == "done":
            return "done"
        if self.in_use():
            return "running"
        if state.status in ("running", "new"):
            return "interrupted"
        return state.status


RESUMABLE = ("interrupted", "stopped")


def new_run_path(runs: Path, name: str) -> Path:
    """A new, empty, private run directory `runs/<name>-<YYYYMMDD-HHMMSS>`, claimed: `-2`, `-3`,
    ... when a run of the same second has it. The claim is `mkdir` (atomic), so runs started in
    parallel in one project (a shell loop over seeds) each get their own directory."""
    base = f"{name}-{_stamp()}"
    path, n = runs / base, 2
    make_dirs(runs)
    while True:
        try:
            with storage(path):
                os.mkdir(path, PRIVATE_DIR)
            return path
        except FileExistsError:
            path, n = runs / f"{base}-{n}", n + 1


def _stamp() -> str:
    from datetime import datetime

    return datetime.now().strftime("%Y%m%d-%H%M%S")
