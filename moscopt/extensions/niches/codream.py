"""CODREAM (collaborative dreaming, EvoChamber): the LLM phases that turn one failure into
one or two insights, each phase one call with its own prompt (`moscopt/prompts/codream_*.md`):

1. diagnose the failed trajectory;
2. contrast it with successful trajectories of the skills strongest on its niche (from the log);
3. imagine strategies that would have worked;
4. distil at most `max_insights` insights (JSON, checked strictly), each of scope "niche" (a
   technique of this niche) or "meta" (a habit for any task).

Routing (phase 5) is not an LLM call: `moscopt.extensions.niches.routing` decides who receives what
from the competence estimates. A phase the provider refuses (`LMRequestError`) or a distillation
that is not valid JSON ends the session with no insight and the reason in `Dream.error`;
fatal LM errors propagate (the run stops). Pure: nothing here touches the run state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from moscopt.core import jsonio
from moscopt.core.prompting import render
from moscopt.lm.base import LM
from moscopt.lm.errors import LMOutputError, LMRequestError

NONE = "(none)"
TASK_CHARS, RESPONSE_CHARS, PHASE_TOKENS = 1200, 1500, 600
INSIGHT_CHARS = 400


def distill_schema(max_insights: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "insights": {
                "type": "array",
                "maxItems": max_insights,
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "maxLength": INSIGHT_CHARS},
                        "scope": {"type": "string", "enum": ["niche", "meta"]},
                    },
                    "required": ["text", "scope"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["insights"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Trajectory:
    """A rollout as the phases show it."""

    skills: tuple[str, ...]
    task: str
    response: str
    reward: float
    gold: str | None = None  # shown in the failure's outcome when known

    def outcome(self) -> str:
        text = f"reward {self.reward:.2f}"
        return text + (f"; expected answer: {self.gold}" if self.gold is not None else "")


@dataclass(frozen=True)
class Distilled:
    text: str
    scope: Literal["niche", "meta"]


@dataclass
class Dream:
    diagnosis: str = ""
    contrast: str = ""
    strategies: str = ""
    insights: list[Distilled] = field(default_factory=list)
    error: str | None = None


def parse_insights(data: Any, max_insights: int) -> list[Distilled]:
    """The distillation's insights, strictly; raises ValueError for anything else."""
    if isinstance(data, str):
        data = jsonio.loads(data)
    if not isinstance(data, dict) or not isinstance(data.get("insights"), list):
        raise ValueError('expected {"insights": [...]}')
    out: list[Distilled] = []
    for item in data["insights"][:max_insights]:
        if not isinstance(item, dict):
            raise ValueError("each insight must be an object")
        text, scope = item.get("text"), item.get("scope")
        if not isinstance(text, str) or not text.strip() or scope not in ("niche", "meta"):
            raise ValueError('each insight needs a non-empty "text" and a "scope" niche|meta')
        out.append(Distilled(" ".join(text.split())[:INSIGHT_CHARS], scope))
    return out


def exemplar_text(exemplars: Sequence[Trajectory]) -> str:
    parts = [
        f"### Solution {i} (skills: {', '.join(t.skills) or NONE})\n"
        f"Task:\n{_cut(t.task, TASK_CHARS)}\nReply:\n{_cut(t.response, RESPONSE_CHARS)}"
        for i, t in enumerate(exemplars, 1)
    ]
    return "\n\n".join(parts) or NONE


async def dream(
    lm: LM,
    *,
    niche: str,
    failure: Trajectory,
    exemplars: Sequence[Trajectory],
    lessons: Sequence[str],
    max_insights: int,
) -> Dream:
    """One CODREAM session over `failure` (see the module docstring)."""
    out = Dream()
    known = "\n".join(f"- {x}" for x in lessons) or NONE
    try:
        out.diagnosis = await _ask(
            lm,
            "diagnose",
            render(
                "codream_diagnose",
                niche=niche,
                task=_cut(failure.task, TASK_CHARS),
                skills=", ".join(failure.skills) or NONE,
                response=_cut(failure.response, RESPONSE_CHARS),
                outcome=failure.outcome(),
            ),
        )
        out.contrast = await _ask(
            lm,
            "contrast",
            render(
                "codream_contrast",
                niche=niche,
                diagnosis=out.diagnosis,
                exemplars=exemplar_text(exemplars),
                lessons=known,
            ),
        )
        out.strategies = await _ask(
            lm,
            "imagine",
            render(
                "codream_imagine",
                task=_cut(failure.task, TASK_CHARS),
                diagnosis=out.diagnosis,
                contrast=out.contrast,
            ),
        )
        prompt = render(
            "codream_distill",
            niche=niche,
            diagnosis=out.diagnosis,
            contrast=out.contrast,
            strategies=out.strategies,
            known=known,
            max_insights=max_insights,
        )
        completion = await lm.acomplete(
            [{"role": "user", "content": prompt}],
            schema=distill_schema(max_insights),
            purpose="codream-distill",
            max_tokens=PHASE_TOKENS,
        )
        data = completion.data if completion.data is not None else completion.text
        out.insights = parse_insights(data, max_insights)
    except LMRequestError as e:
        out.error = f"the model refused a phase: {e}"[:300]
    except (LMOutputError, ValueError) as e:
        out.error = f"unusable distillation: {e}"[:300]
    return out


async def _ask(lm: LM, phase: str, prompt: str) -> str:
    completion = await lm.acomplete(
        [{"role": "user", "content": prompt}],
        purpose=f"codream-{phase}",
        max_tokens=PHASE_TOKENS,
    )
    return completion.text.strip() or NONE


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
