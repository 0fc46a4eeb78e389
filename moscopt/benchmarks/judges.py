"""Judges that tasks carry with them: rule checks, rubric criteria, or an answer key.

A task file (`moscopt.benchmarks.taskfile`) gives each task a `judge`:

    {"kind": "rule", "checks": [{"op": "contains", "arg": "## Key Risks"}, ...]}
    {"kind": "rubric", "criteria": ["Names each risk's owner", {"criterion": ..., "weight": 2}]}
    {"kind": "answer", "answer": "42", "grader": "numeric"}

A rule or rubric task's reward is the (weighted) fraction of its checks or criteria met, or with
`"scoring": "all"` 1 when all are met, else 0. Checks run on the agent's whole reply. Each check
renders as what it requires (`must contain "Confidence:"`, `at most 1200 characters`), or as
its `description` where it has one: that is what reflection is shown of a failed training task,
and what `str(judge)` gives. Rubric criteria are scored by a judge model
(`moscopt.benchmarks.rubric`).

A `regex` check's pattern is the user's and the reply is the model's: a pattern that backtracks
catastrophically on some reply would hold the run forever under Python's `re`, which cannot be
interrupted. Patterns run on the `regex` package (`re`'s syntax, installed with litellm) with a
`REGEX_SECONDS` timeout; past it the task's grade is a grader error that names the check.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from moscopt.benchmarks.tasks import Grade

REGEX_SECONDS = 1.0  # the longest a `regex` check may search one reply

CheckOp = Literal[
    "contains",
    "not_contains",
    "regex",
    "section_present",
    "equals",
    "max_chars",
    "min_chars",
    "max_words",
    "min_words",
    "json_valid",
]
TEXT_OPS = frozenset({"contains", "not_contains", "regex", "section_present", "equals"})
COUNT_OPS = frozenset({"max_chars", "min_chars", "max_words", "min_words"})
ARG_MAX = 2000  # characters of a text argument (a regex longer than this is no house rule)
ANSWER_GRADERS = ("exact", "numeric", "math", "choice")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Check(_Strict):
    """One rule check on the reply."""

    op: CheckOp
    arg: str | int | None = None
    description: str | None = Field(None, max_length=500)
    ignore_case: bool = False

    @model_validator(mode="after")
    def _arg_fits_op(self) -> Check:
        if self.op in TEXT_OPS:
            if not isinstance(self.arg, str) or (not self.arg.strip() and self.op != "equals"):
                raise ValueError(f"'{self.op}' needs a text 'arg'")
            if len(self.arg) > ARG_MAX:
                raise ValueError(f"'arg' is over {ARG_MAX} characters")
            if self.op == "regex":
                import regex

                try:
                    regex.compile(self.arg)
                except regex.error as e:
                    raise ValueError(f"'arg' is not a valid regular expression: {e}") from None
            if self.op == "section_present" and not _heading_text(self.arg):
                raise ValueError("'section_present' needs the heading's text in 'arg'")
        elif self.op in COUNT_OPS:
            if isinstance(self.arg, bool) or not isinstance(self.arg, int) or self.arg < 0:
                raise ValueError(f"'{self.op}' needs a whole number >= 0 in 'arg'")
        elif self.arg is not None:
            raise ValueError(f"'{self.op}' takes no 'arg'")
        return self

    def met(self, reply: str) -> bool:
        """Whether `reply` passes this check."""
        op, arg = self.op, self.arg
        if op in COUNT_OPS:
            assert isinstance(arg, int)
            size = len(reply) if op.endswith("chars") else len(reply.split())
            return size <= arg if op.startswith("max") else size >= arg
        if op == "json_valid":
            return _json_valid(reply)
        assert isinstance(arg, str)
        if op == "regex":
            import regex

            flags = regex.IGNORECASE if self.ignore_case else 0
            try:
                return regex.search(arg, reply, flags, timeout=REGEX_SECONDS) is not None
            except TimeoutError:
                raise ValueError(
                    f"the check {self.render()} took over {REGEX_SECONDS:g} s on this reply "
                    "(a pattern that backtracks: anchor it or bound its repeats)"
                ) from None
        if op == "section_present":
            title = re.escape(_heading_text(arg))
            pattern = rf"^[ \t]{{0,3}}#{{1,6}}[ \t]+{title}[ \t]*#*[ \t]*$"
            return re.search(pattern, reply, re.MULTILINE | re.IGNORECASE) is not None
        text, want = (reply.casefold(), arg.casefold()) if self.ignore_case else (reply, arg)
        if op == "equals":
            return text.strip() == want.strip()
        found = want in text
        return found if op == "contains" else not found

    def render(self) -> str:
        """What the check requires, for a person or the optimizer: its description if it has
        one, else the check itself (`must contain "Confidence:"`)."""
        if self.description:
            return self.description
        arg, case = self.arg, " (any case)" if self.ignore_case else ""
        words = {
            "contains": f"must contain {_quote(arg)}{case}",
            "not_contains": f"must not contain {_quote(arg)}{case}",
            "regex": f"must match /{arg}/{'i' if self.ignore_case else ''}",
            "section_present": f"must have a Markdown heading {_quote(arg)}",
            "equals": f"must be exactly {_quote(arg)}{case}",
            "max_chars": f"at most {arg} characters",
            "min_chars": f"at least {arg} characters",
            "max_words": f"at most {arg} words",
            "min_words": f"at least {arg} words",
            "json_valid": "must be valid JSON",
        }
        return words[self.op]


def _quote(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)


def _heading_text(arg: str) -> str:
    return arg.strip().lstrip("#").strip()


def _json_valid(reply: str) -> bool:
    text = reply.strip()
    fenced = re.fullmatch(r"```[A-Za-z0-9_-]*\n(.*)\n```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


class Criterion(_Strict):
    """One rubric criterion, with its weight in the task's reward."""

    criterion: str = Field(min_length=1, max_length=1000)
    weight: float = Field(1.0, gt=0, le=100)


