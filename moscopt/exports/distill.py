"""The distilled export: one SKILL.md the optimizer model writes by merging the top skills.

The answer is JSON (`moscopt.core.drafts.draft_schema`: for the embedded model the compact,
line-array form, so its grammar yields a skill of several lines in a few hundred tokens) parsed
strictly into a `Skill`; a body that is repetition (one sentence said again and again, which a
small model writes when it has nothing to say) is an unusable answer. An unusable answer gets
one retry with a new sample index (a fresh answer, not the cached one); a second failure is
`DistillationFailed` (exit 1, one line), never a crash. `progress` hears of each attempt as it
starts and fails.

The merged skills' folder files (`scripts/`, `references/`, `assets/`) travel into the
distilled skill's folder (`merged_files`): at their own paths, or, where a better-ranked skill
already ships other bytes at that path, under the skill's name (`<skill>/scripts/run.py`). The
model sees each skill's files at the paths the distilled folder gives them, so the rules it
keeps name files that exist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.core.drafts import COMPACT_TOKENS, draft_fields, draft_schema, repetition
from moscopt.core.skill_files import FOLDER_MAX_BYTES, FOLDER_MAX_FILES, SkillFile
from moscopt.core.skill_format import DESCRIPTION_MAX, clean_description
from moscopt.core.skills import Pool, Skill
from moscopt.errors import RunFailed, UserError
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


def merged_files(skills: Sequence[Skill]) -> dict[str, tuple[SkillFile, ...]]:
    """Each skill's files at the paths the distilled folder gives them, by skill name (best
    first: a path is the first skill's; a later skill's other bytes there move under its name;
    the same bytes at the same path are one file)."""
    taken: dict[str, bytes] = {}
    out: dict[str, tuple[SkillFile, ...]] = {}
    for skill in skills:
        placed = []
        for f in skill.files:
            path = f.path
            while taken.get(path, f.data) != f.data:
                path = f"{skill.name}/{path}"
            taken[path] = f.data
            placed.append(f.model_copy(update={"path": path}))
        out[skill.name] = tuple(placed)
    return out


def shipped_files(
    skills: Sequence[Skill], placed: Mapping[str, Sequence[SkillFile]]
) -> tuple[SkillFile, ...]:
    """The distilled folder's files (`placed`, `merged_files`' answer, each path once), sorted;
    a `UserError` when they are more than a skill folder may hold."""
    shipped: dict[str, SkillFile] = {}
    for files in placed.values():
        shipped.update((f.path, f) for f in files if f.path not in shipped)
    size = sum(len(f.data) for f in shipped.values())
    if len(shipped) > FOLDER_MAX_FILES or size > FOLDER_MAX_BYTES:
        raise UserError(
            f"the skills to distil ({', '.join(s.name for s in skills)}) ship {len(shipped)} "
            f"files, {size // 1024} KiB: more than one skill folder holds ({FOLDER_MAX_FILES} "
            f"files, {FOLDER_MAX_BYTES // (1024 * 1024)} MiB); distil fewer (--top)",
            field="top",
        )
    return tuple(shipped[p] for p in sorted(shipped))


def distill_messages(
    skills: Sequence[Skill],
    gate: Skill | None,
    k: int,
    q: Mapping[str, float],
    files: Mapping[str, Sequence[SkillFile]],
) -> list[Any]:
    """The distil prompt; `files`: each skill's files where the distilled folder puts them
    (`merged_files`)."""
    from moscopt.core.prompting import render

    blocks = []
    for s in skills:
        score = f"Q-score {q[s.name]:.2f}" if s.name in q else "Q-score n/a"
        listed = ", ".join(f.path for f in files[s.name])
        shipped = f"\n\nIts files, shipped with the distilled skill: {listed}" if listed else ""
        description = " ".join(s.description.split())
        blocks.append(f"### {s.name} ({score})\n\n{description}{shipped}\n\n{s.body}")
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
    placed = merged_files(skills)
    files = shipped_files(skills, placed)
    messages = distill_messages(skills, gate, k, q, placed)
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
            skill = parse_distilled(data, merged)
            return skill.model_copy(update={"files": files}), sample + 1
        except (LMOutputError, LMRequestError, ValueError) as e:  # pydantic errors included
            reasons.append(" ".join(str(e).split())[:200])
            say(f"attempt {sample + 1} gave no usable skill: {reasons[-1]}")
    raise DistillationFailed(
        f"the optimizer model ({lm.model}) gave no usable skill in {ATTEMPTS} attempts: "
        + "; ".join(f"attempt {i + 1}: {r}" for i, r in enumerate(reasons))
    )
