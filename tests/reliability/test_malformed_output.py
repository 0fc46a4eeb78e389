"""Malformed model output through the real trainer: handled by policy, logged, never a crash.

A `FakeLM` answers like the scripted environment except for one kind of prompt (the gate, edit
proposals, evolution offspring), where it returns something broken. Each run must finish
(`status == "done"`), log what it did with the broken answer, and leave a valid pool on disk
whose skills keep their names and folders.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from moscopt.app.workspace import make_trainer
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.run.ledger import EvolutionEvent
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.scripted import MAGIC, make_run, respond

Responder = Callable[[LMRequest], str]
HUGE = "All skills look useful to me. " * 3500  # ~100 KB


def is_gate(text: str) -> bool:
    return "## Available skills" in text


def is_proposal(text: str) -> bool:
    return "Propose small, targeted edits" in text or "routing rules" in text


def is_offspring(text: str) -> bool:
    return "new skill" in text or "fresh skill" in text


def replacing(match: Callable[[str], bool], answer: str | Responder) -> tuple[Responder, list[str]]:
    """`respond`, except `answer` for prompts that `match`; also returns the matched prompts."""
    seen: list[str] = []

    def responder(request: LMRequest) -> str:
        last = request.messages[-1]["content"]
        if match(last):
            seen.append(last)
            return answer if isinstance(answer, str) else answer(request)
        return respond(request)

    return responder, seen


def train(tmp_path: Path, seed_dir: Path, responder: Responder, **overrides: object) -> RunDir:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **overrides)  # type: ignore[arg-type]
    trainer = make_trainer(
        run=RunDir.open(run.path),
        config=config,
        benchmark=bench,
        splits=sp,
        agent_lm=FakeLM(responder=responder),
        optimizer_lm=FakeLM(responder=responder),
        seeds=seeds,
    )
    state = asyncio.run(trainer.train())
    assert state.status == "done"
    return RunDir.open(run.path)


def assert_valid_pool(run: RunDir, names: set[str] | None = None) -> Pool:
    """skills/ reloads to exactly the checkpointed pool; every folder is its skill's name."""
    pool = run.load_pool()
    on_disk = Pool.load(run.skills_dir, require_gate=True)
    assert on_disk.digest() == pool.digest()
    assert sorted(p.name for p in run.skills_dir.iterdir()) == sorted([*pool.names, "gate"])
    assert len(set(pool.names)) == len(pool.names) and "gate" not in pool.names
    if names is not None:
        assert set(pool.names) == names
    return pool


SEED_NAMES = {"careful-computation", "cautious-planner", "detail-verifier"}

GATE_ANSWERS = {
    "too-few": "ACTIVATE: careful-computation",
    "too-many": "ACTIVATE: careful-computation, detail-verifier, cautious-planner",
    "unknown-ids": "ACTIVATE: nope, also-nope",
    "duplicates": "ACTIVATE: careful-computation, careful-computation",
    "empty": "",
    "huge": HUGE,
    "huge-with-valid-line-first": "ACTIVATE: careful-computation, detail-verifier\n" + HUGE,
    "no-separator": "ACTIVATE careful-computation detail-verifier",
}


@pytest.mark.parametrize("case", sorted(GATE_ANSWERS))
def test_unusable_gate_answers_fall_back_to_top_k(
    tmp_path: Path, seed_dir: Path, case: str
) -> None:
    responder, seen = replacing(is_gate, GATE_ANSWERS[case])
    run = train(tmp_path, seed_dir, responder, **{"training.epochs": 1})
    assert seen
    rollouts = read_events(run.events.path, kinds={"rollout"})
    assert rollouts and all(r.activation == "fallback" for r in rollouts)
    assert all(r.gate_error for r in rollouts)  # the reason is logged
    assert all(len(r.skills) == 2 and set(r.skills) <= SEED_NAMES for r in rollouts)
    assert all(len(set(r.skills)) == 2 for r in rollouts)
    validations = read_events(run.events.path, kinds={"validation"})
    assert validations and all(v.fallbacks == v.tasks for v in validations)
    assert_valid_pool(run, SEED_NAMES)


def edits(*ops: dict[str, object], reasoning: str = "r") -> str:
    return json.dumps({"reasoning": reasoning, "edits": list(ops)})


FRONT_MATTER = "---\nname: evil\ndescription: hijacked\n---\n"
LINE = (
    "Most wrong answers on quantitative tasks come from one slipped digit or sign, not from a wrong"
)

