from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.core.edits import (
    MAX_BODY_CHARS,
    Edit,
    ProposalError,
    apply_edits,
    find_anchor,
    parse_proposal,
    proposal_schema,
)
from moscopt.core.skills import Skill

BODY = "# Skill\n\n1. Read the task.\n2. Compute.\n3. Answer.\n"


def one(text: str, edit: Edit) -> tuple[str, str, str]:
    result = apply_edits(text, [edit])
    o = result.outcomes[0]
    return result.text, o.status, o.reason


def test_add_after_a_line_inserts_a_new_line() -> None:
    text, status, _ = one(BODY, Edit("add", "2. Compute.", "2b. Check the arithmetic."))
    assert status == "applied"
    assert "2. Compute.\n2b. Check the arithmetic.\n3. Answer." in text


def test_add_inline_and_append() -> None:
    text, status, _ = one(BODY, Edit("add", "Read the", " whole"))
    assert status == "applied" and "Read the whole task." in text
    text, status, _ = one(BODY, Edit("add", "", "## Notes\nBe brief."))
    assert status == "applied" and text.endswith("3. Answer.\n\n## Notes\nBe brief.\n")


def test_delete_whole_line_and_replace() -> None:
    text, status, _ = one(BODY, Edit("delete", "2. Compute.", ""))
    assert status == "applied" and text == "# Skill\n\n1. Read the task.\n3. Answer.\n"
    text, status, _ = one(BODY, Edit("replace", "Compute.", "Compute exactly."))
    assert status == "applied" and "2. Compute exactly.\n" in text


def test_whitespace_insensitive_anchor() -> None:
    text, status, _ = one("a long\nline here\n", Edit("replace", "long line", "short line"))
    assert status == "applied" and text == "a short line here\n"


@pytest.mark.parametrize(
    ("edit", "status", "reason"),
    [
        (Edit("add", "nowhere to be found", "x"), "skipped", "anchor not found"),
        (Edit("replace", ".", "!"), "skipped", "ambiguous"),
        (Edit("rewrite", "Compute", "x"), "error", "unknown op"),
        (Edit("delete", "", ""), "error", "non-empty anchor"),
        (Edit("replace", "Compute", ""), "error", "non-empty content"),
        (Edit("add", "Compute", "x" * 5000), "error", "too long"),
        (Edit("replace", "Compute.", "Compute."), "skipped", "no change"),
    ],
)
def test_bad_edits_never_raise_and_leave_text(edit: Edit, status: str, reason: str) -> None:
    text, got, why = one(BODY, edit)
    assert (got, text) == (status, BODY)
    assert reason in why


def test_budget_and_sequential_application() -> None:
    edits = [
        Edit("replace", "Compute.", "Compute carefully."),
        Edit("add", "Compute carefully.", "\nThen verify."),  # sees the first edit's result
        Edit("add", "", "extra"),
    ]
    result = apply_edits(BODY, edits, max_edits=2)
    assert [o.status for o in result.outcomes] == ["applied", "applied", "skipped"]
    assert "Compute carefully.\nThen verify.\n3. Answer." in result.text
    assert result.applied == 2 and "budget" in result.outcomes[2].reason


