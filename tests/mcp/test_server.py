"""`moscopt mcp` driven by the MCP SDK's own stdio client, against the loopback world.

The server is a real `moscopt mcp` process in a `write_project` project; its model is the
scripted world behind the loopback OpenAI-compatible server of this test process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp_env import Session, scripted_train_args

from moscopt.run.rundir import RunDir

TOOLS = {"plan", "train", "status", "log", "diff", "eval", "export", "route", "harvest", "adopt"}


def test_lists_the_tools_named_and_argued_as_the_command_line(session: Session) -> None:
    tools = {t.name: t for t in session.call(session.client.list_tools()).tools}
    assert set(tools) >= TOOLS
    train = tools["train"].input_schema["properties"]
    for name in ("benchmark", "data", "model", "api_base", "max_calls", "max_cost", "n", "k",
                 "epochs", "limit", "run", "set", "resume"):  # fmt: skip
        assert name in train, name
    assert "skill" in tools["diff"].input_schema["required"]


def test_plans_then_trains_with_progress_then_exports(session: Session, project: Path) -> None:
    args = scripted_train_args(session.url)
    plan = session.tool("plan", {**args, "no_pilot": True})
    assert plan["total"] and plan["phases"] and plan["estimates"].startswith("config only")

    started = session.tool("train", {**args, "max_calls": 400})
    run = Path(started["run"])
    assert started["status"] == "running" and (run / "state.json").is_file()

    # status while it runs, then to its end with progress notifications
    first = session.tool("status", {"run": str(run)})
    assert first["run"] == str(run) and first["budget"]["max_calls"] == 400
    assert "live" in first and first["status"] in ("running", "done")
    progress: list[tuple[float, float | None, str | None]] = []
    final = session.tool("status", {"run": str(run), "wait_seconds": 120}, progress=progress)
    assert final["status"] == "done", final.get("live")
    assert final["live"]["state"] == "done"
    # the end is notified with the run's calls, however fast the run was (one quicker than the
    # server's first look has no progress but its end)
    assert progress and (progress[-1][2] or "").startswith("finished: ")
    assert all("calls" in (m or "") for _, _, m in progress)
    calls = [p for p, _, _ in progress]
    assert calls == sorted(calls)
    assert final["last_decision"]["kind"] in ("edit", "evolution")
    assert final["certificate"] is not None

    # an ordinary run: the terminal's status sees it, and it is the same run
    assert RunDir.open(run).load_state().status == "done"
    log = session.tool("log", {"run": str(run)})
    assert log["entries"] and all("decision" in e or e["kind"] != "edit" for e in log["entries"])
    diff = session.tool("diff", {"run": str(run), "skill": "careful-computation"})
    assert diff["skill"] == "careful-computation"
    unknown = session.error("log", {"run": str(run), "skill": "nope"})
    assert unknown == (
        "moscopt: error: field 'skill': unknown skill 'nope' in this run (known: "
        "careful-computation, cautious-planner, detail-verifier, gate)"
    )
    scored = session.tool("eval", {"run": str(run), "split": "test"})
    assert scored["mode"] == "mixture" and scored["tasks"] == 2 and scored["errors"] == 0

    exported = session.tool("export", {"run": str(run), "mode": "static"})
    assert Path(exported["out"]).is_dir() and exported["mode"] == "static"
    routed = session.tool("route", {"run": str(run), "task": "Compute 3 + 3.", "mode": "static"})
    assert routed["skills"]
    plugin = session.tool("export", {"run": str(run), "mode": "plugin"})
    assert (Path(plugin["out"]) / ".claude-plugin" / "plugin.json").is_file()
    assert plugin["plugin"]["certificate"] == final["certificate"]["verdict"]


def test_train_can_wait_for_its_end_with_progress(session: Session) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    args = {**scripted_train_args(session.url), "max_calls": 400, "wait": True, "run": "runs/w"}
    done = session.tool("train", args, progress=progress)
    assert done["status"] == "done"
    assert progress and (progress[-1][2] or "").startswith("finished: ")  # however fast the run
    # while it ran (a run quicker than the server's look has none): the plan's calls as total
    assert all(total for _, total, _ in progress[:-1])


def test_a_train_without_a_budget_is_refused_with_how_to_give_one(
    session: Session, project: Path
) -> None:
    text = session.error("train", scripted_train_args(session.url))
    assert text.startswith("moscopt: error:") and "needs a budget" in text
    assert "max_calls" in text and "moscopt.yaml" in text
    assert "\n" not in text and "Traceback" not in text
    assert not (project / "runs").exists() or not any((project / "runs").iterdir())


def test_bad_arguments_are_tool_errors_with_the_command_lines_messages(session: Session) -> None:
    args = scripted_train_args(session.url)
    zero = session.error("train", {**args, "max_calls": 0})
    assert zero.startswith("moscopt: error: max_calls 0 (field 'llm.max_calls')")
    unknown = session.error("train", {**args, "max_calls": 5, "benchmark": "no-such-bench"})
    assert "no-such-bench" in unknown and "Traceback" not in unknown
    typed = session.error("plan", {"n": "three"})
    assert "n" in typed and "Traceback" not in typed
    missing = session.error("status", {"run": "runs/none"})
    assert missing.startswith("moscopt: error:") and "runs/none" in missing


def test_structured_content_is_the_text_content(session: Session) -> None:
    result = session.call(session.client.call_tool("status", {"project": True}))
    assert not result.is_error
    assert json.loads(result.content[0].text) == result.structured_content


def test_a_run_stopped_by_its_budget_is_seen_by_the_terminal_and_resumed(
    session: Session, project: Path
) -> None:
    from typer.testing import CliRunner

    from moscopt.cli import app

    args = {**scripted_train_args(session.url), "run": "runs/r", "wait": True}
    stopped = session.tool("train", {**args, "max_calls": 12})
    assert stopped["status"] == "stopped" and "budget" in stopped["live"]["error"]
    shown = CliRunner().invoke(app, ["status", "--run", "runs/r"])
    assert "moscopt train --resume --run" in shown.output, shown.output
    resumed = session.tool(
        "train", {"run": "runs/r", "resume": True, "max_calls": 400, "wait": True}
    )
    assert resumed["status"] == "done" and resumed["certificate"] is not None
    assert resumed["totals"]["calls"] > 12


def test_a_run_whose_server_ends_is_interrupted_and_the_terminal_resumes_it(
    project: Path,
) -> None:
    from mcp_env import server_params
    from typer.testing import CliRunner

    from moscopt.cli import app
    from moscopt.testing import FakeServer
    from moscopt.testing.scripted import server_responder

    with FakeServer(responder=server_responder, latency=0.2) as slow:
        s = Session(server_params(project), slow.url)
        try:
            args = {**scripted_train_args(slow.url), "run": "runs/i", "max_calls": 400}
            started = s.tool("train", args)
        finally:
            s.close()  # the client ends the server while the run goes on
        run = RunDir.open(Path(started["run"]))
        assert run.condition() == "interrupted"
        resumed = CliRunner().invoke(app, ["train", "--resume", "--run", "runs/i"])
        assert resumed.exit_code == 0, resumed.output
        assert run.load_state().status == "done"


def test_status_follows_a_run_the_terminal_trains(project: Path) -> None:
    import os
    import subprocess
    import sys
    import time

    from mcp_env import REPO, server_params

    from moscopt.testing import FakeServer
    from moscopt.testing.scripted import server_responder, train_argv

    with FakeServer(responder=server_responder, latency=0.05) as slow:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = [sys.executable, "-m", "moscopt", *train_argv(slow.url, "runs/t")]
        terminal = subprocess.Popen(argv, cwd=project, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)  # fmt: skip
        s = Session(server_params(project), slow.url)
        try:
            while not (project / "runs/t/state.json").exists() and terminal.poll() is None:
                time.sleep(0.1)
            progress: list[tuple[float, float | None, str | None]] = []
            final = s.tool("status", {"run": "runs/t", "wait_seconds": 120}, progress=progress)
        finally:
            s.close()
            assert terminal.wait(120) == 0
    assert final["status"] == "done" and "live" not in final
    assert final["certificate"] is not None
