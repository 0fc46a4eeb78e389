"""The agent's `python` tool: observation texts for each kind of outcome."""

from __future__ import annotations

import pytest

from moscopt.agent.tools import PythonTool
from moscopt.agent.tools.python_tool import format_observation
from moscopt.agent.tools.sandbox import ExecResult

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def _result(**changes: object) -> ExecResult:
    fields: dict[str, object] = {
        "stdout": "",
        "stderr": "",
        "exit_code": 0,
        "timed_out": False,
        "killed_reason": None,
        "duration": 0.05,
    }
    fields.update(changes)
    return ExecResult(**fields)  # type: ignore[arg-type]


def test_tool_identity_and_description() -> None:
    tool = PythonTool(timeout=5)
    assert tool.name == "python"
    assert "Python" in tool.description
    assert "5 s" in tool.description


def test_tool_runs_code_and_returns_stdout() -> None:
    assert PythonTool()("print(sum(range(101)))") == "5050"


def test_tool_reports_errors_without_raising() -> None:
    text = PythonTool()("1 / 0")
    assert "ZeroDivisionError: division by zero" in text
    assert text.startswith("[stderr]\nTraceback")
    assert text.endswith("[exit code 1]")


def test_tool_reports_a_timeout() -> None:
    text = PythonTool(timeout=0.5)("print('a')\nwhile True:\n    pass")
    assert text == "a\n[error: timed out after 0.5 s]"


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (_result(), "[no output]"),
        (_result(stdout="42\n"), "42"),
        (_result(stdout="x\n", stderr="warn\n"), "x\n[stderr]\nwarn"),
        (_result(exit_code=None, killed_reason="memory"), "[error: memory]"),
        (_result(exit_code=2), "[exit code 2]"),
        (
            _result(exit_code=1, stderr="E\n", killed_reason="blocked: network access"),
            "[stderr]\nE\n[error: blocked: network access]",
        ),
    ],
)
def test_format_observation(result: ExecResult, expected: str) -> None:
    assert format_observation(result, timeout=10) == expected


def test_tool_refuses_without_read_isolation_unless_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moscopt.agent.tools import sandbox

    none = sandbox.Layers(bwrap=False, namespaces=False, landlock=False, uid_drop=False)
    monkeypatch.setattr(sandbox, "_LAYERS", none)
    refused = PythonTool()("print('ran')")
    assert refused == f"[error: {sandbox.UNSANDBOXED_REFUSED}]"
    assert PythonTool(allow_unsandboxed=True)("print('ran')") == "ran"