def _criterion(value: Any) -> Any:
    return {"criterion": value} if isinstance(value, str) else value


class RuleJudge(_Strict):
    kind: Literal["rule"]
    checks: list[Check] = Field(min_length=1, max_length=100)
    scoring: Literal["fraction", "all"] = "fraction"

    def __str__(self) -> str:
        return "; ".join(c.render() for c in self.checks)

    def grade(self, reply: str) -> Grade:
        """The reward for `reply`; `detail` says which checks failed, readably."""
        met = [c.met(reply) for c in self.checks]
        failed = [c.render() for c, ok in zip(self.checks, met, strict=True) if not ok]
        return _grade(sum(met) / len(met), failed, len(met), "checks", self.scoring)


class RubricJudge(_Strict):
    kind: Literal["rubric"]
    criteria: list[Annotated[Criterion, Field()]] = Field(min_length=1, max_length=30)
    scoring: Literal["fraction", "all"] = "fraction"

    @field_validator("criteria", mode="before")
    @classmethod
    def _strings_are_criteria(cls, v: Any) -> Any:
        return [_criterion(c) for c in v] if isinstance(v, list) else v

    def __str__(self) -> str:
        return "; ".join(c.criterion for c in self.criteria)

    def score(self, met: list[bool]) -> Grade:
        """The reward for the judge model's verdicts `met` (one per criterion, in order)."""
        total = sum(c.weight for c in self.criteria)
        got = sum(c.weight for c, ok in zip(self.criteria, met, strict=True) if ok)
        failed = [c.criterion for c, ok in zip(self.criteria, met, strict=True) if not ok]
        return _grade(got / total, failed, len(met), "criteria", self.scoring)


class AnswerJudge(_Strict):
    kind: Literal["answer"]
    answer: str = Field(min_length=1, max_length=10_000)
    grader: Literal["exact", "numeric", "math", "choice"] = "exact"

    @field_validator("answer", mode="before")
    @classmethod
    def _numbers_are_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v

    def __str__(self) -> str:
        return self.answer


Judge = Annotated[RuleJudge | RubricJudge | AnswerJudge, Field(discriminator="kind")]


def _grade(fraction: float, failed: list[str], n: int, what: str, scoring: str) -> Grade:
    reward = (1.0 if not failed else 0.0) if scoring == "all" else fraction
    detail = f"{n - len(failed)} of {n} {what} met"
    if failed:
        detail += "; not met: " + "; ".join(failed)
    return Grade(reward, None, detail)
