"""Tools the agent may call, and the sandbox that runs model-written code.

`run_python` / `ExecResult` (the sandbox, also used by the code graders) and `PythonTool` (the
agent's ``python`` tool) are the public names.
"""

from __future__ import annotations

from moscopt.agent.tools.python_tool import PythonTool
from moscopt.agent.tools.sandbox import ExecResult, run_python

__all__ = ["ExecResult", "PythonTool", "run_python"]
