"""Execution memory records: what one agent step leaves behind, and the memory that holds them.

A `MemoryRecord` is one step: the skills active, the tool call and its (bounded) result, the
step's conclusion (the last paragraph of its reply, bounded) and the final answer it proposes,
if any. `ExecutionMemory` holds the records the write gate committed, with their embeddings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from moscopt.embedding import cosine

CONCLUSION_CHARS = 400
TOOL_INPUT_CHARS = 300
OBSERVATION_CHARS = 400
SHORT_CONCLUSION = 40  # a last paragraph this short is an answer line: add its lead-in
_CONFIDENCE = re.compile(r"(?im)^\W*confidence\W*[:=]\s*([0-9]*\.?[0-9]+)\s*(%?)")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class MemoryRecord:
    """One step of one rollout. `step` counts from 0."""

    step: int
    skills: tuple[str, ...]
    conclusion: str
    answer: str | None = None  # the final answer this step proposes (normalized), if any
    tool: str | None = None
    tool_input: str = ""
    observation: str = ""
    tool_error: bool = False
    confidence: float | None = None  # stated by the model (a `CONFIDENCE: 0.8` line), if any

    def text(self) -> str:
        """The record as the next step and the router read it."""
        head = f"[step {self.step + 1}"
        if self.skills:
            head += f"; skills: {', '.join(self.skills)}"
        lines = [f"{head}] {self.conclusion}".rstrip()]
        if self.tool is not None:
            lines.append(f"  {self.tool} call: {_clip(self.tool_input, TOOL_INPUT_CHARS)}")
            lines.append(f"  {self.tool} result: {_clip(self.observation, OBSERVATION_CHARS)}")
        return "\n".join(lines)

    def embed_text(self) -> str:
        """What novelty and relevance are measured on."""
        parts = [self.conclusion]
        if self.tool is not None:
            parts += [self.tool_input, self.observation]
        return "\n".join(p for p in parts if p)


@dataclass
class ExecutionMemory:
    """The committed records of one rollout, in step order, with their unit vectors."""

    records: list[MemoryRecord] = field(default_factory=list)
    vectors: list[list[float]] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)  # the write gate's score of each
    known: set[str] = field(default_factory=set)  # words of the task and the committed records

    def __len__(self) -> int:
        return len(self.records)

    def add(self, record: MemoryRecord, vector: list[float], score: float = 1.0) -> None:
        self.records.append(record)
        self.vectors.append(vector)
        self.scores.append(score)
        self.known |= words(record.embed_text())

    def max_similarity(self, vector: Sequence[float]) -> float:
        """The highest cosine between `vector` and a committed record (0 when empty)."""
        return max((cosine(vector, v) for v in self.vectors), default=0.0)

    def answers(self) -> list[str]:
        return [r.answer for r in self.records if r.answer is not None]


def conclusion_of(reply: str, limit: int = CONCLUSION_CHARS) -> str:
    """The step's conclusion: its last non-empty paragraph (whitespace collapsed; a bare answer
    line gets the sentence before it), bounded to `limit` characters from its end."""
    paragraphs = [p for p in re.split(r"\n\s*\n", reply.strip()) if p.strip()]
    if not paragraphs:
        return ""
    text = _SPACE.sub(" ", paragraphs[-1]).strip()
    if len(text) < SHORT_CONCLUSION and len(paragraphs) > 1:  # a bare answer: its lead-in too
        before = _SPACE.sub(" ", paragraphs[-2]).strip()
        sentences = [x for x in re.split(r"(?<=[.!?])\s+", before) if x]
        text = f"{sentences[-1]} {text}" if sentences else text
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def confidence_of(reply: str) -> float | None:
    """The confidence the reply states on a `CONFIDENCE: 0.8` (or `80%`) line, in [0, 1]."""
    found = _CONFIDENCE.findall(reply)
    if not found:
        return None
    value, percent = found[-1]
    x = float(value) / (100.0 if percent or float(value) > 1.0 else 1.0)
    return min(1.0, max(0.0, x)) if math.isfinite(x) else None


def normalize_answer(answer: str | None) -> str | None:
    """The answer as compared for agreement: case, spacing, `$` and a trailing period dropped."""
    if answer is None:
        return None
    text = _SPACE.sub(" ", answer.replace("$", "")).strip().rstrip(".").strip().lower()
    return text or None


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _clip(text: str, limit: int) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."
