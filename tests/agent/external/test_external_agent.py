"""The external-agent harness (moscopt.agent.external) with a script agent that reads its skills."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from moscopt.agent.external import AgentCommand
from moscopt.agent.external.agent import ExternalAgent
from moscopt.agent.external.process import run_process
from moscopt.agent.external.workspace import materialise
from moscopt.benchmarks import get_benchmark
from moscopt.config import load_config
from moscopt.core.skills import Pool, Skill
from moscopt.errors import UserError
from moscopt.lm.base import LMRequest
from moscopt.routing.gate import FixedSkills
from moscopt.run.ledger import EditEvent, RolloutEvent
from moscopt.run.ledger_read import read_events
from moscopt.testing import FakeLM
from moscopt.testing.scripted import MAGIC, edit, make_run, skill_name, tasks, train_run

SCRIPT = str(Path(__file__).with_name("skill_agent.py"))
AGENT = [sys.executable, SCRIPT]


def agent_for(skills: list[Skill], **agent: Any) -> ExternalAgent:
    config = load_config(None, {f"agent.{k}": v for k, v in {"command": AGENT, **agent}.items()})
    pool = Pool(skills=tuple(skills))
    bench = get_benchmark("offline")
    router = FixedSkills(tuple(s.name for s in skills), "all")
    built = ExternalAgent.build(FakeLM(), bench, pool, router, config)
    assert isinstance(built, ExternalAgent)
    return built


def rule(name: str = "checker", text: str = MAGIC) -> Skill:
    return Skill(name=name, description="Checks the final number.", body=f"# Check\n\n{text}\n")


def run(agent: ExternalAgent, sample: int = 0) -> Any:
    return asyncio.run(agent.run(tasks("t", 3)[2], sample=sample))  # Compute 3 + 3


# -- the command -------------------------------------------------------------------------------


def test_a_string_command_is_split_without_a_shell_and_placeholders_fill_whole() -> None:
    cmd = AgentCommand.from_config(
        load_config(None, {"agent.command": "python -c 'x {task}'"}).agent
    )
    assert cmd.argv == ("python", "-c", "x {task}") and cmd.task_as_argument
    assert cmd.render({"task": "a b; rm -rf /"}) == ["python", "-c", "x a b; rm -rf /"]
    assert cmd.skills_paths == (".claude/skills", ".agents/skills")


@pytest.mark.parametrize(
    ("command", "says"),
    [("no-such-agent-program -p", "not found"), ("", "is empty"), ("'unclosed", "cannot be split")],
)
def test_a_bad_command_is_a_user_error_naming_the_field(command: str, says: str) -> None:
    with pytest.raises(UserError, match=says) as e:
        AgentCommand.from_config(load_config(None, {"agent.command": command}).agent)
    assert "agent.command" in str(e.value)


@pytest.mark.parametrize("path", ["/abs/skills", "../outside", ""])
def test_skills_path_and_answer_file_stay_inside_the_work_folder(path: str) -> None:
    for key in ("agent.skills_path", "agent.answer_file"):
        with pytest.raises(UserError, match="relative path inside"):
            load_config(None, {key: path})


# -- the working folder and the process --------------------------------------------------------


def test_skills_are_written_where_each_agent_looks(tmp_path: Path) -> None:
    folders = materialise(tmp_path, [rule("a"), rule("b")], (".claude/skills", "custom/place"))
    assert folders == [tmp_path / ".claude/skills", tmp_path / "custom/place"]
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == ["a", "b"]
        assert Skill.load(folder / "a" / "SKILL.md") == rule("a")


def test_a_timeout_ends_the_agent_and_its_children(tmp_path: Path) -> None:
    code = "import subprocess, time; subprocess.Popen(['sleep', '600']); time.sleep(600)"
    result = asyncio.run(
        run_process([sys.executable, "-c", code], cwd=tmp_path, stdin=None, timeout=0.5)
    )
    assert result.timed_out and result.returncode is None


def test_output_is_bounded_and_the_tail_kept(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('a' * 300000 + 'END')"
    result = asyncio.run(
        run_process([sys.executable, "-c", code], cwd=tmp_path, stdin=None, timeout=60, limit=1000)
    )
    assert result.truncated and len(result.stdout) == 1000 and result.stdout.endswith("END")


# -- one task --------------------------------------------------------------------------------


def test_the_agent_follows_the_skills_it_is_given_and_is_graded() -> None:
    good = run(agent_for([rule()]))
    assert good.reward == 1.0 and good.answer == "6" and good.error is None
    assert "skills seen: checker" in good.response  # stderr is in the trajectory
    assert good.calls == 0  # the router was fixed; the agent's own calls are not ours
    bad = run(agent_for([rule(text="Be quick.")]))
    assert bad.reward == 0.0 and bad.answer == "0"


def test_the_task_as_an_argument_and_the_answer_from_a_file() -> None:
    argv = [*AGENT, "--task", "{task}", "--answer-file", "{answer_file}"]
    argv += ["--skills", "{skills_dir}"]
    agent = agent_for([rule()], command=argv, answer_file="out/answer.txt", skills_path="sk")
    result = run(agent)
    assert result.reward == 1.0 and "wrote the answer file" in result.response


def test_failures_are_rollouts_with_an_error_never_crashes() -> None:
    failed = run(agent_for([rule()], command=[*AGENT, "--exit", "3"]))
    assert failed.error is not None and "exited with status 3" in failed.error
    slow = run(agent_for([rule()], command=[*AGENT, "--sleep", "600"], timeout=0.5))
    assert slow.reward == 0.0 and slow.error is not None and "timed out" in slow.error
    missing = run(agent_for([rule()], answer_file="answer.txt"))
    assert missing.reward == 0.0 and "no answer file" in (missing.error or "")


# -- training end to end -------------------------------------------------------------------------


def propose(request: LMRequest) -> str:
    prompt = "\n".join(m["content"] for m in request.messages)
    if skill_name(prompt) == "careful-computation":
        return edit("", MAGIC)
    return edit("this anchor does not exist", "x")


ROUTES: dict[str, Any] = {
    "gate": lambda r: "ACTIVATE: careful-computation, detail-verifier",
    "reflect": lambda r: "- The agent never double-checks the final number.",
    "merge": lambda r: "- It never double-checks.",
    "propose": propose,
    "memory": lambda r: "- Explicit checks helped.",
    "budget": lambda r: "L: 3",
}


def test_training_optimizes_the_skills_of_a_script_agent(tmp_path: Path, seed_dir: Path) -> None:
    run_dir, config, bench, sp, seeds = make_run(
        tmp_path, seed_dir, **{"agent.command": AGENT, "training.epochs": 1}
    )
    lm = FakeLM(routes=ROUTES)
    trainer = train_run(run_dir, config, bench, sp, seeds, lm)
    state = trainer.state
    assert state.status == "done"
    assert "agent" not in lm.purposes  # every task was solved by the script, not the LM
    assert MAGIC in trainer.pool.get("careful-computation").body
    scores = [p.score for p in state.val_history]
    assert scores[0] == 0.0 and scores[-1] == 1.0
    edits = [
        e for e in read_events(run_dir.events.path, kinds={"edit"}) if isinstance(e, EditEvent)
    ]
    accepted = [e for e in edits if e.status == "accepted"]
    assert [e.target for e in accepted] == ["careful-computation"]
    rollouts = [
        e
        for e in read_events(run_dir.events.path, kinds={"rollout"})
        if isinstance(e, RolloutEvent)
    ]
    assert rollouts and all("skills seen: careful-computation" in r.response for r in rollouts)
    # reflection read the script's own output (its stderr is part of the trajectory)
    reflections = [
        r for r, p in zip(lm.history, lm.purposes, strict=True) if p.startswith("reflect")
    ]
    assert any("skills seen:" in r.messages[-1]["content"] for r in reflections)


class DictCache:
    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.entries.get(key)

    def put(self, key: str, completion: Any) -> None:
        self.entries[key] = completion


def test_finished_runs_are_replayed_from_the_cache_failures_are_not(tmp_path: Path) -> None:
    marker = tmp_path / "runs.txt"
    code = f"import sys; open({str(marker)!r}, 'a').write('x'); print('FINAL ANSWER: 6')"
    agent = agent_for([rule()], command=[sys.executable, "-c", code])
    agent.lm.cache = DictCache()  # type: ignore[attr-defined]
    assert run(agent).reward == run(agent).reward == 1.0
    assert marker.read_text() == "x"  # the second one came from the cache
    assert run(agent, sample=1).reward == 1.0 and marker.read_text() == "xx"  # a new sample
    failing = agent_for([rule()], command=[*AGENT, "--exit", "1"])
    failing.lm.cache = cache = DictCache()  # type: ignore[attr-defined]
    run(failing)
    assert cache.entries == {}


def test_secrets_in_the_agents_output_never_reach_the_rollout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-test1234567890abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    code = "import os, sys; print(os.environ['OPENAI_API_KEY'], file=sys.stderr); print('hi')"
    result = run(agent_for([rule()], command=[sys.executable, "-c", code]))
    assert secret not in result.response and secret not in str(result.to_json())


def test_cwd_names_the_folder_moscopt_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent.py").write_text("print('FINAL ANSWER: 6')\n")
    monkeypatch.chdir(tmp_path)
    result = run(agent_for([rule()], command=[sys.executable, "{cwd}/agent.py"]))
    assert result.reward == 1.0


def test_a_missing_agent_program_is_refused_before_a_run_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path
) -> None:
    from typer.testing import CliRunner

    from moscopt.cli import app
    from moscopt.testing.scripted import write_project

    write_project(tmp_path, seed_dir, "agent:\n  command: no-such-agent-program -p\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    args = ["train", "--benchmark", "addition.yaml", "--data", "addition.jsonl", "--n", "3"]
    result = CliRunner().invoke(app, [*args, "--k", "2", "--model", "openai/x", "--run", "runs/r"])
    assert result.exit_code == 2 and "field 'agent.command'" in result.output
    assert not (tmp_path / "runs/r").exists()


def test_the_agent_gets_each_skill_folder_whole(tmp_path: Path) -> None:
    """A skill's scripts, references and assets are in the agent's folder, with their modes;
    a changed script changes the result's cache key (`_skill_identity`)."""
    import stat

    from moscopt.agent.external.agent import _skill_identity
    from moscopt.core.skills import SkillFile

    script = SkillFile(path="scripts/run.sh", mode=0o755, data=b"#!/bin/sh\necho hi\n")
    asset = SkillFile(path="assets/x.bin", mode=0o644, data=bytes(range(256)))
    skill = rule("a").model_copy(update={"files": (asset, script)})
    (folder,) = materialise(tmp_path, [skill], (".claude/skills",))
    written = folder / "a" / "scripts" / "run.sh"
    assert written.read_bytes() == script.data
    assert stat.S_IMODE(written.stat().st_mode) == 0o755
    assert (folder / "a" / "assets" / "x.bin").read_bytes() == asset.data
    changed = skill.model_copy(update={"files": (asset, script.model_copy(update={"data": b"x"}))})
    assert _skill_identity(changed) != _skill_identity(skill)
    assert _skill_identity(rule("a")) == rule("a").dumps()  # no files: the key it always had
