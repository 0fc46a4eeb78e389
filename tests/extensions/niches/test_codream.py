from __future__ import annotations

import asyncio
import json

import pytest

from moscopt.extensions.niches.codream import Trajectory, dream, parse_insights
from moscopt.lm.errors import LMRequestError
from moscopt.testing import FakeLM

FAILURE = Trajectory(("beta",), "Combine 12 and 34 the A way.", "FINAL ANSWER: 46", 0.0, "64")
WIN = Trajectory(
    ("alpha",), "Combine 21 and 3 the A way.", "Technique: reverse.\nFINAL ANSWER: 15", 1.0
)


def phases(distilled: str) -> dict[str, object]:
    return {
        "codream-diagnose": lambda r: "It added without reversing.",
        "codream-contrast": lambda r: "The winner reversed the digits.",
        "codream-imagine": lambda r: "Reverse, then add.",
        "codream-distill": lambda r: distilled,
    }


def test_four_phases_each_its_own_call_feed_each_other() -> None:
    answer = json.dumps(
        {
            "insights": [
                {"text": "Reverse the digits, then add.", "scope": "niche"},
                {"text": "State the technique first.", "scope": "meta"},
            ]
        }
    )
    lm = FakeLM(routes=phases(answer))  # type: ignore[arg-type]
    d = asyncio.run(
        dream(lm, niche="A", failure=FAILURE, exemplars=[WIN], lessons=["Old one."], max_insights=2)
    )
    assert lm.purposes == [
        "codream-diagnose",
        "codream-contrast",
        "codream-imagine",
        "codream-distill",
    ]
    prompts = [r.messages[-1]["content"] for r in lm.history]
    assert "expected answer: 64" in prompts[0] and "FINAL ANSWER: 46" in prompts[0]
    assert "It added without reversing." in prompts[1] and "Technique: reverse." in prompts[1]
    assert "- Old one." in prompts[1] and "- Old one." in prompts[3]
    assert "The winner reversed the digits." in prompts[2]
    assert "Reverse, then add." in prompts[3]
    assert lm.history[3].schema is not None  # the distillation is schema-constrained
    assert [(i.text, i.scope) for i in d.insights] == [
        ("Reverse the digits, then add.", "niche"),
        ("State the technique first.", "meta"),
    ]
    assert d.error is None


def test_a_refused_phase_or_bad_distillation_ends_the_session_without_insights() -> None:
    def refuse(request: object) -> str:
        raise LMRequestError("refused")

    lm = FakeLM(routes={**phases("{}"), "codream-contrast": refuse})  # type: ignore[arg-type]
    d = asyncio.run(dream(lm, niche="A", failure=FAILURE, exemplars=[], lessons=[], max_insights=2))
    assert d.insights == [] and d.error is not None and "refused" in d.error
    assert lm.purposes == ["codream-diagnose", "codream-contrast"]
    lm = FakeLM(routes=phases('{"insights": [{"text": "x"}]}'))  # type: ignore[arg-type]
    d = asyncio.run(dream(lm, niche="A", failure=FAILURE, exemplars=[], lessons=[], max_insights=2))
    assert d.insights == [] and d.error is not None and d.error.startswith("unusable")


def test_parse_insights_is_strict() -> None:
    assert parse_insights('{"insights": []}', 2) == []
    three = {"insights": [{"text": f"t{i}", "scope": "niche"} for i in range(3)]}
    assert [i.text for i in parse_insights(three, 2)] == ["t0", "t1"]
    for bad in (
        '{"insights": [{"text": " ", "scope": "niche"}]}',
        '{"x": 1}',
        "[]",
        '{"insights": [{"text": "t", "scope": "other"}]}',
        "not json",
    ):
        with pytest.raises(ValueError):
            parse_insights(bad, 2)
