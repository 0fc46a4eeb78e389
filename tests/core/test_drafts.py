"""The embedded model's short, grammar-bounded answers (issue 28 items 2 and 5): skill drafts
(offspring, the distilled skill) as an array of lines, proposals of few short edits, analyses
cut short; the distilled export says what it is doing and fails in one line."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.config import OptimizerConfig
from moscopt.core.drafts import COMPACT_LINES, COMPACT_TOKENS, draft_fields, draft_schema
from moscopt.core.edits import CONSTRAINED_CHARS, CONSTRAINED_EDITS, proposal_schema
from moscopt.core.skills import Skill
from moscopt.exports.distill import DistillationFailed, distill
from moscopt.lm.base import LMRequest
from moscopt.optimizer.editadam import CONSTRAINED_TEXT_TOKENS, EditAdam
from moscopt.optimizer.evolve import Job, draft
from moscopt.run.state import OptimizerState
from moscopt.testing import FakeLM

SKILLS = [
    Skill(name="a", description="Skill a.", body="1. Do a.\n2. Check a."),
    Skill(name="b", description="Skill b.", body="1. Do b.\n2. Check b."),
]
LINES = {
    "name": "Merged Skill",
    "description": "Checks each step.",
    "lines": ["1. Read the task twice.", "2. Compute.", "3. Check.", "4. Answer."],
}


def lines_answer(request: LMRequest) -> str:
    return json.dumps(LINES)


def test_the_embedded_model_distills_in_the_compact_line_format() -> None:
    lm = FakeLM(routes={"distill": lines_answer}, model="local/smollm2")
    said: list[str] = []
    skill, attempts = asyncio.run(distill(lm, SKILLS, None, 2, {"a": 0.5}, said.append))
    request = lm.history[0]
    assert request.schema is not None and "body" not in request.schema["properties"]
    body = request.schema["properties"]["lines"]
    assert (body["minItems"], body["maxItems"]) == COMPACT_LINES
    assert request.max_tokens == COMPACT_TOKENS
    assert attempts == 1 and skill.name == "merged-skill"
    assert skill.body.strip() == "\n".join(LINES["lines"])  # several lines, by construction
    assert said == [
        "distilling a, b into one skill with local/smollm2 (attempt 1 of 2, compact format)"
    ]


def test_other_models_keep_the_free_body() -> None:
    answer = {"name": "m", "description": "d", "body": "1.\n2.\n3.\n4. x"}
    lm = FakeLM(routes={"distill": lambda r: json.dumps(answer)}, model="openai/gpt-4.1-mini")
    asyncio.run(distill(lm, SKILLS, None, 2, {}))
    schema = lm.history[0].schema
    assert schema is not None and schema["properties"]["body"]["type"] == "string"


def test_a_failed_distillation_is_one_line_and_progress_says_why() -> None:
    lm = FakeLM(routes={"distill": lambda r: '{"name": "x"'}, model="local/smollm2")
    said: list[str] = []
    with pytest.raises(DistillationFailed) as caught:
        asyncio.run(distill(lm, SKILLS, None, 2, {}, said.append))
    assert "\n" not in str(caught.value) and "in 2 attempts" in str(caught.value)
    assert [line.split(":")[0] for line in said[1::2]] == [
        "attempt 1 gave no usable skill",
        "attempt 2 gave no usable skill",
    ]
    assert len({r.sample for r in lm.history}) == 2  # the retry is a fresh sample


def test_the_embedded_model_writes_offspring_line_by_line() -> None:
    lm = FakeLM(routes={"evolve": lines_answer}, model="local/smollm2")
    job = Job("fresh", {"seed": SKILLS[0].dumps(), "pool": "- a: Skill a."})
    found, errors = asyncio.run(draft(lm, job))
    assert errors == [] and found is not None and found.body.count("\n") == 3
    assert lm.history[0].schema is not None and "lines" in lm.history[0].schema["properties"]
    assert lm.history[0].max_tokens == COMPACT_TOKENS


def test_constrained_proposals_are_few_short_edits() -> None:
    small = proposal_schema(8, ["1. Plan."])
    edits = small["properties"]["edits"]
    assert edits["maxItems"] == CONSTRAINED_EDITS
    assert edits["items"]["properties"]["content"]["maxLength"] == CONSTRAINED_CHARS
    assert small["properties"]["reasoning"]["maxLength"] == CONSTRAINED_CHARS
    free = proposal_schema(8)["properties"]["edits"]
    assert free["maxItems"] == 8 and free["items"]["properties"]["content"]["maxLength"] == 1200


@given(st.lists(st.text(max_size=30), max_size=10), st.text(max_size=20))
def test_draft_fields_joins_any_lines_and_keeps_the_other_keys(lines: list[str], name: str) -> None:
    data = draft_fields(json.dumps({"name": name, "description": "d", "lines": lines}))
    assert set(data) == {"name", "description", "body"} and data["name"] == name
    assert data["body"] == "\n".join(x.strip() for x in lines if x.strip())


@given(st.one_of(st.integers(), st.lists(st.integers(), min_size=1), st.text(max_size=5)))
def test_draft_fields_refuses_what_is_not_an_object_of_lines(value: object) -> None:
    with pytest.raises(ValueError):
        draft_fields(json.dumps({"name": "n", "description": "d", "lines": value}))
    if not isinstance(value, str):  # a string is JSON text, parsed
        with pytest.raises(ValueError):
            draft_fields(value)


def test_compact_schema_bounds_the_whole_answer() -> None:
    schema = draft_schema(compact=True, body_max=5000, description_max=500)
    props = schema["properties"]
    most = props["lines"]["maxItems"] * props["lines"]["items"]["maxLength"]
    chars = most + props["name"]["maxLength"] + props["description"]["maxLength"]
    assert chars < COMPACT_TOKENS * 2  # far under the token budget: the JSON always closes


@pytest.mark.parametrize(("constrained", "most"), [(True, CONSTRAINED_TEXT_TOKENS), (False, 500)])
def test_constrained_analyses_are_cut_short(constrained: bool, most: int) -> None:
    lm = FakeLM(routes={"reflect": lambda r: "- a lesson", "merge": lambda r: "- merged"})
    adam = EditAdam(lm, OptimizerConfig(), constrained=constrained)
    asyncio.run(adam.reflect(SKILLS[0], ["evidence 1", "evidence 2"], OptimizerState()))
    assert lm.purposes == ["reflect-skill", "reflect-skill", "merge-skill"]
    assert max(r.max_tokens for r in lm.history) == most
