"""The shell tool: a POSIX-like shell interpreted inside the python tool's sandbox (no execve
there), bounded output, nothing kept between calls, off unless listed."""

from __future__ import annotations

import asyncio

import pytest

from moscopt.agent.skill_agent import SkillAgent
from moscopt.agent.tools.sandbox import isolation_available
from moscopt.agent.tools.shell import ShellTool
from moscopt.agent.tools.toolbox import ToolBox, ToolOptions, make_toolbox
from moscopt.benchmarks import Task, get_benchmark
from moscopt.testing import FakeLM

pytestmark = pytest.mark.skipif(
    isolation_available() == "unsandboxed", reason="nothing isolates model code on this machine"
)
SHELL = ShellTool(timeout=10.0)


def test_pipelines_lists_and_redirections() -> None:
    assert SHELL("echo hello world | tr a-z A-Z") == "HELLO WORLD"
    assert SHELL("seq 5 | sort -r | head -n 2") == "5\n4"
    out = SHELL("printf 'a,b\\nc,d\\n' > t.csv && cut -d , -f 2 t.csv; wc -l < t.csv")
    assert out == "b\nd\n2"
    assert SHELL("false && echo no || echo yes") == "yes"
    assert SHELL("python3 -c 'print(6 * 7)'") == "42"
    assert SHELL("echo 'unclosed").startswith("[stderr]\nsyntax error")


def test_failures_are_observations() -> None:
    assert "command not found" in SHELL("curl http://example.com")
    assert SHELL("exit 3") == "[exit code 3]"
    assert "No such file" in SHELL("ls missing-dir")


def test_contained_by_the_sandbox() -> None:
    out = SHELL("cat /etc/shadow")
    assert "root:" not in out and ("denied" in out or "No such file" in out)
    code = "import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)"
    out = SHELL(f'python3 -c "{code}"')
    assert "[exit code 1]" in out and ("not allowed" in out or "Error" in out)
    SHELL("echo kept > note.txt")
    assert "No such file" in SHELL("cat note.txt")  # a fresh work dir every call


def test_output_is_bounded() -> None:
    out = ShellTool(max_output=500)("seq 100000")
    assert len(out) < 700 and "truncated" in out


def test_off_unless_listed() -> None:
    box = make_toolbox(("python",), None, ToolOptions())
    assert box.parse("```shell\nls\n```") is None and "shell" not in box.runners
    box = make_toolbox(("python", "shell"), None, ToolOptions())
    assert "shell" in box.runners and "## Tool: shell" in box.instructions()


def test_the_agent_uses_the_shell_by_the_text_protocol() -> None:
    task = Task("s1", "offline", "How many lines does seq 7 print?\n\nFINAL ANSWER: <n>", "7")

    def agent(request):  # type: ignore[no-untyped-def]
        last = request.messages[-1]["content"]
        if last.startswith("Shell output:"):
            return f"FINAL ANSWER: {last.split()[-1]}"
        return "```shell\nseq 7 | wc -l\n```"

    lm = FakeLM(routes={"agent": agent})
    bench = get_benchmark("offline")
    rollout = asyncio.run(SkillAgent(lm, bench, None, tools=("shell",), max_steps=3).run(task))
    assert rollout.reward == 1.0
    assert rollout.messages[3]["content"] == "Shell output:\n7"


def test_toolbox_has_no_runner_for_an_unknown_tool() -> None:
    box = ToolBox(("shell",))
    call = box.parse("```shell\nls\n```")
    assert call is not None and box.run(call)[1]  # no runner given: an error observation
