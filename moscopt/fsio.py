"""The file primitives every moscopt write goes through.

Writes are atomic: the bytes go to a temporary file in the same directory, are flushed and
fsynced, then `os.replace` swaps it in. A process killed at any instant leaves either the old
file or the new one, never a mix. Reads decode UTF-8 and name the file when they cannot.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from moscopt.errors import UserError


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace `path` with `data` atomically, creating parent directories as needed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no insignificant whitespace (for hashing)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def pretty_json(obj: Any) -> str:
    """Deterministic JSON for files a person may read: sorted keys, indented, trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, pretty_json(obj))


def read_text(path: str | Path) -> str:
    """Read a UTF-8 text file; a missing or undecodable file is a `UserError` naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError("file not found", path=path) from None
    except IsADirectoryError:
        raise UserError("expected a file, found a directory", path=path) from None
    except PermissionError:
        raise UserError("permission denied", path=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise UserError(
            f"not valid UTF-8 (byte {e.start}: {data[e.start : e.start + 1]!r})",
            path=path,
            line=line,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def append_line(path: str | Path, line: str, *, sync: bool = False) -> None:
    """Append one line with a single `write` on an O_APPEND descriptor.

    A line is either fully in the file or (if the process dies mid-write) a truncated tail that
    readers of append-only logs skip; see `iter_jsonl`.
    """
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of an append-only log, skipping a torn last line.

    A malformed line in the middle of the file is corruption, not a torn write, and raises a
    `UserError` naming the file and line.
    """
    path = Path(path)
    if not path.exists():
        return
    lines = read_text(path).split("\n")
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            if i == last:  # torn write at the end: the process died mid-append
                return
            raise UserError(f"bad JSON line: {e.msg}", path=path, line=i + 1) from None
        if not isinstance(obj, dict):
            raise UserError("each line must be a JSON object", path=path, line=i + 1)
        yield obj


def repair_jsonl_tail(path: str | Path) -> bool:
    """Drop a torn (newline-less) last line so that the next append starts on a fresh line."""
    path = Path(path)
    if not path.exists():
        return False
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    cut = data.rfind(b"\n") + 1
    with open(path, "r+b") as f:
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
    return True


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