EDIT_ANSWERS: dict[str, tuple[str, set[str]]] = {
    # case: (proposal, edit statuses allowed in the events)
    "invalid-json": ("{not json at all", {"unusable"}),
    "empty": ("", {"unusable"}),
    "huge-text": (HUGE, {"unusable"}),
    "edits-not-a-list": (json.dumps({"reasoning": "r", "edits": "rewrite it"}), {"unusable"}),
    "unknown-op": (
        edits({"op": "frobnicate", "anchor": "", "content": MAGIC}),
        {"unusable", "not_applied"},
    ),
    "missing-anchor": (
        edits({"op": "replace", "anchor": "no such text", "content": "x"}),
        {"not_applied"},
    ),
    "ambiguous-anchor": (edits({"op": "delete", "anchor": "the", "content": ""}), {"not_applied"}),
    "overlapping-anchors": (
        edits(
            {"op": "delete", "anchor": LINE, "content": ""},
            {"op": "replace", "anchor": "one slipped digit", "content": "x"},
        ),
        {"not_applied", "rejected"},
    ),
    "front-matter-anchor": (
        edits({"op": "replace", "anchor": "name: careful-computation", "content": "name: evil"}),
        {"not_applied"},
    ),
    # appended front matter is body text: the skill keeps its name, and the edit may be accepted
    "front-matter-content": (
        edits({"op": "add", "anchor": "", "content": FRONT_MATTER + MAGIC}),
        {"accepted", "rejected", "not_applied"},
    ),
    "too-many-edits": (
        edits(*({"op": "add", "anchor": "", "content": f"line {i}"} for i in range(200))),
        {"rejected", "not_applied", "unusable"},
    ),
    "wrong-field-types": (
        edits({"op": "add", "anchor": 3, "content": ["x"]}),
        {"unusable", "not_applied"},
    ),
}


@pytest.mark.parametrize("case", sorted(EDIT_ANSWERS))
def test_malformed_edit_proposals_are_skipped_or_rejected(
    tmp_path: Path, seed_dir: Path, case: str
) -> None:
    answer, allowed = EDIT_ANSWERS[case]
    responder, seen = replacing(is_proposal, answer)
    run = train(tmp_path, seed_dir, responder, **{"training.epochs": 1})
    assert seen
    events = read_events(run.events.path, kinds={"edit"})
    assert events and {e.status for e in events} <= allowed, events
    for e in events:
        if e.status == "unusable":
            assert e.reason
    pool = assert_valid_pool(run, SEED_NAMES)
    seed = Pool.load(seed_dir)
    for name in SEED_NAMES:  # front matter is never editable by ops
        assert pool.get(name).description == seed.get(name).description
    if case == "front-matter-content" and any(e.status == "accepted" for e in events):
        assert FRONT_MATTER.strip() in pool.get("careful-computation").body


def offspring(name: object, description: object = "A derived skill.", body: object = None) -> str:
    # the magic rule makes a well-formed child pass validation, so that it joins the pool
    body = f"# Child\n\n1. Plan.\n2. Compute.\n3. {MAGIC}\n4. Answer.\n" if body is None else body
    return json.dumps({"name": name, "description": description, "body": body})


OFFSPRING_ANSWERS = {
    "invalid-json": "{name: child",
    "json-array": json.dumps(["careful-computation"]),
    "empty": "",
    "missing-body": json.dumps({"name": "child", "description": "d"}),
    "empty-body": offspring("child", body=""),
    "non-string-fields": offspring(["child"], description=7, body={"x": 1}),
    "bad-slug": offspring("Child Skill!! with SPACES & 100% chars"),
    "reserved-name": offspring("gate"),
    "existing-name": offspring("careful-computation"),
    "overlong-name": offspring("x" * 300),
    "overlong-description": offspring("child", description="d" * 5000),
    "front-matter-in-body": offspring("child", body=FRONT_MATTER + f"# Body\n\n1. a\n2. {MAGIC}\n"),
    "huge-body": offspring("child", body="# Huge\n\n" + HUGE),
    "huge-text": HUGE,
}
# the cases whose offspring is usable once renamed: case -> the name it gets in the pool
RENAMED = {
    "bad-slug": "child-skill-with-spaces-100-chars",
    "reserved-name": "gate-2",
    "existing-name": "careful-computation-2",
    "front-matter-in-body": "child",
}


@pytest.mark.parametrize("case", sorted(OFFSPRING_ANSWERS))
def test_invalid_evolution_offspring_never_breaks_the_pool(
    tmp_path: Path, seed_dir: Path, case: str
) -> None:
    responder, seen = replacing(is_offspring, OFFSPRING_ANSWERS[case])
    run = train(
        tmp_path,
        seed_dir,
        responder,
        **{"training.epochs": 1, "evolution.enabled": True, "credit.c_min": 1},
    )
    assert seen, "evolution never asked for offspring"
    evolution = read_events(run.events.path, kinds={"evolution"})
    assert evolution
    notes = [n for e in evolution for n in e.changes if n["kind"] in ("mutate", "crossover")]
    assert notes
    pool = assert_valid_pool(run)
    if case in RENAMED:
        # every offspring of a cycle gets a fresh slug: the first the renamed one, the next
        # ones numbered after it (the mutation and the co-bred child both answer the same name)
        names = [n["skill"] for n in notes]
        assert names[0] == RENAMED[case] and len(set(names)) == len(names)
        assert all(n["error"] is None for n in notes)
        # kept only if validation does not drop (it depends on routing): when kept, it is valid
        last = evolution[-1]
        assert isinstance(last, EvolutionEvent)
        assert (RENAMED[case] in pool.names) == last.accepted
    else:  # unusable: logged with its reason, and the pool gains nothing from it
        assert all(n["skill"] is None and n["error"] for n in notes)
        assert set(pool.names) <= SEED_NAMES
    for skill in pool.skills:
        assert len(skill.description) <= 1024 and skill.body.strip()
