"""Bounded text edits: the `Edit` value a proposer returns and the applier that matches anchors.

An LLM proposes ``{"reasoning": str, "edits": [{"op": "add"|"delete"|"replace", "anchor": str,
"content": str}]}``. `parse_proposal` turns that text into a `Proposal` (or raises
`ProposalError`); `apply_edits` applies the edits in order to a skill *body* (front matter is
never editable) and reports a status per edit. It never raises on a bad edit.

Anchor matching: an anchor matches where it occurs exactly; failing that, where it occurs with
whitespace runs collapsed (models often re-wrap lines). An anchor that occurs more than once is
ambiguous and the edit is skipped: guessing would edit the wrong place.

- ``add``: insert `content` after the anchor; when the anchor ends a line, as new line(s) below
  it. An empty anchor appends at the end of the body.
- ``delete``: remove the anchor text (the whole line(s) when the anchor spans whole lines).
- ``replace``: put `content` in place of the anchor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from moscopt.core import jsonio

Op = Literal["add", "delete", "replace"]
Status = Literal["applied", "skipped", "error"]
OPS: tuple[str, ...] = ("add", "delete", "replace")

MAX_CONTENT_CHARS = 4000
MAX_ANCHOR_CHARS = 1000
MAX_BODY_CHARS = 40_000
MAX_REASONING_CHARS = 4000
MAX_PROSE_OBJECTS = 64  # braces tried when a proposal is wrapped in prose


# JSON schema for structured output: bounded so that constrained decoding terminates.
# Under grammar-constrained decoding (the embedded model) a proposal is at most this many edits
# of this many characters: a 135M model fills any room it is given with repeated text, and each
# token costs time on a CPU.
CONSTRAINED_EDITS = 2
CONSTRAINED_CHARS = 240


def proposal_schema(max_edits: int, anchors: Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON schema of a proposal. `anchors`: for grammar-constrained decoding, the only
    anchors allowed (the skill's own unique lines, and "" for the end), so a weak model cannot
    copy a placeholder or anchor on text the skill does not have."""
    anchor: dict[str, Any] = {"type": "string", "maxLength": 300}
    reasoning, content = 1200, 1200
    if anchors is not None:  # a small model: a short proposal of few edits, generated fast
        anchor = {"type": "string", "enum": ["", *anchors]}
        reasoning, content = CONSTRAINED_CHARS, CONSTRAINED_CHARS
        max_edits = min(max_edits, CONSTRAINED_EDITS)
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": reasoning},
            "edits": {
                "type": "array",
                "maxItems": max_edits,
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "enum": list(OPS)},
                        "anchor": anchor,
                        "content": {"type": "string", "maxLength": content},
                    },
                    "required": ["op", "anchor", "content"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["reasoning", "edits"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Edit:
    op: str  # validated at apply time: an unknown op is an `error` status, not an exception
    anchor: str = ""
    content: str = ""

    def summary(self, limit: int = 80) -> str:
        def short(s: str) -> str:
            s = " ".join(s.split())
            return s if len(s) <= limit else s[: limit - 1] + "…"

        if self.op == "add":
            where = f"after '{short(self.anchor)}'" if self.anchor else "at end"
            return f"add {where}: '{short(self.content)}'"
        if self.op == "delete":
            return f"delete '{short(self.anchor)}'"
        return f"replace '{short(self.anchor)}' with '{short(self.content)}'"


@dataclass(frozen=True)
class Proposal:
    reasoning: str
    edits: tuple[Edit, ...]
    invalid: tuple[str, ...] = ()  # reasons for edits that could not even be read

    def summary(self, limit: int = 200) -> str:
        text = "; ".join(e.summary(60) for e in self.edits) or "(no edits)"
        return text if len(text) <= limit else text[: limit - 1] + "…"


class ProposalError(ValueError):
    """The model's output is not a usable proposal (not JSON, wrong shape)."""


@dataclass(frozen=True)
class EditOutcome:
    edit: Edit
    status: Status
    reason: str = ""


@dataclass(frozen=True)
class ApplyResult:
    text: str
    outcomes: tuple[EditOutcome, ...] = field(default_factory=tuple)

    @property
    def applied(self) -> int:
        return sum(o.status == "applied" for o in self.outcomes)

    @property
    def changed(self) -> bool:
        return self.applied > 0


def parse_proposal(raw: str | dict[str, Any]) -> Proposal:
    """Parse a proposal from model output (a JSON object, optionally in a ```json fence)."""
    data = raw if isinstance(raw, dict) else _load_json_object(raw)
    reasoning = data.get("reasoning", "")
    edits_raw = data.get("edits")
    if not isinstance(reasoning, str):
        raise ProposalError("'reasoning' must be a string")
    if not isinstance(edits_raw, list):
        raise ProposalError("'edits' must be a list")
    edits: list[Edit] = []
    invalid: list[str] = []
    for i, item in enumerate(edits_raw):
        if not isinstance(item, dict):
            invalid.append(f"edit {i}: not an object")
            continue
        op, anchor, content = item.get("op"), item.get("anchor", ""), item.get("content", "")
        if not isinstance(op, str) or not isinstance(anchor, str) or not isinstance(content, str):
            invalid.append(f"edit {i}: op, anchor and content must be strings")
            continue
        edits.append(Edit(op=op.strip().lower(), anchor=anchor, content=content))
    return Proposal(reasoning[:MAX_REASONING_CHARS], tuple(edits), tuple(invalid))


def _load_json_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    fence = re.fullmatch(r"```(?:json)?\s*\n(.*)\n```", stripped, flags=re.DOTALL)
    if fence:
        stripped = fence.group(1).strip()
    try:
        data = jsonio.loads(stripped)
    except json.JSONDecodeError:
        data = _object_in_prose(stripped)
    if not isinstance(data, dict):
        raise ProposalError("the output is JSON but not an object")
    return data


def _object_in_prose(text: str) -> dict[str, Any]:
    """Prose around the proposal: the first decodable object with an "edits" key among the first
    `MAX_PROSE_OBJECTS` braces tried. A successful decode is skipped whole (the search resumes
    after it), and a document nested past the reader's bound ends the search (each of its inner
    braces would be as deep again: 25,000 levels cost seconds each)."""
    start = 0
    for _ in range(MAX_PROSE_OBJECTS):
        if (at := text.find("{", start)) < 0:
            break
        try:
            data, end = jsonio.raw_decode(text, at)
        except json.JSONDecodeError as e:
            if e.msg == jsonio.TOO_DEEP:
                raise ProposalError(f"the JSON proposal is {e.msg}") from None
            start = at + 1
            continue
        if isinstance(data, dict) and "edits" in data:
            return data
        start = end
    raise ProposalError("no JSON proposal object found in the output")
    if not isinstance(data, dict):
        raise ProposalError("the output is JSON but not an object")
    return data


def apply_edits(
    text: str, edits: tuple[Edit, ...] | list[Edit], max_edits: int | None = None
) -> ApplyResult:
    """Apply `edits` in order to `text`; each gets `applied`, `skipped` or `error`."""
    outcomes: list[EditOutcome] = []
    for i, edit in enumerate(edits):
        if max_edits is not None and i >= max_edits:
            outcomes.append(EditOutcome(edit, "skipped", f"over the edit budget of {max_edits}"))
            continue
        try:
            text, outcome = _apply_one(text, edit)
        except Exception as e:  # never crash on a bad edit
            outcome = EditOutcome(edit, "error", f"{type(e).__name__}: {e}")
        outcomes.append(outcome)
    return ApplyResult(text, tuple(outcomes))


def _apply_one(text: str, edit: Edit) -> tuple[str, EditOutcome]:
    if edit.op not in OPS:
        return text, EditOutcome(
            edit, "error", f"unknown op '{edit.op}' (use add, delete or replace)"
        )
    if len(edit.content) > MAX_CONTENT_CHARS or len(edit.anchor) > MAX_ANCHOR_CHARS:
        return text, EditOutcome(edit, "error", "anchor or content too long")
    if edit.op != "add" and not edit.anchor.strip():
        return text, EditOutcome(edit, "error", f"'{edit.op}' needs a non-empty anchor")
    if edit.op != "delete" and not edit.content.strip():
        return text, EditOutcome(edit, "error", f"'{edit.op}' needs non-empty content")

    if edit.op == "add" and not edit.anchor.strip():
        base = text.rstrip("\n")
        new = f"{base}\n\n{edit.content.strip(chr(10))}\n" if base else edit.content
        return _bounded(text, new, edit)

    spans = find_anchor(text, edit.anchor)
    if not spans:
        return text, EditOutcome(edit, "skipped", "anchor not found")
    if len(spans) > 1:
        return text, EditOutcome(edit, "skipped", f"anchor is ambiguous ({len(spans)} matches)")
    start, end = spans[0]
    if edit.op == "replace":
        new = text[:start] + edit.content + text[end:]
    elif edit.op == "delete":
        line_start = start == 0 or text[start - 1] == "\n"
        line_end = end == len(text) or text[end] == "\n"
        if line_start and line_end and end < len(text):
            end += 1  # remove the whole line(s), newline included
        new = text[:start] + text[end:]
    else:  # add
        if end == len(text) or text[end] == "\n":
            content = edit.content.strip("\n")
            new = text[:end] + "\n" + content + text[end:]
        else:
            new = text[:end] + edit.content + text[end:]
    return _bounded(text, new, edit)


def _bounded(old: str, new: str, edit: Edit) -> tuple[str, EditOutcome]:
    if len(new) > MAX_BODY_CHARS:
        return old, EditOutcome(edit, "error", f"the text would exceed {MAX_BODY_CHARS} characters")
    if new == old:
        return old, EditOutcome(edit, "skipped", "no change")
    return new, EditOutcome(edit, "applied")


def find_anchor(text: str, anchor: str) -> list[tuple[int, int]]:
    """Spans of `anchor` in `text`: exact matches, else whitespace-insensitive matches."""
    if not anchor:
        return []
    spans = [(m.start(), m.start() + len(anchor)) for m in _overlapping(text, anchor)]
    if spans:
        return spans
    words = anchor.split()
    if not words:
        return []
    pattern = r"\s+".join(re.escape(w) for w in words)
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)]


def _overlapping(text: str, needle: str) -> list[re.Match[str]]:
    return list(re.finditer(f"(?={re.escape(needle)})", text))


def unique_lines(text: str, limit: int = 300) -> list[str]:
    """The non-blank lines of `text` that occur in it exactly once (as anchors, they match
    one place), stripped, at most `limit` characters, in order."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and len(ln.strip()) <= limit]
    return [ln for ln in dict.fromkeys(lines) if text.count(ln) == 1]
