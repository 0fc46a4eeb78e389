"""The files of a skill folder besides its SKILL.md: `scripts/`, `references/`, `assets/`, anything.

Agent Skills are folders: a skill may ship a script its instructions run, a reference its agent
reads on demand, a template or an image. moscopt edits only SKILL.md; every other file travels
with the skill verbatim (bytes and permission bits) through load, training, resume, every export
and the external agent's workspace, and counts in the pool's digest (a changed script is a
changed pool).

Bounds: at most `FOLDER_MAX_FILES` files and `FOLDER_MAX_BYTES` bytes per folder (a larger
folder is a `UserError` naming it); symbolic links are refused (a link could point anywhere on
the machine); `__pycache__` and `.git` folders are left out. Modes are kept except group and
world write, which are never written.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_bytes, make_dirs

SKILL_FILE = "SKILL.md"
FOLDER_MAX_FILES = 256
FOLDER_MAX_BYTES = 8 * 1024 * 1024
SKIPPED_DIRS = frozenset({"__pycache__", ".git"})
WRITE_MASK = 0o755  # modes are kept, but nothing is written group- or world-writable


class SkillFile(BaseModel):
    """One file of a skill folder: its path inside the folder (POSIX), mode bits and bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    mode: int = 0o644
    data: bytes = b""

    @field_validator("path")
    @classmethod
    def _check_path(cls, v: str) -> str:
        p = PurePosixPath(v)
        if not v or p.is_absolute() or ".." in p.parts or "\\" in v or str(p) != v:
            raise ValueError(f"{v!r} is not a plain relative path inside the skill folder")
        if v == SKILL_FILE:
            raise ValueError("SKILL.md is the skill itself, not one of its files")
        return v

    @field_validator("mode")
    @classmethod
    def _check_mode(cls, v: int) -> int:
        return int(v) & 0o777

    @property
    def executable(self) -> bool:
        return bool(self.mode & 0o111)

    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "mode": self.mode, "b64": base64.b64encode(self.data).decode()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SkillFile:
        raw = base64.b64decode(str(data.get("b64", "")), validate=True)
        return cls(path=str(data["path"]), mode=int(data.get("mode", 0o644)), data=raw)


def read_files(folder: Path) -> tuple[SkillFile, ...]:
    """Every file under `folder` but its top-level SKILL.md, sorted by path (bounded: module
    docstring). A `UserError` names the folder for a link, too many files or too many bytes."""
    out: list[SkillFile] = []
    total = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        here = Path(root)
        for d in dirs:
            if (here / d).is_symlink():
                raise UserError(_LINK, path=here / d)
        for name in sorted(names):
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if rel == SKILL_FILE:
                continue
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise UserError(_LINK, path=path)
            if not stat.S_ISREG(info.st_mode):
                continue  # a socket or a pipe is not a file a skill can ship
            total += info.st_size
            if len(out) >= FOLDER_MAX_FILES or total > FOLDER_MAX_BYTES:
                raise UserError(
                    f"the skill folder holds more than {FOLDER_MAX_FILES} files or "
                    f"{FOLDER_MAX_BYTES // (1024 * 1024)} MiB besides SKILL.md: "
                    "move large data out of the skill",
                    path=folder,
                )
            out.append(SkillFile(path=rel, mode=info.st_mode, data=path.read_bytes()))
    return tuple(out)


_LINK = "symbolic links are not allowed in a skill folder (copy the file into it instead)"


def write_files(folder: Path, files: Iterable[SkillFile], *, prune: bool = False) -> None:
    """Write `files` under `folder` (each atomically, only where its bytes or mode differ);
    with `prune`, remove the folder's other files (never SKILL.md) and the folders left empty."""
    keep: set[str] = set()
    for f in files:
        keep.add(f.path)
        target = folder / f.path
        mode = f.mode & WRITE_MASK
        if target.is_file() and not target.is_symlink() and target.read_bytes() == f.data:
            if stat.S_IMODE(target.stat().st_mode) != mode:
                os.chmod(target, mode)
            continue
        make_dirs(target.parent, shared=True)
        atomic_write_bytes(target, f.data, shared=True)
        os.chmod(target, mode)
    if not prune or not folder.is_dir():
        return
    for root, dirs, names in os.walk(folder, topdown=False):
        here = Path(root)
        for name in names:
            rel = (here / name).relative_to(folder).as_posix()
            if rel != SKILL_FILE and rel not in keep:
                (here / name).unlink()
        for d in dirs:
            sub = here / d
            if sub.is_dir() and not sub.is_symlink() and not any(sub.iterdir()):
                sub.rmdir()


def files_json(files: Iterable[SkillFile]) -> list[dict[str, Any]]:
    return [f.to_json() for f in sorted(files, key=lambda f: f.path)]


def files_from_json(data: Iterable[Mapping[str, Any]]) -> tuple[SkillFile, ...]:
    return tuple(sorted((SkillFile.from_json(d) for d in data), key=lambda f: f.path))
