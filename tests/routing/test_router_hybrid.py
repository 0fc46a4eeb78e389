"""`gating.policy: hybrid`: the familiarity router's shortlist is all the LLM gate reads, so a
gate call costs fewer prompt tokens than the plain LLM gate's over the whole pool."""

from __future__ import annotations

import asyncio

import numpy as np

from moscopt.core.skills import Pool, Skill
from moscopt.embedding.hashing import HashingEmbedder
from moscopt.lm.base import LMRequest
from moscopt.routing.familiarity import FamiliarityModel, Hyper
from moscopt.routing.features import FeatureCache
from moscopt.routing.gate import LLMGate
from moscopt.routing.projection import Projection
from moscopt.routing.router import FamiliarityRouter, HybridRouter
from moscopt.testing import FakeLM

NAMES = ("algebra", "counting", "dates", "geometry", "spelling", "units")
FAMILIARITY = [0.2, 0.9, 0.1, 0.7, 0.05, 0.6]  # shortlist of 3: counting, geometry, units
TASK = "How many days are in 3 weeks?"


def pool() -> Pool:
    skills = tuple(
        Skill(name=n, description=f"Use for {n} problems of every kind.", body=n) for n in NAMES
    )
    return Pool(skills=skills, gate=Skill(name="gate", description="Routes.", body="Pick."))


def familiar() -> FamiliarityRouter:
    """Heads set so that every task has the familiarity `FAMILIARITY` (f_i = exp(-s_i²) for
    W_i = (1 - s_i) T_i)."""
    embedder = HashingEmbedder(64)
    texts = [TASK, *(f"Task {i} about {n}" for i, n in enumerate(NAMES))]
    projection = Projection.fit([embedder.encode(t) for t in texts], 6)
    model = FamiliarityModel(projection=projection, seed=0, hyper=Hyper(), names=NAMES)
    s = np.sqrt(-np.log(np.array(FAMILIARITY, np.float32)))
    model.weight = ((1.0 - s)[:, None, None] * model.target).astype(np.float32)
    return FamiliarityRouter(model, FeatureCache(embedder), NAMES)


def gate_lm() -> FakeLM:
    def gate(request: LMRequest) -> str:
        return "ACTIVATE: geometry, counting"

    return FakeLM(routes={"gate": gate})


def prompt(lm: FakeLM) -> str:
    (request,) = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "gate"]
    return "\n".join(str(m["content"]) for m in request.messages)


def test_the_gate_reads_only_the_shortlist_and_fewer_tokens_than_the_llm_gate() -> None:
    hybrid_lm, llm_lm = gate_lm(), gate_lm()
    hybrid = HybridRouter(familiar(), hybrid_lm, pool(), 2, shortlist=3)
    activation = asyncio.run(hybrid.select(TASK))
    assert activation.skills == ("geometry", "counting") and activation.source == "gate"
    assert activation.offered == ("counting", "geometry", "units")  # what the gate chose from
    text = prompt(hybrid_lm)
    rows = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")]
    assert sorted(rows[1:]) == ["counting", "geometry", "units"]  # the header, then the shortlist
    for name in ("algebra", "dates", "spelling"):
        assert name not in text

    asyncio.run(LLMGate(llm_lm, pool(), 2).select(TASK))
    full = prompt(llm_lm)
    assert all(f"| {n} |" in full for n in NAMES)
    assert len(text.split()) < len(full.split())  # fewer words, fewer tokens


def test_a_shortlist_no_longer_than_k_needs_no_gate_call() -> None:
    lm = gate_lm()
    activation = asyncio.run(HybridRouter(familiar(), lm, pool(), 2, shortlist=2).select(TASK))
    assert activation.skills == ("counting", "geometry") and activation.source == "familiarity"
    assert activation.offered == ()
    assert "gate" not in lm.purposes
