"""The Agent Skills reference validator (`skills-ref`), run on every export when it is installed.

An export's `skills/<name>/` folders are what an agent loads, so they are checked as the
reference checks them, on the bytes about to be put in place (the export's staging folder),
before the old export is replaced: a folder the reference refuses is one `UserError` naming its
`SKILL.md` and the reference's messages, and nothing is replaced. Without `skills-ref` (the
`dev` extra) nothing is checked here; the tests check every kind of export with it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from moscopt.errors import UserError


def check_with_reference(tree: Path, shown: Path | None = None) -> None:
    """Raise `UserError` for the first folder of `tree/skills` the reference validator refuses
    (named under `shown`, the export's own folder, when `tree` is its staging copy); nothing
    when `skills-ref` is not installed."""
    if importlib.util.find_spec("skills_ref") is None:
        return
    import skills_ref

    skills = tree / "skills"
    for folder in sorted(skills.iterdir()) if skills.is_dir() else []:
        problems = skills_ref.validate(folder)
        if problems:
            raise UserError(
                "the Agent Skills reference validator (skills-ref) refuses this skill: "
                + "; ".join(str(p) for p in problems),
                path=(shown or tree) / "skills" / folder.name / "SKILL.md",
            )
