from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.core.skills import Pool, Skill
from moscopt.optimizer.policies.gate_restoration import GateRestoration
from moscopt.routing.gate import (
    GateParseError,
    fallback_top_k,
    parse_activation,
    random_k,
    summary_table,
)

NAMES = ["careful-computation", "cautious-planner", "detail-verifier", "edge-case-hunter"]


def test_parses_the_last_activate_line_tolerantly() -> None:
    text = "Thinking...\nACTIVATE: foo\nFinal:\n**Activate:** `Cautious-Planner`, detail-verifier."
    assert parse_activation(text, NAMES, 2) == ("cautious-planner", "detail-verifier")
    assert parse_activation("ACTIVATE: [careful-computation]", NAMES, 1) == ("careful-computation",)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no line"),
        ("I pick the planner", "no line"),
        ("ACTIVATE: cautious-planner", "exactly 2"),
        ("ACTIVATE: cautious-planner, detail-verifier, edge-case-hunter", "exactly 2"),
        ("ACTIVATE: cautious-planner, nonsense", "unknown"),
        ("ACTIVATE: cautious-planner, cautious-planner", "duplicate"),
        ("ACTIVATE:", "exactly 2"),
        ("x" * 100_000, "no line"),
    ],
)
def test_malformed_answers_are_typed_errors(text: str, reason: str) -> None:
    with pytest.raises(GateParseError, match=reason):
        parse_activation(text, NAMES, 2)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=1, max_value=4))
def test_parser_returns_k_valid_ids_or_raises(text: str, k: int) -> None:
    try:
        ids = parse_activation(text, NAMES, k)
    except GateParseError:
        return
    assert len(ids) == k == len(set(ids)) and set(ids) <= set(NAMES)


def test_fallback_prefers_ranked_skills_then_q() -> None:
    q = {"careful-computation": 0.9, "cautious-planner": 0.5, "detail-verifier": 0.7}
    acts = {"careful-computation": 2, "cautious-planner": 6, "detail-verifier": 9}
    assert fallback_top_k(NAMES, q, acts, 2, c_min=5) == ("detail-verifier", "cautious-planner")
    assert fallback_top_k(NAMES, q, acts, 2, c_min=0) == ("careful-computation", "detail-verifier")
    assert fallback_top_k(NAMES, {}, {}, 2, c_min=5) == ("careful-computation", "cautious-planner")


def test_random_gate_is_seeded() -> None:
    a = random_k(NAMES, 2, random.Random(1))
    assert a == random_k(NAMES, 2, random.Random(1)) and len(set(a)) == 2


def test_summary_table_plain_and_enriched() -> None:
    pool = Pool(
        skills=(Skill(name="a", description="does | things"), Skill(name="b", description="x"))
    )
    plain = summary_table(pool)
    assert plain.splitlines()[2] == "| a | does / things |"
    rich = summary_table(pool, q={"a": 0.912}, activations={"a": 18})
    assert "| a | does / things | 0.91 | 18 |" in rich and "| b | x | n/a | 0 |" in rich


def steps(failures: int, answers: int) -> list[str]:
    """A step's activation sources with `failures` parse failures out of `answers`."""
    return ["fallback"] * failures + ["gate"] * (answers - failures)


def test_gate_restoration_needs_consecutive_bad_steps() -> None:
    m = GateRestoration(threshold=0.3, window=3)
    assert not m.observe(steps(4, 10))
    assert not m.observe(steps(1, 10))  # breaks the streak
    assert not m.observe(steps(4, 10))
    assert not m.observe(steps(5, 10))
    assert m.observe(steps(10, 10))
    assert m.history == []
