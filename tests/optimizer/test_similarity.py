"""Issue 17, section 7: the diversity check says which method ran and uses that method's scale
(its fallback to difflib is tested with the embedders, tests/embedding)."""

from __future__ import annotations

import asyncio
import difflib
import json
import random
from pathlib import Path

import pytest

from moscopt.config import load_config
from moscopt.core.skills import Pool, Skill
from moscopt.optimizer.evolve import next_generation
from moscopt.optimizer.similarity import DIFFLIB_THRESHOLDS, mean_pairwise_similarity, threshold_for
from moscopt.run.state import RunState
from moscopt.testing import FakeLM


def test_the_threshold_moves_onto_the_difflib_scale_only_for_difflib() -> None:
    assert threshold_for("sentence-transformers/all-MiniLM-L6-v2", 0.85) == 0.85
    assert threshold_for("difflib", 0.85) == 0.412  # scripts/calibrate_diversity.py
    assert threshold_for("difflib", 0.0) == 0.0 and threshold_for("difflib", 1.0) == 1.0
    assert threshold_for("difflib", 0.875) == pytest.approx((0.412 + 0.573) / 2, abs=1e-4)
    steps = [threshold_for("difflib", i / 100) for i in range(101)]
    assert steps == sorted(steps)  # never reorders thresholds
    assert all(y <= x for x, y in DIFFLIB_THRESHOLDS)  # difflib ratios run lower


def lines(tag: str, n: int = 20) -> list[str]:
    """`n` lines of 50 letters drawn by a generator seeded with `tag` (alike only to their own)."""
    rng = random.Random(tag)
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(50)) for _ in range(n)]


def test_a_pool_alike_by_difflib_is_caught_at_the_calibrated_threshold(seed_dir: Path) -> None:
    # three skills sharing 12 of their 20 lines: a difflib mean near 0.6, under 0.85 (so the
    # uncalibrated check would pass them) and over 0.412
    shared = lines("shared")[:12]
    bodies = {n: "\n".join(shared + lines(n)[:8]) + "\n" for n in ("a", "b", "c")}
    sim = mean_pairwise_similarity(list(bodies.values()), "difflib")[0]
    assert 0.412 < sim < 0.85
    pool = Pool(skills=tuple(Skill(name=n, description="d", body=b) for n, b in bodies.items()))
    # no skill ranked: none is eliminated, so the cycle's place (M = 1) goes to the diversity step
    state = RunState(q={"a": 0.9, "b": 0.5, "c": 0.1}, activations=dict.fromkeys(bodies, 0))
    config = load_config(
        None,
        {
            "pool.n": 3,
            "pool.k": 1,
            "evolution.embedding_model": "difflib",
            "evolution.eliminate": 1,
            "evolution.fresh_skills": 0,
            "evolution.diversity_threshold": 0.85,
        },
    )
    body = "\n".join(lines("fresh")) + "\n"
    lm = FakeLM([json.dumps({"name": "mutant", "description": "A child.", "body": body})])
    seeds = Pool.load(seed_dir)
    new, notes = asyncio.run(next_generation(lm, pool, state, config, seeds, random.Random(0)))
    diversity = next(n for n in notes if n["kind"] == "diversity")
    assert diversity["method"] == "difflib" and diversity["threshold"] == 0.412
    assert diversity["similarity"] == round(sim, 4)
    forced = next(n for n in notes if n["kind"] == "forced_mutation")
    assert forced["skill"] == "mutant" and "mutant" in new.names
    assert difflib.SequenceMatcher(None, bodies["a"], body).ratio() < 0.412
