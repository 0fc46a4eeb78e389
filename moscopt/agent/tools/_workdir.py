"""The per-run temporary directory of the sandbox: created fresh, always removed.

Layout (``base`` is private to the launching user, except that the sandbox uid may traverse it)::

    base/            0711, launching user
      main.py        the code, 0600: read by the bootstrap before it drops privileges
      stdin          the data for the child's standard input, 0600 (opened by the parent)
      work/          the child's working directory, HOME and TMPDIR, owned by the sandbox uid
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


@dataclass(frozen=True)
class RunDirs:
    base: Path
    work: Path
    code: Path
    stdin: Path


def _safe_relative(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or ".." in rel.parts or rel.parts in ((), (".",)):
        raise ValueError(f"sandbox file name must be a relative path inside the work dir: {name!r}")
    return rel


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


@contextlib.contextmanager
def run_dirs(
    code: str, stdin: str, files: Mapping[str, str] | None, owner: tuple[int, int] | None
) -> Iterator[RunDirs]:
    """Create the run's directories (files written, ownership set) and remove them afterwards.

    Raises ValueError for a file name that is absolute or climbs out with ``..``.
    """
    relatives = {name: _safe_relative(name) for name in files or {}}
    base = Path(tempfile.mkdtemp(prefix="moscopt-sandbox-", dir=_parent_for(owner)))
    try:
        dirs = RunDirs(base, base / "work", base / "main.py", base / "stdin")
        _write_private(dirs.code, code)
        _write_private(dirs.stdin, stdin)
        dirs.work.mkdir(mode=0o700)
        for name, rel in relatives.items():
            target = dirs.work.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text((files or {})[name], encoding="utf-8")
        if owner is not None:
            os.chmod(base, 0o711)
            for path in [dirs.work, *dirs.work.rglob("*")]:
                os.chown(path, *owner, follow_symlinks=False)
        yield dirs
    finally:
        remove_tree(base)


def _parent_for(owner: tuple[int, int] | None) -> str | None:
    """Where the base goes: the temporary directory, unless the sandbox uid could not reach it.

    A private TMPDIR (inside a 0700 directory, say) is fine for the launching user, but the uid
    the code drops to must traverse every directory above its work dir. Then the base goes in
    the first world-traversable system temporary directory instead; it stays private (0711
    base, 0700 work dir of the sandbox uid)."""
    if owner is None or _traversable_by_others(tempfile.gettempdir()):
        return None
    for candidate in ("/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(candidate) and _traversable_by_others(candidate):
            return candidate
    return None


def _traversable_by_others(path: str) -> bool:
    current = Path(os.path.realpath(path))
    for directory in (current, *current.parents):
        try:
            if not os.stat(directory).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def remove_tree(path: Path) -> None:
    """Remove ``path`` even if the sandboxed code made parts of it unreadable or unwritable."""
    tried: set[str] = set()

    def make_writable_and_retry(func: object, failed: str, _exc: object) -> None:
        # Restore owner rights on the failing entry and its parent, then remove it (a directory
        # with the same handler, so that unreadable ones further down go too); once per entry.
        if failed in tried:
            return
        tried.add(failed)
        for target in (os.path.dirname(failed), failed):
            with contextlib.suppress(OSError):
                mode = os.lstat(target).st_mode
                if not stat.S_ISLNK(mode):
                    os.chmod(target, stat.S_IMODE(mode) | stat.S_IRWXU)
        with contextlib.suppress(FileNotFoundError):
            if os.path.isdir(failed) and not os.path.islink(failed):
                shutil.rmtree(failed, onerror=make_writable_and_retry)
            else:
                os.unlink(failed)

    shutil.rmtree(path, onerror=make_writable_and_retry)


# The most a run may hold in its work dir (its only writable place, also its HOME and TMPDIR),
# all files together: `watch` measures it every `_capture._POLL_SECONDS` and kills the run past
# it (killed_reason "disk-limit"). Each entry counts at least `ENTRY_BYTES`, so a flood of empty
# files or directories is bounded too.
DISK_LIMIT = 256 * 1024 * 1024
ENTRY_BYTES = 16 * 1024  # an inode, a block and directory entries, rounded up


def disk_usage(root: Path, limit: int) -> int | None:
    """The bytes the tree under `root` occupies (allocated blocks, each entry at least
    `ENTRY_BYTES`), counted until past `limit`; None when part of it cannot be read (a
    directory the code made unreadable hides what it holds: as good as past the bound)."""
    total, stack = 0, [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    total += max(info.st_blocks * 512, ENTRY_BYTES)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    if total > limit:
                        return total
        except FileNotFoundError:
            continue  # removed while counted
        except OSError:
            return None
    return total
