"""The `agents` export (Agent Skills agents route by description) and what every export writes:
front matter that the Agent Skills reference validator and naive loaders read as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from export_env import Trained

from moscopt.core.skill_format import DESCRIPTION_MAX, clean_description, string_metadata
from moscopt.core.skills import Pool, Skill
from moscopt.exports.agent_skills import ROUTER_SKILL, with_hint


def export(trained: Trained, mode: str, *extra: str) -> Path:
    result = trained.invoke("export", "--mode", mode, "--run", str(trained.run), *extra)
    assert result.exit_code == 0, result.output
    return trained.root / trained.run / "exports" / mode


def test_agents_export_carries_the_routing_in_descriptions_and_a_router(trained: Trained) -> None:
    out = export(trained, "agents")
    pool = Pool.load(out / "skills")
    assert ROUTER_SKILL in pool.names and pool.gate is None
    planner = pool.get("cautious-planner").description
    assert "tasks that mention apples (with detail-verifier)" in planner
    assert "any other task (with careful-computation)" in planner  # the default
    router = pool.get(ROUTER_SKILL)
    assert router.description.startswith("Read this skill first")
    assert 'If the task contains the words "apples": use cautious-planner, detail-verifier.' in (
        router.body
    )
    manifest = json.loads((out / "moscopt-export.json").read_text())
    assert manifest["mode"] == "agents" and ROUTER_SKILL in manifest["skills"]
    assert manifest["agents"]["router_skill"] == ROUTER_SKILL
    first = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    export(trained, "agents", "--force")
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == first


def test_eval_of_an_agents_export_gives_the_agent_every_skill(trained: Trained) -> None:
    out = export(trained, "agents")
    before = len(trained.server.log)
    assert out.is_dir()
    args = ["--run", str(trained.run), "--mode", "agents", "--split", "test", "--json"]
    result = trained.invoke("eval", *args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    rows = [json.loads(x) for x in (trained.root / summary["results"]).read_text().splitlines()]
    assert {r["activation"] for r in rows} == {"all"}
    assert all(ROUTER_SKILL in r["skills"] for r in rows)
    gate = [
        r for r in trained.server.log[before:]
        if "## Available skills" in r.body["messages"][-1]["content"]
    ]  # fmt: skip
    assert gate == []


@pytest.mark.parametrize("mode", ["mixture", "static", "agents"])
def test_every_export_passes_the_reference_validator(trained: Trained, mode: str) -> None:
    skills_ref = pytest.importorskip("skills_ref")
    out = export(trained, mode)
    for folder in sorted((out / "skills").iterdir()):
        assert skills_ref.validate(folder) == [], folder


def test_model_written_descriptions_are_one_clean_line() -> None:
    text = "Helps.\n---\nname: evil\n---\n" + "word " * 400
    clean = clean_description(text)
    assert "\n" not in clean and "---" not in clean and len(clean) <= DESCRIPTION_MAX
    assert clean.startswith("Helps. -- name: evil --")
    assert string_metadata({"n": 1, "ok": True, "nested": {"a": [1]}, "s": "a\n---\nb"}) == {
        "n": "1",
        "ok": "true",
        "nested": '{"a": [1]}',
        "s": "a -- b",
    }


def test_a_hint_keeps_within_the_limit_and_naive_loaders_read_it(tmp_path: Path) -> None:
    skill = Skill(
        name="long",
        description="d " * 500,
        body="# B\n",
        metadata={"origin": "seed", "n": 3, "deep": {"x": 1}},
    )
    hinted = with_hint(skill, "Use it for tasks that mention apples.")
    assert len(hinted.description) <= DESCRIPTION_MAX
    assert hinted.description.endswith("Use it for tasks that mention apples.")
    assert hinted.metadata == {"origin": "seed", "n": "3", "deep": '{"x": 1}'}
    text = hinted.dumps()
    # the reference validator's parser: split on '---', strictyaml, metadata as strings
    front = text.split("---", 2)[1]
    strictyaml = pytest.importorskip("strictyaml")
    data = strictyaml.load(front).data
    assert data["description"] == hinted.description and data["metadata"]["n"] == "3"
