"""Writing an export folder: refuse to clobber, replace as a whole, every file atomic.

The files are first written (each atomically) into a hidden sibling folder; then the old export,
if any, is renamed away, the new folder renamed into place, and the old one deleted. A reader
sees the old export or the new one, never a mix. Only a folder that is an export (it holds a
manifest) or is empty may be replaced, and only with `force`: `-o .` never deletes a project;
a symbolic link (dangling or not) is never written through nor replaced (`check_output_path`).
Its files and folders follow the umask (0644 and 0755 under umask 022), even inside a private
run: an export is made to be copied and read.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from moscopt.errors import UserError
from moscopt.exports.manifest import MANIFEST_FILE
from moscopt.run.fsio import atomic_write_text, check_output_path

if TYPE_CHECKING:
    from moscopt.core.skills import Skill


def check_target(out: Path, *, force: bool) -> None:
    """Raise `UserError` (nothing touched) unless `out` may be written."""
    check_output_path(out, replaced=True)
    if not out.exists():
        return
    if not out.is_dir():
        raise UserError("exists and is not a directory", path=out)
    if not any(out.iterdir()):
        return
    if not (out / MANIFEST_FILE).is_file():
        raise UserError(
            f"exists and is not a moscopt export (no {MANIFEST_FILE}); choose another -o",
            path=out,
        )
    if not force:
        raise UserError("an export is already there: pass --force to overwrite it", path=out)


def skill_paths(skills: Sequence[Skill]) -> list[str]:
    """The files `write_tree` writes for `skills`: each one's SKILL.md and folder files."""
    return [
        f"skills/{s.name}/{rel}" for s in skills for rel in ("SKILL.md", *(f.path for f in s.files))
    ]


def write_tree(
    out: Path,
    files: Mapping[str, str],
    *,
    force: bool,
    skills: Sequence[Skill] = (),
    check: Callable[[Path], None] | None = None,
) -> None:
    """Make `out` hold exactly `files` (relative path -> text) and `skills` as whole folders
    (`skills/<name>/`: SKILL.md and every other file of the folder, with its mode). `check`
    sees the written folder before it replaces anything; what it raises leaves `out` as it
    was."""
    check_target(out, force=force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}"
    staging = out.parent / f".{out.name}.new-{tag}"
    retired = out.parent / f".{out.name}.old-{tag}"
    for leftover in (staging, retired):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        for rel in sorted(files):
            atomic_write_text(staging / rel, files[rel], shared=True)  # modes: the umask's
        for skill in skills:
            skill.dump(staging / "skills" / skill.name)
        if check is not None:
            check(staging)
        if out.exists():
            os.replace(out, retired)
        os.replace(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(retired, ignore_errors=True)
