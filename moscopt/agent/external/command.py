"""`AgentCommand`: the external agent's command line and how a task reaches it.

Placeholders in the command's arguments (replaced inside each argument, which stays one
argument; no shell is involved): `{task}` the task text, `{task_file}` the path of `TASK.md`
holding it, `{workdir}` the task's working folder, `{skills_dir}` the first skills folder,
`{answer_file}` the answer file's path, `{cwd}` the folder moscopt was started in (your
project: for a script of yours, `python3 {cwd}/my_agent.py`). Without `{task}` or `{task_file}`
the task is written to the command's stdin. A string command is split as a shell would split
it (`shlex.split`). Placeholders are filled in one pass: braces in the values (a task that
mentions `{cwd}`) are never expanded again.

`identity()` is what the result cache keys on: the command with `{cwd}` resolved and its
program found on PATH, and a SHA-256 of each file it names (the program, a script argument):
two projects with different agent scripts at the same relative path never share answers, and
an edited agent is run again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from moscopt.errors import UserError

if TYPE_CHECKING:
    from moscopt.config import AgentConfig

PLACEHOLDERS = ("{task}", "{task_file}", "{workdir}", "{skills_dir}", "{answer_file}", "{cwd}")
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))
TASK_FILE = "TASK.md"
DIGEST_BYTES = 64 * 1024 * 1024  # files named by the command larger than this: size and mtime


@dataclass(frozen=True)
class AgentCommand:
    """What to run per task; built once from the config (`from_config`)."""

    argv: tuple[str, ...]
    skills_paths: tuple[str, ...]
    timeout: float
    answer_file: str | None = None
    parallel: int = 4
    cwd: str = ""  # where moscopt was started: the `{cwd}` placeholder
    env: tuple[str, ...] = ()  # `agent.env`: the variables it sees beyond the basic ones
    cache: bool = True  # `agent.cache`: replay finished tasks from the response cache

    @classmethod
    def from_config(cls, agent: AgentConfig) -> AgentCommand:
        """The command `agent` describes; a `UserError` naming `agent.command` if it is empty
        or its program cannot be found."""
        from moscopt.agent.external.workspace import DEFAULT_SKILLS_PATHS

        raw = agent.command
        try:
            argv = shlex.split(raw) if isinstance(raw, str) else list(raw or [])
        except ValueError as e:
            raise UserError(f"cannot be split into arguments: {e}", field="agent.command") from None
        if not argv or not argv[0].strip():
            raise UserError("is empty: give the agent's command line", field="agent.command")
        cwd = os.getcwd()
        program = argv[0].replace("{cwd}", cwd)
        if shutil.which(program) is None:
            raise UserError(
                f"program {program!r} not found (not on PATH, or not executable)",
                field="agent.command",
            )
        paths = agent.skills_path
        skills_paths = (
            DEFAULT_SKILLS_PATHS if paths is None else (paths,) if isinstance(paths, str) else paths
        )
        return cls(
            argv=tuple(argv),
            skills_paths=tuple(skills_paths),
            timeout=agent.timeout,
            answer_file=agent.answer_file,
            parallel=agent.parallel,
            cwd=cwd,
            env=tuple(agent.env),
            cache=agent.cache,
        )

    @property
    def task_as_argument(self) -> bool:
        return any("{task}" in a or "{task_file}" in a for a in self.argv)

    def render(self, values: Mapping[str, str]) -> list[str]:
        """The argument list with the placeholders filled from `values` (keys without braces)."""
        values = {"cwd": self.cwd, **values}
        return [
            _PLACEHOLDER.sub(lambda m: values.get(m.group(0)[1:-1], ""), arg) for arg in self.argv
        ]

    def identity(self) -> dict[str, object]:
        """What about the command determines its answers (part of the result cache key): the
        command with `{cwd}` filled and its program resolved, the files it names (digests),
        where skills and the answer go, and which variables it sees."""
        argv = [a.replace("{cwd}", self.cwd) for a in self.argv]
        program = shutil.which(argv[0], path=os.environ.get("PATH")) or argv[0]
        program = os.path.realpath(program) if os.path.isfile(program) else program
        files = {a: file_digest(a, self.cwd) for a in [program, *argv[1:]]}
        return {
            "argv": [program, *argv[1:]],
            "files": {name: digest for name, digest in files.items() if digest is not None},
            "skills_paths": list(self.skills_paths),
            "answer_file": self.answer_file,
            "env": sorted(self.env),
        }


def describe(argv: Sequence[str]) -> str:
    """The command as one line for messages."""
    return shlex.join(list(argv))[:200]


def file_digest(arg: str, cwd: str) -> str | None:
    """The SHA-256 of the file `arg` names (relative to `cwd`), None if it names no file.
    A file past `DIGEST_BYTES` is identified by its size and modification time instead."""
    path = Path(cwd, arg) if cwd else Path(arg)
    try:
        if not path.is_file():
            return None
        stat = path.stat()
        if stat.st_size > DIGEST_BYTES:
            return f"size={stat.st_size},mtime={stat.st_mtime_ns}"
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except (OSError, ValueError):
        return None


def task_file(workdir: Path) -> Path:
    return workdir / TASK_FILE
