"""Tools the agent may call, and the sandbox that runs model-written code.

`run_python` / `ExecResult` (the sandbox, also used by the code graders) and `PythonTool` (the
agent's ``python`` tool) are the public names, loaded on first use: an agent without the python
tool (and `moscopt eval` of a benchmark without tools) never imports the sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moscopt.agent.tools.python_tool import PythonTool
    from moscopt.agent.tools.sandbox import ExecResult, run_python

__all__ = ["ExecResult", "PythonTool", "run_python"]


def __getattr__(name: str) -> object:
    if name == "PythonTool":
        from moscopt.agent.tools.python_tool import PythonTool

        value: object = PythonTool
    elif name in ("ExecResult", "run_python"):
        from moscopt.agent.tools import sandbox

        value = getattr(sandbox, name)
    else:
        raise AttributeError(f"module 'moscopt.agent.tools' has no attribute {name!r}")
    globals()[name] = value  # found once, then an ordinary attribute
    return value
