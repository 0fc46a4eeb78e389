"""Reading the per-run cache of runs written before the shared cache (cache format 1).

Those runs kept their answers in `runs/<name>/cache/` (a diskcache directory: an SQLite
`cache.db`, values as JSON text) under keys that also hashed the endpoint's address. A resumed
old run looks there when the shared cache misses, so it replays the answers it already got; each
one found is copied into the shared cache under its current key. Read-only, never pickle, and
without diskcache: only text values stored in the database or in a file beside it are read.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from moscopt.lm.base import LMRequest, public_url
from moscopt.run.fsio import canonical_json

LEGACY_DB = "cache.db"
_TEXT = 3  # diskcache's MODE_TEXT


def legacy_key(request: LMRequest, api_base: str | None) -> str:
    """The key format 1 gave `request` sent to `api_base`."""
    fields = request.key_fields()
    fields["v"] = 1
    fields["api_base"] = public_url(api_base)
    return hashlib.sha256(canonical_json(fields).encode("utf-8", "surrogatepass")).hexdigest()


class LegacyRunCache:
    """A run's old `cache/` folder, read-only."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._db: sqlite3.Connection | None = None

    @staticmethod
    def found_in(directory: Path) -> bool:
        return (directory / LEGACY_DB).is_file()

    def get(self, key: str) -> bytes | None:
        """The stored text of `key` (as UTF-8 bytes), or None."""
        try:
            if self._db is None:
                uri = (self.directory / LEGACY_DB).resolve().as_uri() + "?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
                self._db.text_factory = bytes
            row = self._db.execute(
                "SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = 1", (key,)
            ).fetchone()
        except sqlite3.DatabaseError:
            return None  # not a cache we can read: the call is made again
        if row is None or row[0] != _TEXT:
            return None
        _, filename, value = row
        if filename:
            try:
                return (self.directory / filename.decode("utf-8", "replace")).read_bytes()
            except OSError:
                return None
        return value if isinstance(value, bytes) else None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
