"""The declarative benchmark spec: one `benchmarks/NAME.yaml` file, validated with pydantic.

A spec says where the data comes from (local JSONL/zip files under a data directory, the
Hugging Face hub at a pinned revision, or a built-in generator), how source columns map onto a
`Task` (id, question, answer, choices, tests, instructions, meta), how to split it, how to grade
it and which tools the agent may use. Unknown keys are errors (`extra="forbid"`).
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from moscopt.core import yamlio
from moscopt.core.validation import describe
from moscopt.errors import UserError
from moscopt.run.fsio import read_text

GraderName = Literal["math", "numeric", "exact", "choice", "code", "ifeval", "custom", "judge"]
ToolName = Literal["python", "shell", "search"]

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_ENTRY_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
# Placeholders every prompt template may use besides the task's meta keys.
TEMPLATE_VARS = frozenset({"question", "choices", "tests", "answer_instructions"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldMap(_Strict):
    """Which source column plays which role. Only `question` is always required.

    `id` is a column name, or a template such as `"gsm8k-test-{_index}"` whose placeholders are
    columns or, for hub sources, `_index` (row number at the pinned revision) and `_config`.
    Without `id`, the id is a hash of the question text.
    """

    id: str | None = None
    question: str
    answer: str | None = None
    choices: str | None = None  # a column holding the list of options
    incorrect: list[str] = Field(default_factory=list)  # columns each holding one wrong option
    test: str | None = None  # a test program (HumanEval: defines check(candidate))
    entry_point: str | None = None  # with `test`: the function passed to check()
    test_list: str | None = None  # a column holding a list of assert statements (MBPP)
    test_setup: str | None = None  # setup code run after the solution, before the tests
    instructions: str | None = None  # IFEval instruction ids
    instruction_kwargs: str | None = None  # IFEval per-instruction arguments
    meta: dict[str, str] = Field(default_factory=dict)  # meta key -> column (or `_config`)
    # the meta key (of `meta`, or of a hub source's `values`) whose value is the task's niche
    # (MATH's subject, BBH's task, ...): what `moscopt.extensions.niches` groups competence by
    niche: str | None = None


class LocalSource(_Strict):
    """Files expected under a data directory laid out like `shared/data` (first found wins).

    A `.jsonl` file holds one object a line, a `.json` file one array of objects. A pattern
    with `*` (e.g. `data/*/qa_*_final.json`) reads every match, in sorted order.
    """

    files: list[str] = Field(min_length=1)
    fields: FieldMap
    password: str | None = None  # for a password-protected zip, read in memory only
    member: str | None = None  # the file inside a zip; default: its only .jsonl member
    # `package.module:function` mapping one raw row to the row the field map reads, or to
    # None to leave the row out (HLE's text-only subset); see `moscopt.benchmarks.rowmaps`
    transform: str | None = Field(None, pattern=_ENTRY_RE.pattern)


def _no_config() -> list[str | None]:
    return [None]


class HubSource(_Strict):
    """One Hugging Face dataset (one or more configs of it) at a pinned revision."""

    path: str
    configs: list[str | None] = Field(default_factory=_no_config)
    split: str
    revision: str = Field(min_length=1)
    fields: FieldMap
    values: dict[str, Any] = Field(default_factory=dict)  # constant meta values, e.g. year
    data_files: list[str] | None = None  # the repository files to read (default: all)
    # only these columns are read (others, e.g. HLE's image previews, are never decoded)
    columns: list[str] | None = None
    transform: str | None = Field(None, pattern=_ENTRY_RE.pattern)  # as LocalSource.transform
    access: str | None = None  # how to get access to a gated dataset (shown when loading fails)


class TaskFileSource(_Strict):
    """Task files whose tasks carry their own judges (`moscopt.benchmarks.taskfile`): `file`
    gives the training and validation tasks, `held_out` the held-out (test) tasks the
    certificate is measured on. A relative path is read from the spec's folder."""

    file: str = Field(min_length=1)
    held_out: str | None = None


class Source(_Strict):
    local: LocalSource | None = None
    hub: list[HubSource] = Field(default_factory=list)
    generator: Literal["offline"] | None = None  # a built-in procedural benchmark
    tasks: TaskFileSource | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Source:
        kinds = sum([self.generator is not None, self.local is not None or bool(self.hub)])
        kinds += self.tasks is not None
        if kinds == 0:
            raise ValueError(
                "give one of source.tasks, source.local, source.hub or source.generator"
            )
        if kinds > 1:
            raise ValueError(
                "source.tasks and source.generator each stand alone (no local or hub source)"
            )
        return self


