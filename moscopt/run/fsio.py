"""The file primitives every moscopt write goes through.

Writes are atomic: the bytes go to a temporary file in the same directory, are flushed and
fsynced, then `os.replace` swaps it in. A process killed at any instant leaves either the old
file or the new one, never a mix. Reads decode UTF-8 and name the file when they cannot.

Modes follow the directory: a new file is readable by group and others only where its
directory lets them list it (`0o600 | dir_mode & 0o044`), a new directory likewise
(`0o700 | parent_mode & 0o055`), so everything written inside a private run directory (0700)
is private too (0600), and files elsewhere keep the usual 0644. Files other tools and people
read (skill files, export trees) are written `shared=True`: they follow the umask as `cp` and
`mkdir` would (0644 and 0755 under umask 022) wherever they are, so a trained skill copied out
of a private run (into `~/.claude/skills`, a container, another user's folder) stays readable.

Text written (files and log lines) never carries the value of a secret environment variable
(`*_API_KEY` and the like, see `moscopt.lm.redact.scrub_secrets`). A write the disk refuses
(full, read-only, no permission) is a `StorageError` naming the file: one line, exit code 1.
Text a model wrote is shown and stored without terminal control sequences (`strip_controls`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from moscopt.core import jsonio
from moscopt.errors import StorageError, UserError

# OS errors that mean the disk refused a write (not a bug in moscopt).
STORAGE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EFBIG,
        errno.EIO,
        errno.ENAMETOOLONG,
    }
)


@contextlib.contextmanager
def storage(path: str | Path) -> Iterator[None]:
    """Turn an OSError of the disk (full, read-only, no permission) into a `StorageError`."""
    try:
        yield
    except OSError as e:
        if e.errno in STORAGE_ERRNOS:
            raise StorageError(path, e) from None
        raise


def file_mode(directory: str | Path) -> int:
    """The mode of a new file in `directory`: private unless the directory is readable."""
    try:
        return 0o600 | (os.stat(directory).st_mode & 0o044)
    except OSError:
        return 0o600


def umask() -> int:
    """The process's umask (read from /proc where it can be, without changing it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)  # no /proc: the classic read, which sets it for an instant
    os.umask(current)
    return current


def make_dirs(path: str | Path, *, shared: bool = False) -> None:
    """`mkdir -p` where each new directory is private unless its parent is readable;
    `shared`: each new directory follows the umask (0755 under 022) wherever it is."""
    path = Path(path)
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    with storage(path):
        for d in reversed(missing):
            mode = 0o777 if shared else 0o700 | (os.stat(d.parent).st_mode & 0o055)
            with contextlib.suppress(FileExistsError):
                os.mkdir(d, mode)
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))


@contextlib.contextmanager
def atomic_writer(path: str | Path, *, shared: bool = False) -> Iterator[IO[bytes]]:
    """A binary file that replaces `path` atomically when the block ends without an error.

    For outputs too big to hold in memory (streamed evaluation results); the caller writes
    text it has passed through `scrub` itself. `shared`: the file (and any directory made for
    it) follows the umask, not the directory's privacy (module docstring).
    """
    path = Path(path)
    make_dirs(path.parent, shared=shared)
    with storage(path):
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~umask() if shared else file_mode(path.parent))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes, *, shared: bool = False) -> None:
    """Replace `path` with `data` atomically, creating parent directories as needed."""
    with atomic_writer(path, shared=shared) as f:
        f.write(data)


def atomic_write_all(files: dict[Path, bytes]) -> None:
    """Write each file atomically (a set of outputs: a page and its images); if one fails,
    remove those this call created, then raise, so a failed command leaves no stray file."""
    created: list[Path] = []
    try:
        for target, data in files.items():
            existed = target.exists()
            atomic_write_bytes(target, data)
            if not existed:
                created.append(target)
    except BaseException:
        for target in created:
            with contextlib.suppress(OSError):
                target.unlink()
        raise


def scrub(text: str) -> str:
    """`text` without the values of secret environment variables."""
    from moscopt.lm.redact import scrub_secrets

    return scrub_secrets(text)


# C0 controls but tab and newline, DEL, C1 controls (ESC starts every terminal sequence)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# whole terminal sequences, removed first so no payload is left behind: OSC/DCS/APC/PM/SOS
# strings (to BEL or ST), CSI sequences (ESC [ or C1 CSI), and two-character escapes
_SEQUENCE = re.compile(
    "(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\\\|\x9c)?"
    "|(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]?"
    "|\x1b[ -~]?"
)


