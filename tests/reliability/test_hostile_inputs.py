"""Hostile input that must neither hang nor exhaust memory: YAML alias bombs in moscopt.yaml and
in a SKILL.md front matter (refused at the first anchor: exit 2, one line naming the file), a
large data file read with `--limit` (memory does not grow with the file), and evaluation results
(streamed to their file, not held until the end).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import tracemalloc
import weakref
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from moscopt.agent.evaluate import evaluate
from moscopt.agent.harness import Rollout
from moscopt.agent.skill_agent import SkillAgent
from moscopt.benchmarks import Task, get_benchmark
from moscopt.cli import app
from moscopt.config import load_config
from moscopt.core.skills import Skill
from moscopt.errors import UserError

from .helpers import snapshot

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
API = ["--model", "openai/scripted", "--api-base", "http://127.0.0.1:9"]
EVAL = ["eval", "--benchmark", "addition.yaml", "--data", "addition.jsonl", *API]


def bomb(levels: int, key: str = "lol") -> str:
    """The "billion laughs": `levels` lines of nine aliases each, 9**levels leaves."""
    lines = [f'{key}0: &{key}0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*{key}{i - 1}"] * 9)
        lines.append(f"{key}{i}: &{key}{i} [{refs}]")
    return "\n".join(lines) + "\n"


# -- YAML alias bombs --------------------------------------------------------------------------


def test_alias_bomb_in_moscopt_yaml_is_one_line_exit_2(project: Path) -> None:
    (project / "moscopt.yaml").write_text("seed: 1\n" + bomb(6))  # 531,441 leaves
    before = snapshot(project)
    for args in ([*EVAL, "--skills", "skills"], ["status"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, lines
        assert "moscopt.yaml:2:" in lines[0] and "anchors and aliases" in lines[0]
    assert snapshot(project) == before


def test_alias_bomb_in_skill_front_matter_is_one_line_exit_2(project: Path) -> None:
    skill = project / "skills" / "careful-computation" / "SKILL.md"
    metadata = "".join(f"  {line}\n" for line in bomb(6).splitlines())
    body = skill.read_text().split("---\n", 2)[2]
    skill.write_text(
        f"---\nname: careful-computation\ndescription: d\nmetadata:\n{metadata}---\n{body}"
    )
    before = snapshot(project)
    result = runner.invoke(app, [*EVAL, "--skills", "skills"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert "careful-computation/SKILL.md:5:" in lines[0] and "anchors and aliases" in lines[0]
    assert snapshot(project) == before
    with pytest.raises(UserError, match="anchors and aliases"):
        Skill.loads("---\nname: a\ndescription: &d x\nlicense: *d\n---\nbody\n")
    # what moscopt writes it reads back: repeated objects are written twice, never aliased
    shared = {"tags": ["a", "b"]}
    written = Skill(name="s", description="d", metadata={"x": shared, "y": shared}, body="b\n")
    assert Skill.loads(written.dumps()) == written
    config = load_config(None, {"llm.deployments": [{"model": "openai/a"}] * 2})
    assert "&" not in config.to_yaml()


def test_a_billion_laughs_does_not_hang(tmp_path: Path) -> None:
    """9**9 leaves: before the fix, validating them ran for hours (here a hang guard, not a
    timing: the refusal itself does no work)."""
    (tmp_path / "moscopt.yaml").write_text(bomb(9))
    skills = tmp_path / "skills" / "s"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(
        "---\nname: s\ndescription: d\nmetadata:\n"
        + "".join(f"  {line}\n" for line in bomb(9).splitlines())
        + "---\nbody\n"
    )
    code = (
        "import sys\n"
        "from moscopt.config import load_config\n"
        "from moscopt.errors import UserError\n"
        "from moscopt.core.skills import Pool\n"
        "for load in (lambda: load_config('moscopt.yaml'), lambda: Pool.load('skills')):\n"
        "    try:\n"
        "        load()\n"
        "    except UserError as e:\n"
        "        print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, timeout=60
    )
    out = proc.stdout.decode().splitlines()
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(out) == 2 and all("anchors and aliases" in line for line in out), out


# -- data files are streamed -------------------------------------------------------------------

SPEC = """\
name: big
description: "Large rows"
source:
  local:
    files: [big.jsonl]
    fields: {id: id, question: question, answer: answer}
