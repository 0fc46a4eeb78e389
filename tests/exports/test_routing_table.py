"""The routing table on its own: derivation, the file format, matching, parse errors."""

from __future__ import annotations

import asyncio
import random

import pytest

from moscopt.errors import UserError
from moscopt.routing.table import RoutingTable, StaticRouter, words
from moscopt.routing.table_derivation import Decision, derive

A, B, C = ("a", "b"), ("a", "c"), ("b", "c")


def decisions() -> list[Decision]:
    out = [Decision(f"geo-{i}", f"Find the area of triangle {i}.", A) for i in range(3)]
    out += [Decision(f"prob-{i}", f"A fair die is rolled {i} times.", B) for i in range(3)]
    # C needs two words: 'sum' alone and 'digits' alone also occur in default-routed tasks
    out += [Decision(f"dig-{i}", f"What is the sum of the digits of {i}?", C) for i in range(2)]
    out += [Decision("geo-sum", "What is the sum of angles in triangle 9?", A)]
    out += [Decision("dflt-digits", "How many digits does 2^10 have?", B)]
    out += [Decision("dflt-sum", "What is the sum of 2 and 3?", B)]
    out += [Decision("odd", "Something unlike the rest.", C)]
    return out


def test_derive_learns_general_rules_and_is_order_independent() -> None:
    found = derive(decisions(), B)
    shuffled = decisions()
    random.Random(3).shuffle(shuffled)
    assert derive(shuffled, B) == found
    table = found.table
    for d in decisions():
        if d.task_id != "odd":
            assert table.match(d.text).skills == d.skills, d
    assert found.decisions == 12 and found.agreeing == 11
    assert (found.by_words, found.by_default, found.unmatched) == (6, 5, 1)
    rendered = [r.render() for r in table.rules]
    assert rendered == [
        "IF WORDS triangle THEN ACTIVATE: a, b",
        "IF WORDS digits, sum THEN ACTIVATE: b, c",
    ]
    # generalization: unseen tasks with the learned words
    assert table.match("What is the SUM of all digits of 77?").skills == C
    assert table.match("A right triangle has legs 3 and 4.").skills == A
    assert table.match("Unrelated.").skills == B


def test_no_rule_copies_a_training_task() -> None:
    """A task that no general rule routes as the gate did gets DEFAULT: before, it was pinned
    by an `IF TEXT` rule holding its whole text, a rule that routes that one task only."""
    found = derive(decisions(), B)
    assert all(r.kind == "words" for r in found.table.rules)
    assert all(r.support >= 2 for r in found.table.rules)
    texts = {" ".join(d.text.lower().split()) for d in decisions()}
    assert not any(" ".join(r.pattern).lower() in texts for r in found.table.rules)
    assert found.table.match("Something unlike the rest.").skills == B  # DEFAULT


def test_file_round_trip_and_router() -> None:
    table = derive(decisions(), B).table
    text = "# Title\n\nprose\n\n" + table.rules_section() + "\n## Skills\n\n| x |\n"
    again = RoutingTable.loads(text)
    assert again == table and again.rules_section() == table.rules_section()
    activation = asyncio.run(StaticRouter(table).select("area of a triangle"))
    assert activation.skills == A and activation.source == "static"


def test_identical_texts_with_different_decisions_are_counted() -> None:
    found = derive(
        [
            Decision("1", "Same text.", A),
            Decision("2", "Same text.", A),
            Decision("3", "Same  text.", C),
            Decision("4", "Other.", B),
        ],
        B,
    )
    assert found.agreeing == 1 and found.unmatched == 3  # 'same' and 'text' are in both sets
    assert found.table.rules == ()


def test_no_decisions_gives_only_default() -> None:
    found = derive([], A)
    assert found.table.rules == () and found.table.match("anything").skills == A


def test_words_are_lowercase_runs_of_letters_and_digits() -> None:
    assert words("Apples, 3 PEARS; naïve_x") == {"apples", "3", "pears", "naïve", "x"}


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("1. IF WORDS x THEN ACTIVATE: a, b\n", None, "no 'DEFAULT: ...' line"),
        ("DEFAULT: a, b\n1. IF WORDS x THEN ACTIVATE: a, b\n", 4, "nothing may follow DEFAULT"),
        ('1. IF TEXT "open THEN ACTIVATE: a, b\nDEFAULT: a, b\n', 3, "TEXT needs a JSON string"),
        ("1. IF WORDS x y THEN ACTIVATE: a, b\nDEFAULT: a, b\n", 3, "comma-separated list"),
        ("1. IF WORDS x THEN ACTIVATE: a\nDEFAULT: a, b\n", 3, "every line must name K skills"),
        ("1. IF WORDS x THEN ACTIVATE: a, a\nDEFAULT: a, b\n", 3, "listed twice"),
        ("1. IF WORDS x THEN USE: a, b\nDEFAULT: a, b\n", 3, "expected 'THEN ACTIVATE: a, b'"),
        ("1. WHEN x THEN ACTIVATE: a, b\nDEFAULT: a, b\n", 3, "expected 'N. IF WORDS"),
        ("DEFAULT: A_B\n", 3, "'A_B' is not a skill name"),
    ],
)
def test_parse_errors_name_the_line(body: str, line: int | None, message: str) -> None:
    with pytest.raises(UserError) as e:
        RoutingTable.loads("## Rules\n\n" + body, path="ROUTING.md")
    assert message in str(e.value)
    assert e.value.line == line


def test_missing_section_and_unknown_skills() -> None:
    with pytest.raises(UserError, match="no '## Rules' section"):
        RoutingTable.loads("# nothing\n", path="R.md")
    table = RoutingTable.loads("## Rules\n1. IF WORDS x THEN ACTIVATE: a, z\nDEFAULT: a, b\n")
    with pytest.raises(UserError) as e:
        table.check_skills(["a", "b"], "R.md")
    assert e.value.line == 2 and "unknown skill 'z'" in str(e.value)
