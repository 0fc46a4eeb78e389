"""Adopt a run's trained skills into an agent's skills folder, with a backup; undo it.

A run stages its proposal in `<run>/skills` (one folder per skill) with its evidence in the
run's events and its certificate; nothing live changes until `adopt`. `adopt` copies each
skill folder whole (every file: scripts, references, assets; modes and times kept, symbolic
links copied as links) into the destination, first moving the folder it replaces into a
backup, and refuses a run whose certificate says `worse` unless forced. The `gate` skill is
moscopt's router: it goes only into a folder that already has one (a moscopt seed library) or
when named. Each adoption is recorded in `<backups>/<stamp>/adoption.json` (what was
replaced, what was new); `undo` restores the latest adoption into a folder and marks it undone.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_text

SKILL_FILE = "SKILL.md"
GATE = "gate"
RECORD = "adoption.json"


@dataclass
class Adoption:
    to: Path
    backup: Path
    replaced: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    diff: str = ""


def run_skills(skills_dir: Path) -> list[str]:
    if not skills_dir.is_dir():
        raise UserError("the run has no skills folder (did it save a pool?)", path=skills_dir)
    return sorted(p.name for p in skills_dir.iterdir() if (p / SKILL_FILE).is_file())


def choose(available: list[str], wanted: list[str], to: Path) -> list[str]:
    if wanted:
        unknown = [n for n in wanted if n not in available]
        if unknown:
            raise UserError(
                f"no skill {unknown[0]!r} in the run (it has: {', '.join(available)})",
                field="skill",
            )
        return wanted
    keep_gate = (to / GATE / SKILL_FILE).is_file()
    return [n for n in available if n != GATE or keep_gate]


def check_verdict(verdict: str | None, force: bool) -> None:
    if verdict == "worse" and not force:
        raise UserError(
            "the run's certificate says its pool is WORSE than the one it started from on "
            "held-out tasks: not adopted (--force adopts it anyway)",
            field="run",
        )


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copy2)


def adopt(
    skills_dir: Path, to: Path, names: list[str], backups: Path, *, run: str = ""
) -> Adoption:
    """Copy the skills `names` of `skills_dir` into `to`; see the module docstring."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    result = Adoption(to=to.resolve(), backup=backups / stamp)
    to.mkdir(parents=True, exist_ok=True)
    result.backup.mkdir(parents=True)
    empty = result.backup / ".empty"  # the "before" of a new skill's diff
    empty.mkdir()
    staged = Path(tempfile.mkdtemp(prefix=".adopt-", dir=to))
    try:
        for name in names:  # copy everything first: a failed copy changes nothing
            _copy(skills_dir / name, staged / name)
        for name in names:
            old = to / name
            if old.exists() or old.is_symlink():
                os.replace(old, result.backup / name)
                result.replaced.append(name)
            else:
                result.added.append(name)
            os.replace(staged / name, old)
        record = {
            "to": str(result.to),
            "run": run,
            "replaced": result.replaced,
            "added": result.added,
            "time": stamp,
        }
        atomic_write_text(result.backup / RECORD, json.dumps(record, indent=2) + "\n")
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    result.diff = "".join(
        git_diff(result.backup / n if n in result.replaced else empty, to / n) for n in names
    )
    return result


def latest_adoption(backups: Path, to: Path) -> Path | None:
    """The backup folder of the latest adoption into `to` not undone yet."""
    if not backups.is_dir():
        return None
    target = str(to.resolve())
    for folder in sorted(backups.iterdir(), reverse=True):
        record = folder / RECORD
        if record.is_file():
            try:
                data = json.loads(record.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if data.get("to") == target:
                return folder
    return None


def undo(backups: Path, to: Path) -> Adoption:
    """Put back what the latest adoption into `to` replaced, remove what it added."""
    folder = latest_adoption(backups, to)
    if folder is None:
        raise UserError("no adoption to undo in this folder", path=to)
    data = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    result = Adoption(to=to.resolve(), backup=folder)
    for name in data.get("added", []):
        shutil.rmtree(to / name, ignore_errors=True)
        result.added.append(name)
    for name in data.get("replaced", []):
        current = to / name
        if current.is_dir() and not current.is_symlink():
            shutil.rmtree(current)
        elif current.exists() or current.is_symlink():
            current.unlink()
        os.replace(folder / name, current)
        result.replaced.append(name)
    os.replace(folder / RECORD, folder / (RECORD + ".undone"))
    return result


def git_diff(old: Path, new: Path) -> str:
    """`git diff --no-index` of two folders (empty when git is missing or they are equal)."""
    if shutil.which("git") is None:
        return ""
    done = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", "--", str(old), str(new)],
        capture_output=True,
        text=True,
        errors="replace",
    )
    return done.stdout