class SplitSpec(_Strict):
    train: int = Field(100, ge=0)
    val: int = Field(20, ge=0)
    test: int = Field(50, ge=0)
    seed: int = 42

    def sizes(self) -> dict[str, int]:
        return {"train": self.train, "val": self.val, "test": self.test}


class BenchmarkSpec(_Strict):
    name: str
    description: str
    source: Source
    splits: SplitSpec = Field(default_factory=SplitSpec)
    grader: GraderName = "judge"  # required unless the source is a task file
    grader_entry: str | None = None  # `package.module:function`, with grader: custom
    # IFEval: `fraction` of instructions followed (a denser signal for optimization) or `all`.
    scoring: Literal["fraction", "all"] = "fraction"
    choice_letters: str = "ABCD"
    shuffle_choices: bool = False  # shuffle options with an RNG seeded by the task id
    code_timeout: float = Field(10.0, gt=0)
    tools: list[ToolName] = Field(default_factory=list)
    answer_instructions: str = ""
    prompt_template: str = "{question}\n\n{answer_instructions}"

    @model_validator(mode="after")
    def _check(self) -> BenchmarkSpec:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"name {self.name!r} must be lowercase letters, digits and hyphens")
        if (self.grader == "judge") != (self.source.tasks is not None):
            raise ValueError(
                "grader: judge goes with source.tasks (a task file whose tasks carry their "
                "judges), and a task file with no other grader"
            )
        if self.grader == "custom":
            if not self.grader_entry or not _ENTRY_RE.match(self.grader_entry):
                raise ValueError("grader: custom needs grader_entry: 'package.module:function'")
        elif self.grader_entry is not None:
            raise ValueError("grader_entry is only used with grader: custom")
        letters = self.choice_letters
        if len(set(letters)) != len(letters) or not letters.isalpha() or not letters.isupper():
            raise ValueError("choice_letters must be distinct capital letters")
        allowed = set(TEMPLATE_VARS)
        for fm in self.field_maps():
            allowed |= set(fm.meta)
        for hub in self.source.hub:
            allowed |= set(hub.values)
        if self.source.generator is not None:
            allowed.add("family")
        for name in _placeholders(self.prompt_template):
            if name not in allowed:
                raise ValueError(
                    f"prompt_template uses {{{name}}}; known: {', '.join(sorted(allowed))}"
                )
        for fm in self.field_maps():
            _check_roles(self.grader, fm)
        for fm in self.field_maps():
            if fm.niche is not None and fm.niche not in allowed - TEMPLATE_VARS:
                raise ValueError(
                    f"fields.niche {fm.niche!r} must be a key of fields.meta or of source values"
                )
        return self

    def field_maps(self) -> list[FieldMap]:
        maps = [h.fields for h in self.source.hub]
        if self.source.local is not None:
            maps.insert(0, self.source.local.fields)
        return maps


def _placeholders(template: str) -> list[str]:
    try:
        return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        raise ValueError(f"prompt_template is not a valid template: {e}") from None


def _check_roles(grader: str, fm: FieldMap) -> None:
    if grader in ("math", "numeric", "exact") and fm.answer is None:
        raise ValueError(f"grader {grader} needs fields.answer")
    if grader == "choice" and fm.choices is None and not fm.incorrect:
        raise ValueError("grader choice needs fields.choices or fields.incorrect")
    if grader == "choice" and fm.answer is None:
        raise ValueError("grader choice needs fields.answer (a letter or the correct text)")
    if grader == "code" and fm.test is None and fm.test_list is None:
        raise ValueError("grader code needs fields.test or fields.test_list")
    if grader == "ifeval" and (fm.instructions is None or fm.instruction_kwargs is None):
        raise ValueError("grader ifeval needs fields.instructions and fields.instruction_kwargs")


def load_spec(path: str | Path) -> BenchmarkSpec:
    """Read and validate one spec file; any problem is a `UserError` naming the file."""
    path = Path(path)
    text = read_text(path)
    try:
        data = yamlio.load(text)  # anchors and aliases refused (an alias bomb is one error)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise UserError(
            f"not valid YAML: {getattr(e, 'problem', None) or e}",
            path=path,
            line=mark.line + 1 if mark is not None else None,
        ) from None
    if not isinstance(data, dict):
        raise UserError("a benchmark spec must be a YAML mapping", path=path)
    try:
        spec = BenchmarkSpec.model_validate(data)
    except ValidationError as e:
        field, msg = describe(e)
        raise UserError(msg, path=path, field=field) from None
    return spec
