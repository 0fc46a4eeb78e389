"""The agent's ``python`` tool: run code in the sandbox, answer with a short observation."""

from __future__ import annotations

from dataclasses import dataclass

from moscopt.agent.tools.sandbox import ExecResult, run_python

_DESCRIPTION = (
    "Run a Python 3 program in a fresh sandbox and return what it printed. Each call starts "
    "from scratch (no state is kept between calls), so print() every value you need. The "
    "standard library is available; there is no network access, no subprocesses, and files can "
    "only be written in the current directory. Time limit {timeout:g} s, memory {memory_mb} MB."
)


@dataclass(frozen=True)
class PythonTool:
    """A callable tool: ``tool(code)`` returns the observation text for the model.

    The text is never longer than about ``max_output`` characters per stream plus a status line;
    it never raises for anything the code does. ``allow_unsandboxed`` (config key
    ``agent.allow_unsandboxed``) lets the code run on a machine where nothing isolates it from
    the user's files; without it the observation is the refusal (`UNSANDBOXED_REFUSED`). What
    isolates the code on this machine, for a run's events: `sandbox.isolation_available`.
    """

    timeout: float = 10.0
    memory_mb: int = 1024
    max_output: int = 4_000
    name: str = "python"
    allow_unsandboxed: bool = False

    @property
    def description(self) -> str:
        return _DESCRIPTION.format(timeout=self.timeout, memory_mb=self.memory_mb)

    def __call__(self, code: str) -> str:
        result = run_python(
            code,
            timeout=self.timeout,
            memory_mb=self.memory_mb,
            max_output=self.max_output,
            allow_unsandboxed=self.allow_unsandboxed,
        )
        return format_observation(result, timeout=self.timeout)


def format_observation(result: ExecResult, *, timeout: float) -> str:
    """A short text for the model: stdout, then stderr, then what went wrong (if anything)."""
    parts: list[str] = []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if result.timed_out:
        parts.append(f"[error: timed out after {timeout:g} s]")
    elif result.killed_reason is not None:
        parts.append(f"[error: {result.killed_reason}]")
    elif result.exit_code not in (0, None):
        parts.append(f"[exit code {result.exit_code}]")
    if not parts:
        parts.append("[no output]")
    return "\n".join(parts)
