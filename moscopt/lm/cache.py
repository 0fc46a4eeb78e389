"""The response cache: one diskcache folder shared by every run of a project, keyed by
`LMRequest.key()`.

Where it lives (`shared_cache_dir`): `llm.cache_dir` if set; else `$MOSCOPT_CACHE_DIR`; else
`<project>/.moscopt/cache/` for the project (the nearest `moscopt.yaml` above the run, or above
the working directory without a run); else the user-level `default_cache_dir()`. The key is a
hash of what determines the answer (model identity, messages, sampling, seed, schema, sample
index) and not of the endpoint's address, so a rerun into a new run directory, a resumed run and
a local server restarted on another port all find the answers they got before.

The folder is a `diskcache.Cache` (SQLite in WAL mode underneath: safe across threads and
processes) that never evicts or expires: a resumed or repeated step must find every answer it got
before. Answers put on an event loop are committed together when the loop turns
(`ResponseCache.commit` states the promise). Its `Disk` is `TextDisk`: keys and values are stored
as the text they are, never pickled.

A run keeps a record of the entries it used (`RECORD_FILE` in its `cache/` folder: one key per
line, appended as it goes), so what a run depended on can be listed, copied or kept. Answers
stored by earlier versions are still found (`moscopt.lm.legacy`): the single SQLite file of
format 2 in the same folder (same keys), and a run's own `cache/` folder of format 1 (keys that
hashed the endpoint too); each one found is copied here.

Values are JSON holding only the answer: text, token counts, finish reason, the model. Requests,
API keys and headers are not stored, and an answer's text is scrubbed of secret values
(`moscopt.lm.redact.scrub_secrets`: the keys in the environment, in their simple encodings)
before it is, whoever wrote it. An entry that cannot be read or decoded is a miss (and is
overwritten by the next answer), never a crash: not JSON, nested too deeply, token counts that
are not counts (negative, fractional, 1e400), a pickle; so is a folder that cannot be made or
opened (one warning).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import diskcache
from diskcache.core import DBNAME, MODE_PICKLE, UNKNOWN

from moscopt.config import CONFIG_FILE, LLMConfig
from moscopt.lm.base import Completion
from moscopt.lm.cache_entry import decode_entry, encode_entry
from moscopt.lm.legacy import SqliteResponses

log = logging.getLogger("moscopt.lm")
CACHE_ENV = "MOSCOPT_CACHE_DIR"
HOME_ENV = "MOSCOPT_HOME"
PROJECT_CACHE = Path(".moscopt") / "cache"
DB_FILE = DBNAME  # diskcache's database in the folder (and in a format-1 run's cache/)
RECORD_FILE = "used-keys.txt"
FLUSH_EVERY = 64  # record lines buffered before they are appended
# never evicted nor expired, so no culling pass on each write; no hit counters to update on reads
SETTINGS: dict[str, Any] = {"eviction_policy": "none", "cull_limit": 0, "statistics": 0}
_FAILURES = (sqlite3.Error, OSError, diskcache.Timeout)  # of the folder, not of an entry


def default_cache_dir() -> Path:
    """The user-level cache: `$MOSCOPT_CACHE_DIR`, else `$MOSCOPT_HOME/cache`, else
    `$XDG_CACHE_HOME/moscopt`, else `~/.cache/moscopt`."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser() / "cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "moscopt"


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` holding a `moscopt.yaml`."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder
    return None


def shared_cache_dir(llm: LLMConfig, *, run_path: Path | None = None) -> Path:
    """Where the response cache of a run (or of a command without one) lives; see above."""
    start = run_path.resolve().parent if run_path is not None else Path.cwd()
    root = project_root(start)
    if llm.cache_dir:
        path = Path(llm.cache_dir).expanduser()
        return path if path.is_absolute() else (root or Path.cwd()) / path
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if root is not None:
        return root / PROJECT_CACHE
    return default_cache_dir()


class TextDisk(diskcache.Disk):
    """diskcache's storage of keys and values, for text only: each is stored as the text it is
    (in the database, or in a file beside it past `min_file_size`), and nothing is pickled, either
    way. An entry that is not text (a pickle, say) is refused on reading: a miss.

    Not diskcache's `JSONDisk`: that one zlib-compresses the keys as well as the values, so a key
    would depend on the zlib build (zlib-ng compresses differently: every entry would miss), and a
    secret in a stored answer would be hidden from a plain search of the files. The folders of
    format 1 (diskcache's default `Disk` holding JSON text) read the same way.
    """

    def put(self, key: Any) -> tuple[Any, bool]:
        if not isinstance(key, str):
            raise TypeError("a response cache key is text")
        return super().put(key)

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            raise ValueError("a pickled key (not written by moscopt)")
        return super().get(key, raw)

    def store(self, value: Any, read: bool, key: Any = UNKNOWN) -> Any:
        if not isinstance(value, str):
            raise TypeError("a response cache value is JSON text")
        return super().store(value, read, key=key)

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode == MODE_PICKLE:
            raise ValueError("a pickled entry (not written by moscopt)")
        return super().fetch(mode, filename, value, read)


class _Folder:
    """A diskcache folder opened on first use (and again after `close`). A folder that cannot be
    made or opened, or an operation that fails, warns once and is a miss; one that failed to open
    is not tried again until `close`."""

    def __init__(self, directory: Path, *, create: bool) -> None:
        self.directory = directory
        self.create = create
        self._cache: Any = None  # a diskcache.Cache once open
        self._failed = False
        self._warned = False

    def _open(self) -> Any:
        if self._cache is None and not self._failed:
            try:
                if self.create and not self.directory.exists():
                    self.directory.mkdir(parents=True, exist_ok=True)
                    # a folder we made is ours to keep out of version control
                    (self.directory / ".gitignore").write_text(
                        "# moscopt's LLM response cache: not for version control\n*\n"
                    )
                self._cache = diskcache.Cache(
                    str(self.directory), timeout=30, disk=TextDisk, **SETTINGS
                )
            except _FAILURES as e:
                self._failed = True
                self.warn("cannot be opened", e)
        return self._cache

    def warn(self, what: str, error: Exception) -> None:
        if not self._warned:
            self._warned = True
            log.warning("the response cache in %s %s (%s)", self.directory, what, error)

    def _use(
        self, what: str, default: Any, op: Callable[[Any], Any], misses: tuple[type, ...] = ()
    ) -> Any:
        """`op(cache)`, or `default` when the folder is not open or the operation fails (warned
        as `what` once); `misses` are errors of a bad entry, not of the folder: no warning."""
        cache = self._open()
        if cache is None:
            return default
        try:
            return op(cache)
        except (*_FAILURES, *misses) as e:
            if not isinstance(e, misses):
                self.warn(what, e)
            return default

    def get(self, key: str) -> Any:
        """The stored text of `key`, or None (absent, unreadable; an entry `TextDisk` refuses is
        a plain miss)."""
        bad_entry = (ValueError, TypeError)
        return self._use("cannot be read", None, lambda cache: cache.get(key), bad_entry)

    def set(self, key: str, text: str) -> bool:
        return bool(self._use("cannot be written", False, lambda cache: cache.set(key, text)))

    def set_many(self, entries: dict[str, str]) -> bool:
        """Store every entry in one transaction (one commit): all of them, or none."""

        def write(cache: Any) -> bool:
            with cache.transact(retry=True):
                for key, text in entries.items():
                    cache.set(key, text)
            return True

        return bool(self._use("cannot be written", False, write))

    def delete(self, key: str) -> None:
        self._use("cannot be written", None, lambda cache: cache.delete(key))

    def count(self) -> int:
        return int(self._use("cannot be read", 0, len))

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None  # other threads' connections close with it
        self._failed = False


class ResponseCache:
    """The folder `directory` (see above); `record` names the file listing the keys this run used
    (its folder, a run's `cache/`, may hold the run's format-1 cache)."""

    def __init__(self, directory: str | Path, *, record: Path | None = None) -> None:
        self.directory = Path(directory)
        self.record = record
        self._lock = threading.Lock()
        self._store = _Folder(self.directory, create=True)
        self._format2 = SqliteResponses(self.directory)
        self._used: set[str] | None = None
        self._pending: list[str] = []
        self._unwritten: dict[str, Completion] = {}  # answers put since the last commit
        self._due: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
        self.legacy: _Folder | None = None
        if record is not None and (record.parent / DB_FILE).is_file():
            self.legacy = _Folder(record.parent, create=False)

    def get(self, key: str) -> Completion | None:
        with self._lock:
            unwritten = self._unwritten.get(key)
            if unwritten is not None:  # as reading it back will give it
                return decode_entry(encode_entry(unwritten))
            found = decode_entry(self._store.get(key))
            if found is None:  # stored by format 2: copied here
                found = decode_entry(self._format2.get(key))
                if found is not None:
                    self._store.set(key, encode_entry(found))
            if found is not None:
                self._note(key)
            return found

    def migrate(self, key: str, old_key: str) -> Completion | None:
        """The answer the run's format-1 cache holds under `old_key`, copied here under `key`."""
        if self.legacy is None:
            return None
        with self._lock:
            found = decode_entry(self.legacy.get(old_key))
        if found is not None:
            self.put(key, found)
        return found

    def put(self, key: str, completion: Completion) -> None:
        """Keep `completion` under `key`: committed at once without a running event loop; on
        one, with the other answers of the same turn of the loop, in one transaction when the
        loop turns (see `commit`). `get` finds it meanwhile."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            self._unwritten[key] = completion
            if loop is not None and loop in self._due:
                return  # a commit is already due on this loop
            if loop is not None:
                self._due.add(loop)
        if loop is None:
            self.commit()
        else:
            loop.call_soon(self.commit)

    def commit(self) -> None:
        """Write the answers put since the last commit, in one transaction.

        On an event loop, `put` leaves this to the loop's next turn: the code that asked goes on
        at once (at one request at a time, the next request goes out before the answer is
        written, and the write overlaps its wait), and the answers that arrive together are
        committed together. The promise: an answer is committed (to SQLite's write-ahead log,
        which survives the process being killed) in its loop's next turn, before the loop waits
        again (on the network, a timer) and before any task its arrival wakes (a `gather` over
        the calls, say) runs on; and before `close` (or a blocking `complete`) returns. A process
        killed in between loses at most the answers of that one turn, which a resumed run asks
        again.
        """
        with self._lock:
            self._due.clear()
            batch = {key: encode_entry(c) for key, c in self._unwritten.items()}
            self._unwritten.clear()
            if batch and self._store.set_many(batch):
                for key in batch:
                    self._note(key)

    def discard(self, key: str) -> None:
        """Forget the entry under `key` (an answer that no longer serves: nothing if absent)."""
        with self._lock:
            self._unwritten.pop(key, None)
            self._store.delete(key)

    def __len__(self) -> int:
        self.commit()
        with self._lock:
            return self._store.count()

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._unwritten or self._store.get(key) is not None

    # -- the run's record ------------------------------------------------------------------------

    def _note(self, key: str) -> None:
        """Remember that this run used `key` (the caller holds the lock)."""
        if self.record is None:
            return
        if self._used is None:
            self._used = set(read_record(self.record))
        if key in self._used:
            return
        self._used.add(key)
        self._pending.append(key)
        if len(self._pending) >= FLUSH_EVERY:
            self._flush()

    def _flush(self) -> None:
        if self.record is None or not self._pending:
            return
        self.record.parent.mkdir(parents=True, exist_ok=True)
        with self.record.open("a", encoding="ascii") as f:
            f.write("".join(k + "\n" for k in self._pending))
        self._pending.clear()

    @property
    def used(self) -> int:
        """How many distinct entries this run has used (its record, this process included)."""
        with self._lock:
            if self.record is None:
                return 0
            if self._used is None:
                self._used = set(read_record(self.record))
            return len(self._used)

    def close(self) -> None:
        """Commit, write the record and close the stores (all reopen on the next use)."""
        self.commit()
        with self._lock:
            self._flush()
            self._store.close()
            self._format2.close()
            if self.legacy is not None:
                self.legacy.close()


def read_record(path: Path) -> list[str]:
    """The keys listed in a run's record (empty if it has none)."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if len(line) == 64]
