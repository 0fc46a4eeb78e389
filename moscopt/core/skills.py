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

Serialization is deterministic: the Agent Skills keys in a fixed order (metadata keys sorted),
then any other key a user's tools put there (`version`, `triggers`, ...: kept as they are, in
the order read, with a warning that the Agent Skills format does not define them), no line
wrapping, a string with a line break double-quoted (so that no line of the front matter can read
as its closing `---`), LF line endings, one blank line after the front matter and exactly one
trailing newline. Loading and dumping a file already in that form gives identical bytes; what
loads dumps to text that loads to the same values. A skill folder's other files (`scripts/`,
`references/`, `assets/`) travel with it verbatim: `moscopt.core.skill_files`.
Statistics (Q-scores, activations, synergy) never go into SKILL.md; they live in the run state.
Front matter is read with `moscopt.core.yamlio.StrictLoader`: YAML anchors and aliases are refused.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from moscopt.core.front_matter import join_front_matter, split_front_matter
from moscopt.core.memo import IdentityMemo
from moscopt.core.skill_files import (
    SKILL_FILE,
    SkillFile,
    files_from_json,
    files_json,
    read_files,
    write_files,
)
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

__all__ = ["GATE_NAME", "SKILL_FILE", "Pool", "Skill", "SkillFile"]

GATE_NAME = "gate"
# Front-matter keys of the Agent Skills format, in the order they are written.
_KEY_ORDER = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
log = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()  # (file, key): an unknown key is reported once a process


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
    # front-matter keys the Agent Skills format does not define, as read (written after its own)
    extras: dict[str, Any] = Field(default_factory=dict)
    # the folder's other files (scripts/, references/, assets/...), verbatim; edits never touch them
    files: tuple[SkillFile, ...] = ()

    @field_validator("extras")
    @classmethod
    def _check_extras(cls, v: dict[str, Any]) -> dict[str, Any]:
        clash = sorted(set(map(str, v)) & set(_KEY_ORDER))
        if clash:
            raise ValueError(f"{', '.join(clash)} is an Agent Skills key, not an extra one")
        return {str(k): value for k, value in v.items()}

    @field_validator("files")
    @classmethod
    def _check_files(cls, v: tuple[SkillFile, ...]) -> tuple[SkillFile, ...]:
        paths = [f.path for f in v]
        if len(set(paths)) != len(paths):
            raise ValueError("the same file is listed twice")
        return tuple(sorted(v, key=lambda f: f.path))

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        if not is_valid_name(v):
            raise ValueError(
                f"must be a lowercase-hyphen name of at most {NAME_MAX} characters "
                "(lowercase letters of any script, digits, single hyphens between words), not a "
                "name Windows reserves (con, prn, aux, nul, com0-9, lpt0-9)"
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
        known = {k: values[k] for k in _KEY_ORDER if values[k] is not None}
        return {**known, **self.extras}

    def dumps(self) -> str:
        """The canonical SKILL.md text."""
        return join_front_matter(self.front_matter(), self.body)

    @classmethod
    def loads(cls, text: str, *, path: str | Path | None = None) -> Skill:
        """Parse SKILL.md text; any problem is a `UserError` naming `path` and line or field."""
        data, body = split_front_matter(text, path=path)
        known = {k: v for k, v in data.items() if k in _KEY_ORDER}
        extras = {k: v for k, v in data.items() if k not in _KEY_ORDER}
        for key in extras:
            if path is not None and (str(path), key) not in _warned:
                _warned.add((str(path), key))
                log.warning(
                    "moscopt: %s: front-matter key '%s' is not part of the Agent Skills format "
                    "(kept as it is)",
                    path,
                    key,
                )
        try:
            return cls.model_validate({**known, "extras": extras, "body": body})
        except ValidationError as e:
            raise user_error(e, path) from None

    @classmethod
    def load(cls, path: str | Path) -> Skill:
        """The skill of a SKILL.md file, with the other files of its folder."""
        path = Path(path)
        skill = cls.loads(read_text(path), path=path)
        files = read_files(path.parent)
        return skill.model_copy(update={"files": files}) if files else skill

    def dump(self, folder: str | Path, *, prune: bool = False) -> Path:
        """Write `<folder>/SKILL.md` atomically (following the umask: other tools read it) and
        the folder's other files; `prune` removes files the skill no longer has. Returns the
        SKILL.md path."""
        target = Path(folder) / SKILL_FILE
        text = self.dumps()
        if not (target.is_file() and target.read_bytes() == text.encode("utf-8")):
            atomic_write_text(target, text, shared=True)
        write_files(Path(folder), self.files, prune=prune)
        return target

    def to_json(self) -> dict[str, Any]:
        """The JSON view used by checkpoints and patches: the Agent Skills front matter, the
        body, and (only when present, so that older runs keep their digests) the other keys and
        the folder's files."""
        known = {k: v for k, v in self.front_matter().items() if k in _KEY_ORDER}
        out: dict[str, Any] = {**known, "body": self.body}
        if self.extras:
            out["extras"] = dict(self.extras)
        if self.files:
            out["files"] = files_json(self.files)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Skill:
        values = dict(data)
        values["files"] = files_from_json(values.get("files", ()))
        return cls.model_validate(values)

    def with_body(self, body: str) -> Skill:
        return self.model_copy(update={"body": normalize_body(body)})


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
        names = Counter(s.name for s in v)
        dupes = sorted(n for n, count in names.items() if count > 1)
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
        return _pool_digest(self)

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
            if skill.name != unicodedata.normalize("NFKC", folder.name):  # macOS writes NFD
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
            skill.dump(directory / skill.name, prune=prune)
        if prune:
            keep = {s.name for s in members}
            for folder in directory.iterdir():
                if folder.is_dir() and folder.name not in keep and (folder / SKILL_FILE).exists():
                    shutil.rmtree(folder)


def _canonical_skill(skill: Skill) -> str:
    return canonical_json(skill.to_json())


def _digest_of(pool: Pool) -> str:
    """sha256 of `canonical_json(pool.to_json())`, built from each skill's canonical JSON (the
    same bytes: the pool's skills are already in name order, as sorted keys put them)."""
    gate = _skill_json(pool.gate) if pool.gate is not None else "null"
    skills = ",".join(f"{canonical_json(s.name)}:{_skill_json(s)}" for s in pool.skills)
    text = f'{{"gate":{gate},"skills":{{{skills}}}}}'
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# a step's candidates share all but a skill or two with the incumbent (see moscopt.core.memo);
# the entries hold their skills and texts, so the sizes bound the memory (a pool of up to about
# a thousand skills is covered; beyond, digests are computed as before)
_skill_json: IdentityMemo[Skill, str] = IdentityMemo(_canonical_skill, 1024)
_pool_digest: IdentityMemo[Pool, str] = IdentityMemo(_digest_of, 16)
