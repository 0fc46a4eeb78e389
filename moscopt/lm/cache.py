"""The response cache: one SQLite file shared by every run of a project, keyed by `LMRequest.key()`.

Where it lives (`shared_cache_dir`): `llm.cache_dir` if set; else `$MOSCOPT_CACHE_DIR`; else
`<project>/.moscopt/cache/` for the project (the nearest `moscopt.yaml` above the run, or above
the working directory without a run); else the user-level `default_cache_dir()`. The key is a
hash of what determines the answer (model identity, messages, sampling, seed, schema, sample
index) and not of the endpoint's address, so a rerun into a new run directory, a resumed run and
a local server restarted on another port all find the answers they got before.

A run keeps a record of the entries it used (`RECORD_FILE` in its `cache/` folder: one key per
line, appended as it goes), so what a run depended on can be listed, copied or kept. A run
written before the shared cache still has its own answers in that folder: `legacy` reads them
(see `moscopt.lm.legacy`), so such a run resumes without asking again.

Values are JSON (never pickle) holding only the answer: text, token counts, finish reason, the
model. Requests, keys and headers are not stored, and an answer's text is scrubbed of secret
values (`moscopt.lm.redact.scrub_secrets`: the keys in the environment, in their simple
encodings) before it is, whoever wrote it. Entries never expire: a resumed or repeated
step must find every answer it got before. An entry that cannot be read or decoded is a miss
(and is overwritten by the next answer), never a crash: not JSON, nested too deeply, token
counts that are not counts (negative, fractional, 1e400). Safe across threads and processes.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from moscopt.config import CONFIG_FILE, LLMConfig
from moscopt.lm.base import Completion, ToolCall, Usage
from moscopt.lm.legacy import LegacyRunCache
from moscopt.lm.redact import scrub_secrets
from moscopt.lm.wire import dumps, loads, model_text, tokens

log = logging.getLogger("moscopt.lm")
CACHE_ENV = "MOSCOPT_CACHE_DIR"
HOME_ENV = "MOSCOPT_HOME"
PROJECT_CACHE = Path(".moscopt") / "cache"
DB_FILE = "responses.sqlite3"
RECORD_FILE = "used-keys.txt"
FLUSH_EVERY = 64  # record lines buffered before they are appended


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


class ResponseCache:
    """A directory holding `DB_FILE`; `record` names the file listing the keys this run used."""

    def __init__(self, directory: str | Path, *, record: Path | None = None) -> None:
        self.directory = Path(directory)
        self.record = record
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._used: set[str] | None = None
        self._pending: list[str] = []
        self._warned = False
        self.legacy: LegacyRunCache | None = None
        if record is not None and LegacyRunCache.found_in(record.parent):
            self.legacy = LegacyRunCache(record.parent)

    # -- storage ---------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            fresh = not self.directory.exists()
            self.directory.mkdir(parents=True, exist_ok=True)
            if fresh:  # a folder we made is ours to keep out of version control
                ignore = self.directory / ".gitignore"
                ignore.write_text("# moscopt's LLM response cache: not for version control\n*\n")
            path = self.directory / DB_FILE
            db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
            db.text_factory = bytes  # a row that is not UTF-8 decodes in `_decode`, as a miss
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses "
                "(key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
            )
            self._db = db
        return self._db

    def _warn(self, what: str, error: Exception) -> None:
        if not self._warned:
            self._warned = True
            log.warning("the response cache in %s %s (%s)", self.directory, what, error)

    def get(self, key: str) -> Completion | None:
        with self._lock:
            try:
                row = (
                    self._conn()
                    .execute("SELECT value FROM responses WHERE key = ?", (key,))
                    .fetchone()
                )
            except (sqlite3.DatabaseError, OSError) as e:  # damaged or unwritable: work on
                self._warn("cannot be read", e)
                return None
            if row is None:
                return None
            found = _decode(row[0])
            if found is not None:
                self._note(key)
            return found

    def migrate(self, key: str, old_key: str) -> Completion | None:
        """The answer the run's old cache holds under `old_key`, copied here under `key`."""
        if self.legacy is None:
            return None
        with self._lock:
            found = _decode(self.legacy.get(old_key))
        if found is not None:
            self.put(key, found)
        return found

    def put(self, key: str, completion: Completion) -> None:
        entry: dict[str, Any] = {
            "text": scrub_secrets(completion.text),
            "model": completion.model,
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
            "cached_tokens": completion.usage.cached_tokens,
            "finish_reason": completion.finish_reason,
        }
        if completion.tool_calls:  # only then: entries without tool calls are as before
            entry["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": scrub_secrets(c.arguments)}
                for c in completion.tool_calls
            ]
        value = dumps(entry)
        with self._lock:
            try:
                self._conn().execute(
                    "INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, value)
                )
            except (sqlite3.DatabaseError, OSError) as e:
                self._warn("cannot be written", e)
                return
            self._note(key)

    def discard(self, key: str) -> None:
        """Forget the entry under `key` (an answer that no longer serves: nothing if absent)."""
        with self._lock:
            try:
                self._conn().execute("DELETE FROM responses WHERE key = ?", (key,))
            except (sqlite3.DatabaseError, OSError) as e:
                self._warn("cannot be written", e)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def __contains__(self, key: str) -> bool:
        with self._lock:
            row = self._conn().execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone()
            return row is not None

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
        """Write the record and close the database (both reopen on the next use)."""
        with self._lock:
            self._flush()
            if self._db is not None:
                self._db.close()
                self._db = None
            if self.legacy is not None:
                self.legacy.close()


def read_record(path: Path) -> list[str]:
    """The keys listed in a run's record (empty if it has none)."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if len(line) == 64]


def _decode(value: Any) -> Completion | None:
    """The completion stored in `value`, or None when it is not a readable entry."""
    try:
        entry = loads(value if isinstance(value, bytes | str) else b"")
        finish = entry.get("finish_reason")
        return Completion(
            text=model_text(_str(entry["text"])),
            model=_str(entry["model"]),
            usage=Usage(
                _count(entry["prompt_tokens"]),
                _count(entry["completion_tokens"]),
                _count(entry.get("cached_tokens") or 0),
            ),
            finish_reason=model_text(_str(finish)) if finish is not None else None,
            tool_calls=tuple(
                ToolCall(
                    _str(c["id"]), model_text(_str(c["name"])), model_text(_str(c["arguments"]))
                )
                for c in entry.get("tool_calls") or ()
            ),
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
        return None  # a damaged entry is a miss, never a crash


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _count(value: Any) -> int:
    found = tokens(value)
    if found is None:
        raise ValueError("not a token count")
    return found
