"""The distilled export: one valid SKILL.md, validated, with a retry and a clean failure."""

from __future__ import annotations

import json

from export_env import Trained

from moscopt.core.skills import Skill
from moscopt.exports.distill import parse_distilled
from moscopt.testing.scripted import MAGIC


def distill_requests(trained: Trained, since: int) -> list[int]:
    return [
        i
        for i, r in enumerate(trained.server.log[since:])
        if "Distil them" in r.body["messages"][-1]["content"]
    ]


def test_distilled_skill_is_valid_and_scored_next_to_the_mixture(trained: Trained) -> None:
    run = str(trained.run)
    result = trained.invoke("export", "--mode", "distilled", "--run", run)
    assert result.exit_code == 0, result.output
    assert "distilled skill 'merged-arithmetic-skill' merging" in result.output
    assert "validation 1.000 vs mixture 1.000 (4 tasks)" in result.output
    # four validation tasks: the comparison is flagged, with how few and how wide
    assert "warning: the validation rests on 4 tasks, too few to mean anything" in result.output
    assert "uncertain by up to ±0.49 (95%)" in result.output
    # the eval it suggests is bounded: the run's tasks per split (20 without --limit)
    assert "--split test --limit 20 --data " in result.output
    out = trained.root / run / "exports/distilled"
    path = out / "skills/merged-arithmetic-skill/SKILL.md"
    skill = Skill.load(path)  # a valid SKILL.md: front matter, name == folder
    assert skill.dumps() == path.read_text() and MAGIC in skill.body
    assert skill.metadata["origin"] == "distilled"
    manifest = json.loads((out / "moscopt-export.json").read_text())
    d = manifest["distilled"]
    assert d["validation_score"] == 1.0 and d["mixture_validation_score"] == 1.0
    assert d["attempts"] == 1 and len(d["merged"]) == 2
    # the prompt carried the top skills' concrete rules and the gate's guidance
    prompt = next(
        r.body["messages"][-1]["content"]
        for r in trained.server.log
        if "Distil them" in r.body["messages"][-1]["content"]
    )
    assert MAGIC in prompt and "## The router's instructions" in prompt
    # deterministic: the answer comes from the run's cache, the bytes are the same
    before = [p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()]
    count = len(trained.server.log)
    again = trained.invoke("export", "--mode", "distilled", "--run", run, "--force")
    assert again.exit_code == 0, again.output
    assert [p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()] == before
    assert len(trained.server.log) == count
    # eval of the distilled mode: the one skill, no gate call
    result = trained.invoke("eval", "--run", run, "--mode", "distilled", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["mode"] == "distilled" and summary["score"] == 1.0
    rows = (trained.root / summary["results"]).read_text().splitlines()
    assert {tuple(json.loads(r)["skills"]) for r in rows} == {("merged-arithmetic-skill",)}
    assert {json.loads(r)["activation"] for r in rows} == {"single"}


def test_unusable_answer_is_retried_once_with_a_new_sample(trained: Trained) -> None:
    trained.responder.distill = "bad-once"
    since = len(trained.server.log)
    result = trained.invoke("export", "--mode", "distilled", "--run", str(trained.run), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["distilled"]["attempts"] == 2
    assert len(distill_requests(trained, since)) == 2


def test_two_unusable_answers_fail_cleanly(trained: Trained) -> None:
    trained.responder.distill = "bad"
    result = trained.invoke("export", "--mode", "distilled", "--run", str(trained.run))
    assert result.exit_code == 1
    assert "gave no usable skill in 2 attempts" in result.output
    assert "Traceback" not in result.output
    assert not (trained.root / trained.run / "exports/distilled").exists()


def test_a_repetitive_skill_is_refused(trained: Trained) -> None:
    trained.responder.distill = "repeat"
    result = trained.invoke("export", "--mode", "distilled", "--run", str(trained.run))
    assert result.exit_code == 1, result.output
    assert "the body repeats one sentence 8 times ('always check the answer')" in result.output
    assert not (trained.root / trained.run / "exports/distilled").exists()


def test_repetition_is_told_from_a_skill() -> None:
    from moscopt.core.drafts import repetition

    assert repetition("# Steps\n\n1. Read the task.\n2. Compute.\n3. Check it.\n") is None
    assert repetition("Check it. Check it. Check it.") == (
        "the body repeats one sentence 3 times ('check it')"
    )
    spread = "\n".join(["Add the numbers.", "Carry the one.", "Add the numbers."] * 2)
    assert repetition(spread) == "the body repeats one sentence 4 times ('add the numbers')"
    assert repetition("A b. C d. A b. C d. E f.") is None  # twice each: a summary, allowed


def test_parse_distilled_is_strict() -> None:
    body = "# T\n\n1. a\n2. b\n3. c\n"
    skill = parse_distilled({"name": "Gate", "description": "d", "body": body}, ["a", "b"])
    assert skill.name == "distilled-skill" and skill.metadata["merged"] == "a, b"
    for bad in (
        "not json",
        {"name": "x", "description": "d"},
        {"name": "x", "description": "d", "body": body, "extra": 1},
        {"name": "x", "description": "", "body": body},
        {"name": "x", "description": "d", "body": "short"},
        {"name": "x", "description": "d" * 2000, "body": body},
    ):
        try:
            parse_distilled(bad, [])
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")
