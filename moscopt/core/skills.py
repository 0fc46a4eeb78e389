"""Skills and pools on disk: the Agent Skills layout, `skills/<name>/SKILL.md`.

A SKILL.md is YAML front matter followed by a Markdown body::

    ---
    name: careful-computation
    description: Do arithmetic and algebra in small, checked steps.
    metadata:
      origin: seed
    ---

    # Careful computation
    ...

Serialization is deterministic: front-matter keys in a fixed order (metadata keys sorted),
no line wrapping, LF line endings, one blank line after the front matter and exactly one
trailing newline. Loading and dumping a file already in that form gives identical bytes.
Statistics (Q-scores, activations, synergy) never go into SKILL.md; they live in the run state.
Front matter is read with `moscopt.core.yamlio.StrictLoader`: YAML anchors and aliases are refused.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from moscopt.core import yamlio
from moscopt.core.skill_format import (
    COMPATIBILITY_MAX,
    DESCRIPTION_MAX,
    NAME_MAX,
    is_valid_name,
    slugify,
)
from moscopt.core.validation import user_error
from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_text, canonical_json, make_dirs, read_text, strip_controls

SKILL_FILE = "SKILL.md"
GATE_NAME = "gate"
# Front-matter keys of the Agent Skills format, in the order they are written.
_KEY_ORDER = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")


class Skill(BaseModel):
    """One skill document. Immutable: edits produce a new `Skill`."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str
    description: str
    body: str = ""
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = Field(default=None, alias="allowed-tools")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        if not is_valid_name(v):
            raise ValueError(
                f"must be a lowercase-hyphen slug of at most {NAME_MAX} characters "
                "(a-z, 0-9, single hyphens between words), not a name Windows reserves "
                "(con, prn, aux, nul, com0-9, lpt0-9)"
            )
        return v

    @field_validator("description")
    @classmethod
    def _check_description(cls, v: str) -> str:
        v = strip_controls(v).strip()
        if not v:
            raise ValueError("must not be empty")
        if len(v) > DESCRIPTION_MAX:
            raise ValueError(f"is {len(v)} characters; at most {DESCRIPTION_MAX} allowed")
        return v

    @field_validator("compatibility")
    @classmethod
    def _check_compatibility(cls, v: str | None) -> str | None:
        if v is not None and len(v) > COMPATIBILITY_MAX:
            raise ValueError(f"is {len(v)} characters; at most {COMPATIBILITY_MAX} allowed")
        return v

    @field_validator("body")
    @classmethod
    def _normalize_body(cls, v: str) -> str:
        return normalize_body(v)

    # -- (de)serialization -------------------------------------------------------------------

    def front_matter(self) -> dict[str, Any]:
        """Front-matter mapping in canonical key order; optional keys only when set."""
        values: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "license": self.license,
            "compatibility": self.compatibility,
            "allowed-tools": self.allowed_tools,
            "metadata": _sorted_mapping(self.metadata) if self.metadata else None,
        }
        return {k: values[k] for k in _KEY_ORDER if values[k] is not None}

    def dumps(self) -> str:
        """The canonical SKILL.md text."""
        data = self.front_matter()
        fm = _yaml_dump(data, allow_unicode=True)
        if yamlio.load(fm) != data:  # e.g. U+0085, a YAML line break: escape non-ASCII
            fm = _yaml_dump(data, allow_unicode=False)
        body = f"\n{self.body}" if self.body else ""
        return f"---\n{fm}---\n{body}"

    @classmethod
    def loads(cls, text: str, *, path: str | Path | None = None) -> Skill:
        """Parse SKILL.md text; any problem is a `UserError` naming `path` and line or field."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if text.startswith("\ufeff"):
            text = text[1:]
        lines = text.split("\n")
        if not lines or lines[0].strip() != "---":
            raise UserError(
                "missing YAML front matter: the file must start with a line '---'",
                path=path,
                line=1,
            )
        try:
            end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        except StopIteration:
            raise UserError(
                "front matter is not closed: no second '---' line", path=path, line=1
            ) from None
        raw_fm = "\n".join(lines[1:end])
        try:
            data = yamlio.load(raw_fm)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = min(mark.line, end - 2) + 2 if mark is not None else 2
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            if problem != yamlio.ALIASES_REFUSED:
                problem = f"is not valid YAML: {problem}"
            raise UserError(f"front matter {problem}", path=path, line=line) from None
        if not isinstance(data, dict):
            raise UserError("front matter must be a YAML mapping (key: value)", path=path, line=2)
        for key in data:
            if key not in _KEY_ORDER:
                raise UserError(
                    f"unknown front-matter key (allowed: {', '.join(_KEY_ORDER)})",
                    path=path,
                    field=str(key),
                )
        body = "\n".join(lines[end + 1 :])
        try:
            return cls.model_validate({**data, "body": body})
        except ValidationError as e:
            raise user_error(e, path) from None

    @classmethod
    def load(cls, path: str | Path) -> Skill:
        path = Path(path)
        return cls.loads(read_text(path), path=path)

    def dump(self, folder: str | Path) -> Path:
        """Write `<folder>/SKILL.md` atomically (following the umask: other tools read it);
        returns its path."""
        target = Path(folder) / SKILL_FILE
        atomic_write_text(target, self.dumps(), shared=True)
        return target

    def to_json(self) -> dict[str, Any]:
        """The JSON view used by checkpoints and patches (front matter + body)."""
        return {**self.front_matter(), "body": self.body}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Skill:
        return cls.model_validate(dict(data))

    def with_body(self, body: str) -> Skill:
        return self.model_copy(update={"body": normalize_body(body)})


def _yaml_dump(data: dict[str, Any], *, allow_unicode: bool) -> str:
    return yamlio.dump(
        data,
        sort_keys=False,
        allow_unicode=allow_unicode,
        default_flow_style=False,
        width=2**31 - 1,
    )


def normalize_body(body: str) -> str:
    """Canonical Markdown body: LF endings, no terminal control characters (escape sequences a
    model wrote), no leading blank lines, one trailing newline."""
    body = strip_controls(body.replace("\r\n", "\n").replace("\r", "\n"))
    body = body.lstrip("\n").rstrip()
    return f"{body}\n" if body else ""


def _sorted_mapping(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _sorted_mapping(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_sorted_mapping(v) for v in value]
    return value


class Pool(BaseModel):
    """The skill pool S (ordered by name) plus the gating skill G (absent in single-skill mode)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    skills: tuple[Skill, ...]
    gate: Skill | None = None

    @field_validator("skills")
    @classmethod
    def _check_skills(cls, v: tuple[Skill, ...]) -> tuple[Skill, ...]:
        names = [s.name for s in v]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate skill names: {', '.join(dupes)}")
        if GATE_NAME in names:
            raise ValueError(f"'{GATE_NAME}' is reserved for the gating skill")
        return tuple(sorted(v, key=lambda s: s.name))

    # -- access --------------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def __len__(self) -> int:
        return len(self.skills)

    def __iter__(self) -> Iterator[Skill]:  # type: ignore[override]
        return iter(self.skills)

    def __contains__(self, name: object) -> bool:
        return any(s.name == name for s in self.skills)

    def get(self, name: str) -> Skill:
        if name == GATE_NAME and self.gate is not None:
            return self.gate
        for s in self.skills:
            if s.name == name:
                return s
        raise KeyError(name)

    def replace(self, skill: Skill) -> Pool:
        """A new pool with `skill` replacing the one of the same name (or the gate)."""
        if skill.name == GATE_NAME:
            return Pool(skills=self.skills, gate=skill)
        if skill.name not in self:
            raise KeyError(skill.name)
        return Pool(
            skills=tuple(skill if s.name == skill.name else s for s in self.skills), gate=self.gate
        )

    def add(self, skill: Skill) -> Pool:
        return Pool(skills=(*self.skills, skill), gate=self.gate)

    def remove(self, name: str) -> Pool:
        if name not in self:
            raise KeyError(name)
        return Pool(skills=tuple(s for s in self.skills if s.name != name), gate=self.gate)

    def fresh_name(self, base: str, taken: Iterable[str] = ()) -> str:
        """A name not used now nor ever before (`taken`): slugs are never reused or renumbered."""
        used = set(self.names) | set(taken) | {GATE_NAME}
        base = slugify(base, max_len=NAME_MAX - 4)
        if base not in used:
            return base
        i = 2
        while f"{base}-{i}" in used:
            i += 1
        return f"{base}-{i}"

    # -- (de)serialization ---------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "gate": self.gate.to_json() if self.gate else None,
            "skills": {s.name: s.to_json() for s in self.skills},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pool:
        gate = data.get("gate")
        return cls(
            skills=tuple(Skill.from_json(v) for v in data.get("skills", {}).values()),
            gate=Skill.from_json(gate) if gate else None,
        )

    def digest(self) -> str:
        """sha256 of the canonical JSON view: equal pools have equal digests."""
        return hashlib.sha256(canonical_json(self.to_json()).encode("utf-8")).hexdigest()

    @classmethod
    def load(cls, directory: str | Path, *, require_gate: bool = False) -> Pool:
        """Load `directory/<name>/SKILL.md` for every subfolder that has one.

        Each skill's front-matter `name` must equal its folder name. `gate/` is the gating skill.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise UserError("skills directory not found", path=directory)
        skills: list[Skill] = []
        gate: Skill | None = None
        for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
            if folder.name.startswith("."):
                continue
            file = folder / SKILL_FILE
            if not file.is_file():
                continue
            skill = Skill.load(file)
            if skill.name != folder.name:
                raise UserError(
                    f"name '{skill.name}' does not match its folder name '{folder.name}'",
                    path=file,
                    field="name",
                )
            if skill.name == GATE_NAME:
                gate = skill
            else:
                skills.append(skill)
        if not skills:
            raise UserError(
                f"no skills found (expected <name>/{SKILL_FILE} folders)", path=directory
            )
        if require_gate and gate is None:
            raise UserError(f"the gating skill {GATE_NAME}/{SKILL_FILE} is missing", path=directory)
        return cls(skills=tuple(skills), gate=gate)

    def dump(self, directory: str | Path, *, prune: bool = False) -> None:
        """Write every skill (and the gate) as `<directory>/<name>/SKILL.md`.

        With `prune`, folders of skills no longer in the pool are removed; only do that in a
        directory moscopt owns (a run's `skills/` or an export).
        """
        directory = Path(directory)
        make_dirs(directory, shared=True)  # skills are for other tools: modes follow the umask
        members = [*self.skills, *([self.gate] if self.gate else [])]
        for skill in members:
            target = directory / skill.name / SKILL_FILE
            text = skill.dumps()
            if not (target.is_file() and target.read_bytes() == text.encode("utf-8")):
                atomic_write_text(target, text, shared=True)
        if prune:
            keep = {s.name for s in members}
            for folder in directory.iterdir():
                if folder.is_dir() and folder.name not in keep and (folder / SKILL_FILE).exists():
                    shutil.rmtree(folder)
