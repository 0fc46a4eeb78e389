"""Prompt templates as data files (`moscopt/prompts/*.md`) with named placeholders.

Placeholders are written ``{{name}}``: single braces (JSON examples) and dollar signs (LaTeX)
stay literal. Each template's placeholders are declared in `PROMPTS`; loading checks that the
file uses exactly those, and rendering checks that exactly those values are given.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from moscopt.core.resources import prompts_dir

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")

# Template name -> the placeholders it must use.
PROMPTS: dict[str, frozenset[str]] = {
    "agent_system": frozenset({"skills"}),
    "gate_user": frozenset({"task", "k", "table"}),
    "reflect": frozenset({"skill", "trajectories", "step_buffer", "memory"}),
    "merge": frozenset({"target", "analyses"}),
    "propose": frozenset({"skill", "analyses", "rejections", "memory", "max_edits", "scores"}),
    "reflect_gate": frozenset({"gate", "k", "table", "cases", "step_buffer", "memory"}),
    "propose_gate": frozenset({"gate", "analyses", "rejections", "memory", "max_edits", "scores"}),
    "memory": frozenset({"target", "memory", "accepted", "rejected"}),
    "budget": frozenset({"hard", "soft", "l_min", "l_max", "history"}),
    "mutate": frozenset({"skill", "pool", "fraction"}),
    "crossover": frozenset({"first", "second", "pool"}),
    "fresh": frozenset({"seed", "pool"}),
    "distill": frozenset({"skills", "gate", "k"}),
    # the rubric judge (moscopt/benchmarks/rubric.py): criteria and the answer, nothing else
    "judge_rubric": frozenset({"criteria", "answer", "count"}),
    # CODREAM (moscopt/extensions/niches/codream.py): one prompt per phase
    "codream_diagnose": frozenset({"niche", "task", "skills", "response", "outcome"}),
    "codream_contrast": frozenset({"niche", "diagnosis", "exemplars", "lessons"}),
    "codream_imagine": frozenset({"task", "diagnosis", "contrast"}),
    "codream_distill": frozenset(
        {"niche", "diagnosis", "contrast", "strategies", "known", "max_insights"}
    ),
    # the lifecycle evolution policy (moscopt/extensions/niches/lifecycle.py); merge uses
    # "crossover"
    "lifecycle_fork": frozenset({"skill", "niche", "examples", "pool"}),
    "lifecycle_seed": frozenset({"niche", "examples", "pool"}),
}


class PromptError(ValueError):
    pass


class Prompt:
    def __init__(self, name: str, text: str, expected: frozenset[str]) -> None:
        found = set(_PLACEHOLDER.findall(text))
        if found != expected:
            missing, extra = sorted(expected - found), sorted(found - expected)
            raise PromptError(f"prompt '{name}': missing {missing}, unexpected {extra}")
        self.name = name
        self.text = text
        self.placeholders = expected

    def render(self, **values: object) -> str:
        given = set(values)
        if given != self.placeholders:
            missing, extra = sorted(self.placeholders - given), sorted(given - self.placeholders)
            raise PromptError(f"prompt '{self.name}': missing {missing}, unexpected {extra}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text).strip() + "\n"


@cache
def load_prompt(name: str, directory: Path | None = None) -> Prompt:
    if name not in PROMPTS:
        raise PromptError(f"unknown prompt '{name}'")
    path = (directory or prompts_dir()) / f"{name}.md"
    return Prompt(name, path.read_text(encoding="utf-8"), PROMPTS[name])


def render(name: str, **values: object) -> str:
    return load_prompt(name).render(**values)
