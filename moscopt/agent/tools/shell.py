"""The agent's `shell` tool: commands run inside the same sandbox as the `python` tool.

The sandbox (`moscopt.agent.tools.sandbox.run_python`) refuses execve and fork, so no real shell can
run inside it and none runs outside it: the commands are interpreted by a small POSIX-like shell
written in Python (`moscopt.agent.tools._minishell`: lists, pipelines, redirections, quoting and the
usual text tools as builtins), which runs as the sandboxed program. Each call gets a fresh work
directory; nothing is kept between calls. The tool is never on unless the benchmark or
`agent.tools` lists it. The observation is bounded like the python tool's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from moscopt.agent.tools.python_tool import format_observation
from moscopt.agent.tools.sandbox import run_python


@cache
def _interpreter() -> str:
    return (Path(__file__).with_name("_minishell.py")).read_text(encoding="utf-8")


def shell_program(script: str) -> str:
    """The Python program that runs `script` in the sandbox."""
    return f"{_interpreter()}\n\nsys.exit(run_script({script!r}))\n"


@dataclass(frozen=True)
class ShellTool:
    """A callable tool: ``tool(script)`` returns the observation text for the model."""

    timeout: float = 10.0
    memory_mb: int = 1024
    max_output: int = 4_000
    allow_unsandboxed: bool = False
    name: str = "shell"

    def __call__(self, script: str) -> str:
        result = run_python(
            shell_program(script),
            timeout=self.timeout,
            memory_mb=self.memory_mb,
            max_output=self.max_output,
            allow_unsandboxed=self.allow_unsandboxed,
        )
        return format_observation(result, timeout=self.timeout)
