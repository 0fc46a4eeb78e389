"""Reading the response caches of earlier versions, so that their runs still resume without
asking again (`moscopt.lm.cache` looks here when its own folder misses, and copies what it finds).

- Format 2 (the shared cache before diskcache): one SQLite file, `SQLITE_FILE`, in the shared
  cache folder, table `responses (key, value)` holding the entry's JSON as UTF-8, under the same
  keys as now. Read here with plain SQL (no library wrote it), never written.
- Format 1 (before the shared cache): each run's own `runs/<name>/cache/`, a diskcache folder
  (values JSON text) under keys that also hashed the endpoint's address (`legacy_key`). Its
  layout is the current store's, so `moscopt.lm.cache` opens it as one.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from moscopt.lm.base import LMRequest, public_url
from moscopt.run.fsio import canonical_json

SQLITE_FILE = "responses.sqlite3"


def legacy_key(request: LMRequest, api_base: str | None) -> str:
    """The key format 1 gave `request` sent to `api_base`."""
    fields = request.key_fields()
    fields["v"] = 1
    fields["api_base"] = public_url(api_base)
    return hashlib.sha256(canonical_json(fields).encode("utf-8", "surrogatepass")).hexdigest()


class SqliteResponses:
    """The format-2 file in `directory`, if there is one: read, never written. Whether it exists
    is looked at once (until `close`); a file that cannot be read is a miss."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / SQLITE_FILE
        self._db: sqlite3.Connection | None = None
        self._absent = False

    def get(self, key: str) -> bytes | None:
        """The stored JSON of `key` (UTF-8 bytes, undecoded), or None."""
        if self._absent:
            return None
        try:
            if self._db is None:
                if not self.path.is_file():
                    self._absent = True
                    return None
                self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
                self._db.text_factory = bytes  # a value that is not UTF-8 is a miss, later
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        except (sqlite3.Error, OSError):
            self._absent = True  # not a file we can read: those calls are made again
            return None
        return row[0] if row is not None and isinstance(row[0], bytes) else None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._absent = False
