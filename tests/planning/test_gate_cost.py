"""Issue 41: `plan` and `train` say when the LLM gate's prompt (a table of the whole pool)
outweighs the agent's, naming the keys that bound it."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from moscopt.app.assembly import starting_pool
from moscopt.cli import app
from moscopt.config import load_config
from moscopt.core.skills import Pool, Skill
from moscopt.planning.gate_cost import gate_cost_note

runner = CliRunner()
BODY = "# Skill\n\n1. Read the task.\n2. Work it out.\n3. Check.\n4. Answer.\n"


def pool_of(n: int, seed_dir: Path) -> Pool:
    gate = Pool.load(seed_dir, require_gate=True).gate
    skills = tuple(
        Skill(name=f"topic-{i:03d}", description=f"Tasks about topic {i}, in detail.", body=BODY)
        for i in range(n)
    )
    return Pool(skills=skills, gate=gate)


def test_a_large_pool_under_the_llm_gate_gets_a_note_naming_the_bounds(seed_dir: Path) -> None:
    config = load_config(None, {"pool.n": 200, "pool.k": 2})
    note = gate_cost_note(config, pool_of(200, seed_dir))
    assert note is not None
    assert "all 200 skills" in note and "gating.policy: hybrid" in note
    assert "router.shortlist = 4" in note and "familiarity" in note
    for small in (4, 10):
        assert gate_cost_note(load_config(None, {"pool.k": 2}), pool_of(small, seed_dir)) is None
    hybrid = load_config(None, {"pool.n": 200, "pool.k": 2, "gating.policy": "hybrid"})
    assert gate_cost_note(hybrid, pool_of(200, seed_dir)) is None


def test_train_and_plan_print_it(project: Path, seed_dir: Path) -> None:
    for i in range(150):
        folder = project / "skills" / f"topic-{i:03d}"
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: topic-{i:03d}\ndescription: Tasks about topic {i}, in detail.\n---\n\n"
            + BODY
        )
    config = load_config(None, {"pool.n": 153, "pool.k": 2})
    _, notes = starting_pool(project / "skills", config)
    assert any("gating.policy: hybrid" in n for n in notes)
    result = runner.invoke(
        app,
        ["plan", "--benchmark", "addition.yaml", "--data", "addition.jsonl", "--n", "153",
         "--k", "2", "--model", "openai/scripted", "--no-pilot"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "note: the gate's prompt lists all 153 skills" in result.output
