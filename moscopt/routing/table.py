"""The static routing table: gate decisions turned into readable rules, used with no gate call.

The file (``ROUTING.md`` in a static export) is Markdown a person reads and may edit. Only the
``## Rules`` section is read by moscopt; every other section is for people. In that section
each non-blank line is one of::

    1. IF WORDS apples, garden THEN ACTIVATE: cautious-planner, detail-verifier  # 3 training tasks
    2. IF TEXT "Compute 3 + 3. End with FINAL ANSWER: <n>" THEN ACTIVATE: a, b  # 1 training task
    DEFAULT: careful-computation, detail-verifier  # 4 training tasks

Rules are tried in file order (the numbers are for people); the first that matches activates
its skills, and DEFAULT (exactly one, the last line of the section) applies when none does.
Matching is deterministic and needs no model:

- ``IF WORDS w1, w2``: every listed word occurs in the task text. Words are runs of letters and
  digits, compared in lower case (`words`), so "Apples," contains the word ``apples``.
- ``IF TEXT "..."``: the task text, with whitespace runs collapsed to one space and trimmed,
  equals the quoted JSON string. One such rule pins one training task the word rules miss.
- ``# ...`` after the skill list is a comment (the evidence behind the rule).

`derive` learns the table from gate decisions: DEFAULT is the caller's choice (the most common
decision), WORDS rules are a greedy decision list (each rule the conjunction of at most two
words that routes the most remaining tasks of one skill set and no remaining task of another
set, supported by at least two tasks), and TEXT rules pin the remaining exceptions. So every
training decision whose text is unique is reproduced exactly; the WORDS rules are what
generalizes to new tasks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from moscopt.errors import UserError
from moscopt.routing.gate import Activation
from moscopt.run.fsio import read_text

RULES_HEADING = "## Rules"
_WORD_RE = re.compile(r"[^\W_]+")
_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")  # fullmatch: `$` passes a final newline
_RULE_RE = re.compile(r"^(?:\d+\.\s+)?IF\s+(WORDS|TEXT)\s+(.*)$")
_DEFAULT_RE = re.compile(r"^DEFAULT:\s*(.*)$")
# Words too common to make a readable rule; precision alone would exclude most of them anyway.
STOPWORDS = frozenset(
    (
        "and",
        "are",
        "can",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "into",
        "its",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
        "end",
        "answer",
        "final",
    )
)


def words(text: str) -> frozenset[str]:
    """The lower-case words of `text` (runs of letters and digits): what WORDS rules test."""
    return frozenset(_WORD_RE.findall(text.lower()))


def normalize_text(text: str) -> str:
    """What TEXT rules compare: whitespace runs collapsed to one space, trimmed."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Rule:
    """One ``IF ... THEN ACTIVATE: ...`` line. `support`: training tasks it routes (a comment)."""

    kind: Literal["words", "text"]
    pattern: tuple[str, ...] | str  # the words, or the normalized text
    skills: tuple[str, ...]
    support: int = 0
    line: int = field(default=0, compare=False)  # line in the file it was read from

    def matches(self, text: str, text_words: frozenset[str] | None = None) -> bool:
        if self.kind == "text":
            return normalize_text(text) == self.pattern
        present = text_words if text_words is not None else words(text)
        return all(w in present for w in self.pattern)

    def condition(self) -> str:
        if self.kind == "text":
            return f"IF TEXT {json.dumps(self.pattern, ensure_ascii=False)}"
        return f"IF WORDS {', '.join(self.pattern)}"

    def render(self) -> str:
        return f"{self.condition()} THEN ACTIVATE: {', '.join(self.skills)}"


@dataclass(frozen=True)
class Match:
    """Which rule routed a task: `index` is its 1-based position, None for DEFAULT."""

    skills: tuple[str, ...]
    index: int | None
    rule: Rule | None

    def describe(self) -> str:
        if self.rule is None:
            return f"DEFAULT: {', '.join(self.skills)}"
        return f"rule {self.index}: {self.rule.render()}"


