"""`AgentCommand`: the external agent's command line and how a task reaches it.

Placeholders in the command's arguments (replaced inside each argument, which stays one
argument; no shell is involved): `{task}` the task text, `{task_file}` the path of `TASK.md`
holding it, `{workdir}` the task's working folder, `{skills_dir}` the first skills folder,
`{answer_file}` the answer file's path, `{cwd}` the folder moscopt was started in (your
project: for a script of yours, `python3 {cwd}/my_agent.py`). Without `{task}` or `{task_file}`
the task is written to the command's stdin. A string command is split as a shell would split
it (`shlex.split`).
"""

from __future__ import annotations

import os
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
TASK_FILE = "TASK.md"


@dataclass(frozen=True)
class AgentCommand:
    """What to run per task; built once from the config (`from_config`)."""

    argv: tuple[str, ...]
    skills_paths: tuple[str, ...]
    timeout: float
    answer_file: str | None = None
    parallel: int = 4
    cwd: str = ""  # where moscopt was started: the `{cwd}` placeholder

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
        )

    @property
    def task_as_argument(self) -> bool:
        return any("{task}" in a or "{task_file}" in a for a in self.argv)

    def render(self, values: Mapping[str, str]) -> list[str]:
        """The argument list with the placeholders filled from `values` (keys without braces)."""
        values = {"cwd": self.cwd, **values}
        out = []
        for arg in self.argv:
            for ph in PLACEHOLDERS:
                if ph in arg:
                    arg = arg.replace(ph, values.get(ph[1:-1], ""))
            out.append(arg)
        return out

    def identity(self) -> dict[str, object]:
        """What about the command determines its answers (part of the result cache key)."""
        return {
            "argv": list(self.argv),
            "skills_paths": list(self.skills_paths),
            "answer_file": self.answer_file,
        }


def describe(argv: Sequence[str]) -> str:
    """The command as one line for messages."""
    return shlex.join(list(argv))[:200]


def task_file(workdir: Path) -> Path:
    return workdir / TASK_FILE