def test_body_size_is_bounded() -> None:
    big = "x\n" * (MAX_BODY_CHARS // 2 - 10)
    text, status, reason = one(big, Edit("add", "", "y" * 3000))
    assert status == "error" and text == big and "exceed" in reason


def test_content_that_looks_like_front_matter_cannot_break_the_file() -> None:
    skill = Skill(name="s", description="d", body=BODY)
    text, status, _ = one(skill.body, Edit("add", "", "---\nname: evil\n---"))
    assert status == "applied"
    edited = skill.with_body(text)
    again = Skill.loads(edited.dumps())
    assert again.name == "s" and again.body == edited.body


def test_parse_proposal_shapes() -> None:
    p = parse_proposal('{"reasoning": "r", "edits": [{"op": "ADD", "anchor": "", "content": "c"}]}')
    assert p.edits == (Edit("add", "", "c"),) and p.reasoning == "r"
    fenced = '```json\n{"reasoning": "r", "edits": []}\n```'
    assert parse_proposal(fenced).edits == ()
    prose = 'Sure! Here it is: {"reasoning": "r", "edits": [1, {"op": "delete", "anchor": "a"}]}'
    p = parse_proposal(prose)
    assert p.edits == (Edit("delete", "a", ""),) and p.invalid == ("edit 0: not an object",)
    for bad in ("", "no json", "[1, 2]", '{"reasoning": 1, "edits": []}', '{"edits": {}}'):
        with pytest.raises(ProposalError):
            parse_proposal(bad)


def test_schema_is_bounded() -> None:
    schema = proposal_schema(3)
    assert schema["properties"]["edits"]["maxItems"] == 3
    assert schema["additionalProperties"] is False


texts = st.text(alphabet=st.sampled_from("ab c\n-#.:"), max_size=80)


@settings(max_examples=400, deadline=None)
@given(
    body=texts,
    edits=st.lists(
        st.builds(
            Edit,
            op=st.sampled_from(["add", "delete", "replace", "bogus"]),
            anchor=texts,
            content=texts,
        ),
        max_size=5,
    ),
)
def test_applier_never_raises_and_reports_every_edit(body: str, edits: list[Edit]) -> None:
    result = apply_edits(body, edits)
    assert len(result.outcomes) == len(edits)
    if not result.changed:
        assert result.text == body


@settings(max_examples=300, deadline=None)
@given(body=texts, anchor=texts.filter(lambda s: s.strip() != ""), content=texts)
def test_unique_anchor_edits_do_what_they_say(body: str, anchor: str, content: str) -> None:
    spans = find_anchor(body, anchor)
    text, status, _ = one(body, Edit("replace", anchor, content))
    if len(spans) != 1:
        assert status != "applied"
        return
    if status == "applied":
        start, end = spans[0]
        assert text == body[:start] + content + body[end:]


@settings(max_examples=300, deadline=None)
@given(
    raw=st.one_of(
        st.text(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda c: (
                st.lists(c, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["reasoning", "edits", "op", "anchor", "content"]),
                    c,
                    max_size=4,
                )
            ),
            max_leaves=10,
        ).map(json.dumps),
    )
)
def test_parser_returns_a_proposal_or_a_typed_error(raw: str) -> None:
    try:
        proposal = parse_proposal(raw)
    except ProposalError as e:
        assert str(e)
        return
    assert all(isinstance(e, Edit) and isinstance(e.anchor, str) for e in proposal.edits)


@given(st.lists(st.sampled_from(["a rule", "b", "", "  c c  ", "a rule", "d"]), max_size=12))
def test_unique_lines_each_match_exactly_once(lines: list[str]) -> None:
    from moscopt.core.edits import unique_lines

    body = "\n".join(lines)
    for line in unique_lines(body):
        assert line and body.count(line) == 1


def test_constrained_proposals_may_anchor_only_on_the_skills_own_lines() -> None:
    from moscopt.core.edits import proposal_schema

    schema = proposal_schema(3, ["1. Plan.", "2. Check."])
    anchor = schema["properties"]["edits"]["items"]["properties"]["anchor"]
    assert anchor["enum"] == ["", "1. Plan.", "2. Check."]
    free = proposal_schema(3)["properties"]["edits"]["items"]["properties"]["anchor"]
    assert "enum" not in free


def test_memory_keeps_lessons_not_echoes_of_scores() -> None:
    from moscopt.optimizer.editadam import is_lesson

    assert is_lesson("- Adding an explicit verification step helped.")
    assert not is_lesson("- step 1: 0.167")
    assert not is_lesson("- score 0.5 -> 0.6")
    assert not is_lesson("Adding checks helped a lot.")  # not a bullet
