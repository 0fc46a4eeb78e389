from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.lm.structured import OutputInvalid, check_schema, parse_structured, strip_fence

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "why": {"type": "string", "maxLength": 10}},
    "required": ["answer"],
    "additionalProperties": False,
}


def test_valid_json_parses() -> None:
    assert parse_structured('{"answer": 5, "why": "adds"}', SCHEMA) == {"answer": 5, "why": "adds"}


def test_one_code_fence_is_tolerated() -> None:
    assert parse_structured('```json\n{"answer": 5}\n```', SCHEMA) == {"answer": 5}
    assert strip_fence("```\n[1]\n```") == "[1]"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("the answer is 5", "not valid JSON"),
        ('{"answer": "five"}', "answer"),
        ('{"answer": 5, "why": "far too long a reason"}', "why"),
        ('{"answer": 5, "extra": 1}', "schema"),
        ('Sure! {"answer": 5}', "not valid JSON"),
    ],
)
def test_invalid_output_says_why(text: str, reason: str) -> None:
    with pytest.raises(OutputInvalid, match=reason):
        parse_structured(text, SCHEMA)


def test_bad_schema_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid JSON schema"):
        check_schema({"type": "no-such-type"})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=10,
)


@given(json_values)
def test_any_json_document_round_trips_with_an_open_schema(value: Any) -> None:
    assert parse_structured(json.dumps(value), {}) == value


@given(st.text())
def test_arbitrary_text_parses_or_raises_output_invalid(text: str) -> None:
    try:
        value = parse_structured(text, SCHEMA)
    except OutputInvalid as e:
        assert str(e)
    else:
        assert isinstance(value, dict) and isinstance(value["answer"], int)
