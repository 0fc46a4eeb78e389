"""Where a run keeps the provider batches it submitted, so that a resumed run collects them.

One folder (`<run>/cache/batches/`, or `batches/` in the shared response cache for an
evaluation without a run), one readable JSON record per batch, written atomically:

    batch_abc.json          {"version": 1, "batch_id", "input_file_id", "model", "status",
                             "custom_ids": [...], "submitted", "finished"}
    batch_abc.output.jsonl  the provider's output file, saved as downloaded

A record is written as soon as the provider has accepted the batch (status `submitted`), before
anything waits on it, and rewritten with the batch's final status when it ends. The custom ids
are the requests' cache keys (`LMRequest.key`), so a resumed run that asks the same questions
finds the batch that holds them. One file per batch: two processes never rewrite each other's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from moscopt.core.jsonio import loads
from moscopt.run.fsio import atomic_write_bytes, atomic_write_json

VERSION = 1
PENDING = "submitted"
# The provider's terminal states; `completed` and `expired` may carry an output file.
TERMINAL = frozenset({"completed", "expired", "failed", "cancelled"})


@dataclass
class BatchRecord:
    """One submitted batch, as persisted."""

    batch_id: str
    input_file_id: str
    model: str
    custom_ids: list[str]
    status: str = PENDING
    submitted: float = field(default_factory=time.time)
    finished: float | None = None
    version: int = VERSION

    @property
    def pending(self) -> bool:
        return self.status not in TERMINAL

    @classmethod
    def from_json(cls, data: Any) -> BatchRecord | None:
        """The record in `data`, or None for anything that is not one (skipped, never fatal)."""
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return None
        ids = data.get("custom_ids")
        names = ("batch_id", "input_file_id", "model", "status")
        if not isinstance(ids, list) or not all(isinstance(data.get(k), str) for k in names):
            return None
        finished = data.get("finished")
        return cls(
            batch_id=data["batch_id"],
            input_file_id=data["input_file_id"],
            model=data["model"],
            custom_ids=[str(i) for i in ids],
            status=data["status"],
            submitted=float(data.get("submitted") or 0.0),
            finished=float(finished) if isinstance(finished, int | float) else None,
        )


class BatchStore:
    """The batch records of one folder (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, batch_id: str, suffix: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in batch_id)
        return self.directory / f"{safe}{suffix}"

    def records(self) -> Iterator[BatchRecord]:
        """Every readable record, oldest first."""
        if not self.directory.is_dir():
            return
        found = []
        for path in self.directory.glob("*.json"):
            try:
                record = BatchRecord.from_json(loads(path.read_bytes()))
            except (OSError, ValueError):
                continue  # half a record cannot exist (atomic writes); an unreadable one is skipped
            if record is not None:
                found.append(record)
        yield from sorted(found, key=lambda r: (r.submitted, r.batch_id))

    def save(self, record: BatchRecord) -> None:
        atomic_write_json(self._path(record.batch_id, ".json"), asdict(record))

    def save_output(self, batch_id: str, data: bytes) -> None:
        atomic_write_bytes(self._path(batch_id, ".output.jsonl"), data)

    def output(self, batch_id: str) -> bytes | None:
        """The saved output file of `batch_id`, or None."""
        try:
            return self._path(batch_id, ".output.jsonl").read_bytes()
        except OSError:
            return None
