"""The external agent as a careless or hostile program (issue 25, items 2, 4, 7, 13, 14): what it
sees of moscopt's environment, how much of its answer file is read, which answers are replayed
from the cache, placeholders inside a task, a daemon that leaves the process group."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from moscopt.agent.external import AgentCommand
from moscopt.agent.external.agent import ExternalAgent, read_tail
from moscopt.agent.external.process import run_process
from moscopt.benchmarks import get_benchmark
from moscopt.config import load_config
from moscopt.core.skills import Pool
from moscopt.lm import ResponseCache
from moscopt.routing.gate import FixedSkills
from moscopt.testing import FakeLM
from moscopt.testing.scripted import tasks


def agent(command: list[str], tmp_path: Path | None = None, **options: Any) -> ExternalAgent:
    config = load_config(
        None, {f"agent.{k}": v for k, v in {"command": command, **options}.items()}
    )
    lm = FakeLM()
    if tmp_path is not None:
        lm.cache = ResponseCache(tmp_path / "cache")  # type: ignore[attr-defined]
    built = ExternalAgent.build(
        lm, get_benchmark("offline"), Pool(skills=()), FixedSkills((), "all"), config
    )
    assert isinstance(built, ExternalAgent)
    return built


def solve(a: ExternalAgent, prompt: str | None = None) -> dict[str, Any]:
    task = tasks("t", 1)[0]
    if prompt is not None:
        task = type(task)(**{**task.__dict__, "prompt": prompt})
    return asyncio.run(a.solve(task, [], sample=0))


# -- item 2: an allow-list of the environment ---------------------------------------------------

PRINT_ENV = [sys.executable, "-c", "import os, json; print(json.dumps(sorted(os.environ)))"]


def test_the_agent_sees_only_basic_and_allowed_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-agent-123456")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-not-for-the-agent-123456")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-for-the-agent-123456")
    monkeypatch.setenv("CODEX_HOME", "/x")
    names = json.loads(solve(agent(PRINT_ENV, env=["ANTHROPIC_API_KEY", "CODEX_*"]))["stdout"])
    assert "OPENAI_API_KEY" not in names and "AWS_SECRET_ACCESS_KEY" not in names
    assert {"ANTHROPIC_API_KEY", "CODEX_HOME", "PATH", "MOSCOPT_TASK_FILE"} <= set(names)
    names = json.loads(solve(agent(PRINT_ENV))["stdout"])
    assert "ANTHROPIC_API_KEY" not in names and "CODEX_HOME" not in names


# -- item 4: the answer file is read at most its bound ------------------------------------------


def test_a_huge_answer_file_is_read_only_from_its_tail(tmp_path: Path) -> None:
    path = tmp_path / "answer.txt"
    with path.open("wb") as f:
        f.truncate(256 * 1024 * 1024)  # sparse: no disk used
        f.seek(0, os.SEEK_END)
        f.write(b"final answer 42")
    tracemalloc.start()
    try:
        text = read_tail(path, 64 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text is not None and text.endswith("final answer 42") and len(text) == 64 * 1024
    assert peak < 4 * 1024 * 1024


# -- item 7: its output reaches no terminal raw -------------------------------------------------


def test_the_agents_terminal_escapes_are_stripped() -> None:
    code = r"print('a\x1b]52;c;cHduZWQ=\x07b\x1b[2Jc'); import sys; "
    code += r"print('\x1b[31merr', file=sys.stderr)"
    result = solve(agent([sys.executable, "-c", code]))
    assert result["stdout"].strip() == "abc" and "\x1b" not in result["stderr"]


# -- item 13: what determines the answer is in the cache key ------------------------------------


def write_agent(folder: Path, answer: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text(f"print({answer!r})\n")


def test_an_edited_agent_is_run_again_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    write_agent(project, "first")
    monkeypatch.chdir(project)
    command = [sys.executable, "agent.py"]  # relative: resolved in the key, run from {cwd}
    command = [sys.executable, "{cwd}/agent.py"]
    assert solve(agent(command, tmp_path))["stdout"].strip() == "first"
    assert solve(agent(command, tmp_path))["stdout"].strip() == "first"  # replayed
    write_agent(project, "second")
    assert solve(agent(command, tmp_path))["stdout"].strip() == "second"


def test_two_projects_with_one_relative_agent_path_share_no_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = [sys.executable, "{cwd}/agent.py"]
    for name in ("a", "b"):
        write_agent(tmp_path / name, f"answer of {name}")
    got = []
    for name in ("a", "b"):
        monkeypatch.chdir(tmp_path / name)
        got.append(solve(agent(command, tmp_path))["stdout"].strip())  # one shared cache
    assert got == ["answer of a", "answer of b"]


def test_agent_cache_false_never_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = tmp_path / "count"
    code = f"p='{counter}'; import os; n=int(open(p).read()) if os.path.exists(p) else 0; "
    code += "open(p,'w').write(str(n+1)); print(n+1)"
    a = agent([sys.executable, "-c", code], tmp_path, cache=False)
    assert [solve(a)["stdout"].strip() for _ in range(2)] == ["1", "2"]


# -- item 14: placeholders in a task, a daemon that leaves the group ----------------------------


def test_placeholders_inside_the_task_text_stay_as_written() -> None:
    cmd = AgentCommand.from_config(
        load_config(None, {"agent.command": [sys.executable, "-c", "pass", "{task}"]}).agent
    )
    task = "echo {cwd} {task_file} {answer_file} {workdir} {task}"
    out = cmd.render({"task": task, "task_file": "/tmp/T", "workdir": "/w", "answer_file": "/a"})
    assert out[-1] == task


def test_a_daemon_started_with_setsid_does_not_outlive_the_task(tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    code = textwrap.dedent(
        f"""
        import subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                             start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        open({str(pidfile)!r}, "w").write(str(p.pid))
        """
    )
    result = asyncio.run(
        run_process([sys.executable, "-c", code], cwd=tmp_path, stdin=None, timeout=60)
    )
    assert result.returncode == 0
    pid = int(pidfile.read_text())
    assert not alive(pid)


def test_a_daemon_is_ended_when_the_agent_times_out(tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    code = textwrap.dedent(
        f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                             start_new_session=True)
        open({str(pidfile)!r}, "w").write(str(p.pid))
        time.sleep(300)
        """
    )
    result = asyncio.run(
        run_process([sys.executable, "-c", code], cwd=tmp_path, stdin=None, timeout=1.0)
    )
    assert result.timed_out
    assert not alive(int(pidfile.read_text()))


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is not running
