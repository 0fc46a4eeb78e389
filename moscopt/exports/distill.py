"""The distilled export: one SKILL.md the optimizer model writes by merging the top skills.

The answer is JSON (`DISTILLED_SKILL_SCHEMA`) parsed strictly into a `Skill`. An unusable
answer gets one retry with a new sample index (a fresh answer, not the cached one); a second
failure is `DistillationFailed` (exit 1), never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.core.skill_format import DESCRIPTION_MAX, clean_description
from moscopt.core.skills import Pool, Skill
from moscopt.errors import RunFailed
from moscopt.routing.gate import fallback_top_k

if TYPE_CHECKING:
    from moscopt.lm.base import LM

ATTEMPTS = 2
MAX_TOKENS = 4000
DISTILLED_SKILL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 60},
        "description": {"type": "string", "maxLength": DESCRIPTION_MAX},
        "body": {"type": "string", "maxLength": 12000},
    },
    "required": ["name", "description", "body"],
    "additionalProperties": False,
}


class DistillationFailed(RunFailed):
    """The optimizer model gave no usable skill in `ATTEMPTS` tries."""


def top_skills(
    pool: Pool, q: Mapping[str, float], activations: Mapping[str, int], top: int, c_min: int
) -> list[Skill]:
    """The `top` best skills by Q-score (ranked skills first, as the gate's fallback orders)."""
    return [pool.get(n) for n in fallback_top_k(pool.names, q, activations, top, c_min)]


def distill_messages(
    skills: Sequence[Skill], gate: Skill | None, k: int, q: Mapping[str, float]
) -> list[Any]:
    from moscopt.core.prompting import render

    blocks = []
    for s in skills:
        score = f"Q-score {q[s.name]:.2f}" if s.name in q else "Q-score n/a"
        blocks.append(f"### {s.name} ({score})\n\n{' '.join(s.description.split())}\n\n{s.body}")
    gate_text = gate.body if gate is not None else "(no router: every skill was active)"
    text = render("distill", skills="\n\n".join(blocks).strip(), gate=gate_text.strip(), k=k)
    return [{"role": "user", "content": text}]


def parse_distilled(data: Any, merged: Sequence[str]) -> Skill:
    """A valid `Skill` from the model's JSON; `ValueError` (with the reason) otherwise."""
    import json

    from moscopt.core.skill_format import slugify

    if isinstance(data, str):
        data = json.loads(data)
    if not isinstance(data, dict) or set(data) != {"name", "description", "body"}:
        raise ValueError("expected a JSON object with exactly name, description and body")
    name, description, body = data["name"], data["description"], data["body"]
    if not all(isinstance(v, str) and v.strip() for v in (name, description, body)):
        raise ValueError("name, description and body must be non-empty strings")
    if body.strip().count("\n") < 3:
        raise ValueError("the body is too short to be a skill (fewer than 4 lines)")
    slug = slugify(name)
    if slug == "gate":
        slug = "distilled-skill"
    metadata = {"origin": "distilled", "merged": ", ".join(merged)}
    # one line, no '---'; an overlong one stays an invalid answer (retried), not a cut one
    description = clean_description(description, limit=2 * DESCRIPTION_MAX + len(description))
    return Skill(name=slug, description=description, body=body, metadata=metadata)


async def distill(
    lm: LM, skills: Sequence[Skill], gate: Skill | None, k: int, q: Mapping[str, float]
) -> tuple[Skill, int]:
    """(the distilled skill, attempts used); raises `DistillationFailed` after `ATTEMPTS`."""
    from moscopt.lm.errors import LMOutputError, LMRequestError

    messages = distill_messages(skills, gate, k, q)
    merged = [s.name for s in skills]
    reasons = []
    for sample in range(ATTEMPTS):
        try:
            completion = await lm.acomplete(
                messages,
                schema=DISTILLED_SKILL_SCHEMA,
                sample=sample,
                purpose="distill",
                max_tokens=MAX_TOKENS,
            )
            data = completion.data if completion.data is not None else completion.text
            return parse_distilled(data, merged), sample + 1
        except (LMOutputError, LMRequestError, ValueError) as e:  # pydantic errors included
            reasons.append(" ".join(str(e).split())[:200])
    raise DistillationFailed(
        f"the optimizer model ({lm.model}) gave no usable skill in {ATTEMPTS} attempts: "
        + "; ".join(f"attempt {i + 1}: {r}" for i, r in enumerate(reasons))
    )