def strip_controls(text: str) -> str:
    """`text` without terminal control characters: CR LF becomes LF, and every other C0/C1
    control but newline and tab (ESC, BEL, CR, backspace, DEL...) is removed."""
    if _CONTROL.search(text) is None:  # the common case: one scan, nothing to do
        return text
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def check_output_path(path: str | Path, *, replaced: bool = False) -> None:
    """Refuse (`UserError`, exit 2, nothing touched) an output path the user named (`-o`) that
    moscopt must not write through: a dangling symbolic link, a link to a file (an atomic
    replace would swap the link itself for a file), any link when the path is `replaced` as a
    whole (an export folder), or a path under something that is not a folder. A link to a
    folder that is written into (`-o reports/` for a report) is fine."""
    path = Path(path)
    if path.is_symlink() and (replaced or not path.is_dir()):
        what = "a dangling symbolic link" if not path.exists() else "a symbolic link"
        raise UserError(
            f"is {what} (to {os.readlink(path)!r}): moscopt does not write through or replace "
            "links; remove it or choose another -o",
            path=path,
        )
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise UserError(f"cannot be written: {parent} is not a folder", path=path)
            return


def atomic_write_text(path: str | Path, text: str, *, shared: bool = False) -> None:
    atomic_write_bytes(path, scrub(text).encode("utf-8"), shared=shared)


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
    data = (scrub(line).rstrip("\n") + "\n").encode("utf-8")
    with storage(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, file_mode(Path(path).parent))
        try:
            os.write(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)


def open_for_reading(path: str | Path) -> IO[bytes]:
    """`open(path, "rb")`; a missing or unreadable file is a `UserError` naming it."""
    path = Path(path)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise UserError("file not found", path=path) from None
    except IsADirectoryError:
        raise UserError("expected a file, found a directory", path=path) from None
    except PermissionError:
        raise UserError("permission denied", path=path) from None


def iter_lines(stream: IO[bytes], path: str | Path) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, ended by a newline) for each line of a UTF-8 stream, one at a time.

    Lines are numbered as `read_text(path).split("\\n")` numbers them (CRLF and a lone CR end a
    line; a leading BOM is dropped), without holding more than one line in memory. Bytes that
    are not UTF-8 are a `UserError` naming the file, the line and the byte offset.
    """
    number, offset = 0, 0
    for raw in stream:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            bad = raw[e.start : e.start + 1]
            raise UserError(
                f"not valid UTF-8 (byte {offset + e.start}: {bad!r})", path=path, line=number + 1
            ) from None
        if number == 0 and text.startswith("\ufeff"):
            text = text[1:]
        offset += len(raw)
        ended = text.endswith("\n")
        text = text[:-1] if ended else text
        if text.endswith("\r"):
            text, ended = text[:-1], True
        parts = text.split("\r")
        for i, part in enumerate(parts):
            number += 1
            yield number, part, ended or i < len(parts) - 1


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of an append-only log, skipping a torn last line.

    The file is read one line at a time. A malformed line in the middle of the file is
    corruption, not a torn write, and raises a `UserError` naming the file and line.
    """
    path = Path(path)
    if not path.exists():
        return
    with open_for_reading(path) as f:
        for number, raw, ended in iter_lines(f, path):
            if not raw.strip():
                continue
            try:
                obj = jsonio.loads(raw)
            except json.JSONDecodeError as e:
                if not ended:  # torn write at the end: the process died mid-append
                    return
                raise UserError(f"bad JSON line: {e.msg}", path=path, line=number) from None
            if not isinstance(obj, dict):
                raise UserError("each line must be a JSON object", path=path, line=number)
            yield obj


def repair_jsonl_tail(path: str | Path) -> bool:
    """Drop a torn (newline-less) last line so that the next append starts on a fresh line."""
    path = Path(path)
    if not path.exists():
        return False
    with storage(path), open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return False
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return False
        cut, chunk = 0, 1 << 16
        end = size
        while end > 0:  # the last newline, reading back from the end a chunk at a time
            start = max(0, end - chunk)
            f.seek(start)
            found = f.read(end - start).rfind(b"\n")
            if found >= 0:
                cut = start + found + 1
                break
            end = start
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
