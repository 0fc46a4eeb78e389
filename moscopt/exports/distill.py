"""The distilled export: one SKILL.md the optimizer model writes by merging the top skills.

The answer is JSON (`moscopt.core.drafts.draft_schema`: for the embedded model the compact,
line-array form, so its grammar yields a skill of several lines in a few hundred tokens) parsed
strictly into a `Skill`; a body that is repetition (one sentence said again and again, which a
small model writes when it has nothing to say) is an unusable answer. An unusable answer gets
one retry with a new sample index (a fresh answer, not the cached one); a second failure is
`DistillationFailed` (exit 1, one line), never a crash. `progress` hears of each attempt as it
starts and fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.core.drafts import COMPACT_TOKENS, draft_fields, draft_schema, repetition
from moscopt.core.skill_format import DESCRIPTION_MAX, clean_description
from moscopt.core.skills import Pool, Skill
from moscopt.errors import RunFailed
from moscopt.routing.gate import fallback_top_k

if TYPE_CHECKING:
    from moscopt.lm.base import LM

ATTEMPTS = 2
MAX_TOKENS = 4000
BODY_MAX = 12000
Progress = Callable[[str], None]


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

    from moscopt.core.skill_format import slugify

    data = draft_fields(data)
    if set(data) != {"name", "description", "body"}:
        raise ValueError("expected a JSON object with exactly name, description and body")
    name, description, body = data["name"], data["description"], data["body"]
    if not all(isinstance(v, str) and v.strip() for v in (name, description, body)):
        raise ValueError("name, description and body must be non-empty strings")
    if body.strip().count("\n") < 3:
        raise ValueError("the body is too short to be a skill (fewer than 4 lines)")
    degenerate = repetition(body)
    if degenerate is not None:
        raise ValueError(degenerate)
    slug = slugify(name)
    if slug == "gate":
        slug = "distilled-skill"
    metadata = {"origin": "distilled", "merged": ", ".join(merged)}
    # one line, no '---'; an overlong one stays an invalid answer (retried), not a cut one
    description = clean_description(description, limit=2 * DESCRIPTION_MAX + len(description))
    return Skill(name=slug, description=description, body=body, metadata=metadata)


async def distill(
    lm: LM,
    skills: Sequence[Skill],
    gate: Skill | None,
    k: int,
    q: Mapping[str, float],
    progress: Progress | None = None,
) -> tuple[Skill, int]:
    """(the distilled skill, attempts used); raises `DistillationFailed` after `ATTEMPTS`."""
    from moscopt.lm.errors import LMOutputError, LMRequestError
    from moscopt.lm.local import is_embedded

    say = progress or (lambda _: None)
    messages = distill_messages(skills, gate, k, q)
    merged = [s.name for s in skills]
    compact = is_embedded(lm.model)
    schema = draft_schema(compact=compact, body_max=BODY_MAX, description_max=DESCRIPTION_MAX)
    reasons = []
    for sample in range(ATTEMPTS):
        say(
            f"distilling {', '.join(merged)} into one skill with {lm.model} "
            f"(attempt {sample + 1} of {ATTEMPTS}{', compact format' if compact else ''})"
        )
        try:
            completion = await lm.acomplete(
                messages,
                schema=schema,
                sample=sample,
                purpose="distill",
                max_tokens=COMPACT_TOKENS if compact else MAX_TOKENS,
            )
            data = completion.data if completion.data is not None else completion.text
            return parse_distilled(data, merged), sample + 1
        except (LMOutputError, LMRequestError, ValueError) as e:  # pydantic errors included
            reasons.append(" ".join(str(e).split())[:200])
            say(f"attempt {sample + 1} gave no usable skill: {reasons[-1]}")
    raise DistillationFailed(
        f"the optimizer model ({lm.model}) gave no usable skill in {ATTEMPTS} attempts: "
        + "; ".join(f"attempt {i + 1}: {r}" for i, r in enumerate(reasons))
    )