@dataclass(frozen=True)
class RoutingTable:
    rules: tuple[Rule, ...]
    default: tuple[str, ...]
    default_support: int = 0
    default_line: int = field(default=0, compare=False)

    @property
    def k(self) -> int:
        return len(self.default)

    def match(self, text: str) -> Match:
        present = words(text)
        for i, rule in enumerate(self.rules, 1):
            if rule.matches(text, present):
                return Match(rule.skills, i, rule)
        return Match(self.default, None, None)

    def check_skills(self, available: Iterable[str], path: str | Path | None) -> None:
        """Every rule names skills that exist (`available`); else a `UserError` at its line."""
        have = set(available)
        for rule, line in [*((r.skills, r.line) for r in self.rules), (self.default, 0)]:
            unknown = [s for s in rule if s not in have]
            if unknown:
                raise UserError(
                    f"unknown skill '{unknown[0]}' (not in the export's skills/)",
                    path=path,
                    line=line or self.default_line or None,
                )

    # -- the file ------------------------------------------------------------------------------

    def rules_section(self) -> str:
        """The ``## Rules`` section (heading included), as `loads` reads it."""
        out = [RULES_HEADING, ""]
        for i, rule in enumerate(self.rules, 1):
            out.append(f"{i}. {rule.render()}  # {_tasks(rule.support)}")
        out.append(f"DEFAULT: {', '.join(self.default)}  # {_tasks(self.default_support)}")
        return "\n".join(out) + "\n"

    @classmethod
    def loads(cls, text: str, *, path: str | Path | None = None) -> RoutingTable:
        """Parse the ``## Rules`` section strictly; a bad line is a `UserError` at that line."""
        lines = text.replace("\r\n", "\n").split("\n")
        starts = [i for i, raw in enumerate(lines) if raw.strip() == RULES_HEADING]
        if len(starts) != 1:
            what = "no" if not starts else "more than one"
            raise UserError(f"{what} '{RULES_HEADING}' section", path=path, line=1)
        rules: list[Rule] = []
        default: tuple[str, ...] | None = None
        default_support, default_line = 0, 0
        for i in range(starts[0] + 1, len(lines)):
            raw, lineno = lines[i].strip(), i + 1
            if raw.startswith("## "):
                break
            if not raw:
                continue
            if default is not None:
                raise UserError(
                    "nothing may follow DEFAULT in the rules section (it would never apply)",
                    path=path,
                    line=lineno,
                )
            m = _DEFAULT_RE.match(raw)
            if m:
                names, support = _skills_and_comment(m.group(1), path, lineno)
                default, default_support, default_line = names, support, lineno
                continue
            rules.append(_parse_rule(raw, path, lineno))
        if default is None:
            raise UserError("the rules section has no 'DEFAULT: ...' line", path=path)
        for rule in rules:
            if len(rule.skills) != len(default):
                raise UserError(
                    f"activates {len(rule.skills)} skills but DEFAULT activates "
                    f"{len(default)}: every line must name K skills",
                    path=path,
                    line=rule.line,
                )
        return cls(tuple(rules), default, default_support, default_line)

    @classmethod
    def load(cls, path: str | Path) -> RoutingTable:
        return cls.loads(read_text(path), path=path)


def _tasks(n: int) -> str:
    return f"{n} training task" + ("" if n == 1 else "s")


def _parse_rule(raw: str, path: str | Path | None, line: int) -> Rule:
    m = _RULE_RE.match(raw)
    if not m:
        raise UserError(
            "expected 'N. IF WORDS w1, w2 THEN ACTIVATE: a, b', "
            "'N. IF TEXT \"...\" THEN ACTIVATE: a, b' or 'DEFAULT: a, b'",
            path=path,
            line=line,
        )
    kind, rest = m.group(1), m.group(2)
    pattern: tuple[str, ...] | str
    if kind == "TEXT":
        try:
            value, end = json.JSONDecoder().raw_decode(rest)
        except json.JSONDecodeError as e:
            raise UserError(f"TEXT needs a JSON string: {e.msg}", path=path, line=line) from None
        if not isinstance(value, str) or not value.strip():
            raise UserError("TEXT needs a non-empty JSON string", path=path, line=line)
        pattern, rest = normalize_text(value), rest[end:].strip()
        if not rest.startswith("THEN "):
            raise UserError("expected 'THEN ACTIVATE:' after the text", path=path, line=line)
        rest = rest[len("THEN ") :]
    else:
        listed, sep, rest = rest.partition(" THEN ")
        if not sep:
            raise UserError("expected 'THEN ACTIVATE:' after the words", path=path, line=line)
        parts = [w.strip().lower() for w in listed.split(",")]
        bad = [w for w in parts if not w or _WORD_RE.fullmatch(w) is None]
        if bad or not parts:
            raise UserError(
                f"WORDS must be a comma-separated list of words (letters and digits), "
                f"not '{listed.strip()}'",
                path=path,
                line=line,
            )
        pattern = tuple(parts)
    head, sep, names_text = rest.strip().partition(":")
    if not sep or head.strip() != "ACTIVATE":
        raise UserError("expected 'THEN ACTIVATE: a, b'", path=path, line=line)
    names, support = _skills_and_comment(names_text, path, line)
    return Rule("text" if kind == "TEXT" else "words", pattern, names, support, line)


def _skills_and_comment(
    text: str, path: str | Path | None, line: int
) -> tuple[tuple[str, ...], int]:
    listed, _, comment = text.partition("#")
    names = tuple(n.strip() for n in listed.split(",") if n.strip())
    if not names:
        raise UserError("no skills listed", path=path, line=line)
    bad = [n for n in names if not _NAME_RE.fullmatch(n)]
    if bad:
        raise UserError(f"'{bad[0]}' is not a skill name", path=path, line=line)
    if len(set(names)) != len(names):
        raise UserError("a skill is listed twice", path=path, line=line)
    m = re.match(r"\s*(\d+)\s+training task", comment)
    return names, int(m.group(1)) if m else 0


# -- the router ----------------------------------------------------------------------------------


class StaticRouter:
    """The `Router` of a static export: a table lookup, never a model call."""

    def __init__(self, table: RoutingTable) -> None:
        self.table = table

    async def select(self, task_text: str, *, sample: int = 0) -> Activation:
        return Activation(self.table.match(task_text).skills, "static")