splits: {train: 1200, val: 300, test: 300, seed: 3}
grader: exact
"""


def big_data(root: Path, rows: int = 1800, row_chars: int = 10_000) -> tuple[Path, Path]:
    (root / "big.yaml").write_text(SPEC)
    pad = "x" * row_chars
    with open(root / "big.jsonl", "w") as f:
        for i in range(rows):
            f.write(json.dumps({"id": f"r{i}", "question": f"{i} + {i}? {pad}", "answer": "0"}))
            f.write("\n")
    return root / "big.yaml", root / "big.jsonl"


def test_limit_on_a_large_data_file_keeps_memory_flat(tmp_path: Path) -> None:
    spec, data = big_data(tmp_path)  # 18 MB
    bench = get_benchmark(str(spec))
    tracemalloc.start()
    try:
        limited = bench.load(data=data, limit=4)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < data.stat().st_size / 6, f"peak {peak} bytes for a {data.stat().st_size} file"
    full = bench.load(data=data)
    for name in ("train", "val", "test"):  # the same tasks as a full load's first 4
        assert limited[name] == full[name][:4]
    with open(data, "a") as f:  # and a bad row anywhere is still named
        f.write('{"id": "bad", "question": 3, "answer": "0"}\n')
    with pytest.raises(UserError) as e:
        bench.load(data=data, limit=1)
    assert e.value.line == 1801 and e.value.field == "question"


# -- evaluation results are streamed ------------------------------------------------------------


class BigAgent:
    """Rollouts of ~80 KB each, completing out of order; every one made is tracked weakly."""

    def __init__(self) -> None:
        self.made: list[weakref.ref[Rollout]] = []
        self.most_alive = 0

    @property
    def alive(self) -> int:
        return sum(r() is not None for r in self.made)

    async def run(self, task: Task, *, sample: int = 0) -> Rollout:
        for _ in range(int(task.id) % 3):  # finish out of task order
            await asyncio.sleep(0)
        text = f"{task.id}:{sample} " + "y" * 80_000
        messages: list[Any] = [{"role": "user", "content": task.prompt}]
        messages.append({"role": "assistant", "content": text})
        r = Rollout(task.id, (), "none", messages, text, task.id, 1.0 if int(task.id) % 2 else 0.0)
        self.made.append(weakref.ref(r))  # it dies when nothing holds it (no reference cycles)
        self.most_alive = max(self.most_alive, self.alive)
        return r


def test_eval_results_stream_to_the_file_not_memory(tmp_path: Path) -> None:
    tasks = [Task(str(i), "t", f"task {i}", str(i)) for i in range(300)]
    agent = BigAgent()
    out = tmp_path / "eval.jsonl"
    result = asyncio.run(evaluate(cast(SkillAgent, agent), tasks, concurrency=4, out=out))
    gc.collect()
    assert agent.most_alive <= 8, f"{agent.most_alive} rollouts alive at once"
    assert agent.alive == 0 and result.rollouts == []
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [t.id for t in tasks]  # task order, not completion
    summary = result.summary()
    assert summary["tasks"] == summary["rollouts"] == 300 and summary["score"] == 0.5
    again = tmp_path / "again.jsonl"
    asyncio.run(evaluate(cast(SkillAgent, BigAgent()), tasks, concurrency=7, out=again))
    assert again.read_bytes() == out.read_bytes()
    # without `out` (the API the runner used before streaming), the rollouts are returned
    kept = asyncio.run(evaluate(cast(SkillAgent, BigAgent()), tasks[:5], concurrency=2))
    assert [r.task_id for r in kept.rollouts] == [t.id for t in tasks[:5]]


def test_a_failed_eval_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "eval.jsonl"
    out.write_text("old\n")

    class Failing(BigAgent):
        async def run(self, task: Task, *, sample: int = 0) -> Rollout:
            if task.id == "5":
                raise RuntimeError("provider gone")
            return await super().run(task, sample=sample)

    tasks = [Task(str(i), "t", f"task {i}", str(i)) for i in range(10)]
    with pytest.raises(RuntimeError):
        asyncio.run(evaluate(cast(SkillAgent, Failing()), tasks, concurrency=2, out=out))
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["eval.jsonl"]
