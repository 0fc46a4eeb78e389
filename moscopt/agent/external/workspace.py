"""A task's working folder: fresh, holding the activated skills where the agent looks.

Claude Code reads project skills from `.claude/skills/<name>/SKILL.md`; agents that follow the
cross-agent convention (Codex CLI, and others) read `.agents/skills/<name>/SKILL.md`. Both are
written by default; `agent.skills_path` names other folders (relative to the working folder).
The gate skill is never written: routing is moscopt's job, the agent sees only its K skills.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from moscopt.core.skills import Skill

DEFAULT_SKILLS_PATHS: tuple[str, ...] = (".claude/skills", ".agents/skills")
PREFIX = "moscopt-agent-"


@contextmanager
def workdir() -> Iterator[Path]:
    """A fresh, private, empty folder, removed afterwards (whatever the agent left in it)."""
    path = Path(tempfile.mkdtemp(prefix=PREFIX))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def materialise(root: Path, skills: Sequence[Skill], paths: Sequence[str]) -> list[Path]:
    """Write each skill's folder (SKILL.md and its other files) under every folder of `paths`
    in `root`; the skills folders (absolute), in the order of `paths`. Every folder exists
    afterwards, even with no skills."""
    folders = []
    for rel in paths:
        folder = root / rel
        folder.mkdir(parents=True, exist_ok=True)
        for skill in skills:  # the whole folder: its scripts, references and assets too
            skill.dump(folder / skill.name)
        folders.append(folder)
    return folders
