from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

from moscopt.config import load_config
from moscopt.evolve import best_pair, eliminate, new_skill, next_generation
from moscopt.skills import Pool, Skill
from moscopt.state import RunState
from moscopt.testing import FakeLM

BODY = "# S\n\n1. Plan.\n2. Compute.\n3. Check.\n4. Answer.\n"


SAME = "# Same\n\n" + "Do the same careful thing every time.\n" * 20


def child(name: str, body: str = BODY) -> str:
    return json.dumps({"name": name, "description": "A child.", "body": body + f"\n{name}\n"})


def test_selection_rules() -> None:
    names = ["a", "b", "c", "d"]
    q = {"a": 0.1, "b": 0.2, "c": 0.9, "d": 0.05}
    acts = {"a": 9, "b": 9, "c": 9, "d": 2}
    synergy = {"a|c": 5, "b|c": 1}
    # d is too young to rank, a is protected by its high-synergy pair with c
    assert eliminate(names, q, acts, synergy, m=1, c_min=5, protect_above=3) == ["b"]
    assert eliminate(names, q, acts, {}, m=2, c_min=5, protect_above=3) == ["a", "b"]
    assert best_pair(names, synergy) == ("a", "c")
    assert best_pair(["b", "d"], synergy) is None


def test_new_skill_is_validated_and_renamed() -> None:
    skill = new_skill(
        {"name": "Math Expert!", "description": "d", "body": BODY}, {"math-expert"}, "mutation"
    )
    assert skill.name == "math-expert-2" and skill.metadata == {"origin": "mutation"}
    for bad in ({"name": "x"}, {"name": "x", "description": "d", "body": "short"}, "[1]"):
        try:
            new_skill(bad, set(), "m")
        except (ValueError, TypeError):
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_generation_replaces_eliminated_and_restores_diversity(seed_dir: Path) -> None:
    same = SAME
    pool = Pool(
        skills=(
            Skill(name="a", description="d", body=same),
            Skill(name="b", description="d", body=same),
            Skill(name="c", description="d", body=same + "x\n"),
        ),
        gate=None,
    )
    state = RunState(
        q={"a": 0.9, "b": 0.1, "c": 0.5},
        activations={"a": 9, "b": 9, "c": 9},
        names_used=["a", "b", "c", "old"],
    )
    config = load_config(
        None,
        {
            "pool.n": 3,
            "pool.k": 1,
            "evolution.embedding_model": "difflib",
            "evolution.fresh_skills": 1,
        },
    )
    lm = FakeLM([child("kid", SAME), child("mutant"), child("fresh-one")])
    seeds = Pool.load(seed_dir)
    new, notes = asyncio.run(next_generation(lm, pool, state, config, seeds, random.Random(0)))
    kinds = [n["kind"] for n in notes]
    assert kinds == ["eliminate", "mutate", "diversity", "forced_mutation", "fresh"]
    assert notes[0]["skill"] == "b" and notes[2]["similarity"] > 0.85
    assert len(new) == 3 and "b" not in new.names
    assert {"kid", "mutant", "fresh-one"} <= set(new.names) | {notes[4]["replaced"]}
    assert "mutate" in lm.purposes[0] and lm.purposes[-1] == "evolve-fresh"


def test_failed_offspring_is_reported_not_raised(seed_dir: Path) -> None:
    pool = Pool(
        skills=(
            Skill(name="a", description="d", body=BODY),
            Skill(name="b", description="d", body="# Other\n\nsomething else entirely\n"),
        )
    )
    state = RunState(q={"a": 0.9, "b": 0.1}, activations={"a": 9, "b": 9})
    config = load_config(None, {"pool.n": 2, "pool.k": 1, "evolution.embedding_model": "difflib"})
    lm = FakeLM(["not json at all"])
    new, notes = asyncio.run(
        next_generation(lm, pool, state, config, Pool.load(seed_dir), random.Random(0))
    )
    assert new.names == ["a"] and notes[1]["skill"] is None and notes[1]["error"]
