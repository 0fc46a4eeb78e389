"""The write gate (what enters the execution memory) and the retrieval gate (what the next
step and the router see of it).

Write gate. A record is redundant when its embedding is within `redundant_above` cosine of a
committed record (novelty = 1 - that maximum); redundant records are never committed. A novel
record is committed unless the learned score (a `Logistic` over `WRITE_FEATURES`, fitted from
the trainer's rollouts) says it is unlikely to be useful (below `threshold`). Disabled (the
ablation), every record is committed.

Retrieval gate. Scores every committed record for the current step: without a learned model,
cosine relevance to the query (the task plus the latest record), recency breaking near-ties;
with one, the `Logistic` over `RETRIEVAL_FEATURES`. The top `k` that fit in `max_chars` come
back in step order; the budget is also bounded by what the records replace (the transcript so
far), so a short run never reads more than its transcript. Disabled (the ablation), every
committed record comes back (still within the budget, newest kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from moscopt.embedding import cosine
from moscopt.extensions.memory.learned import Logistic
from moscopt.extensions.memory.records import ExecutionMemory, MemoryRecord, words

WRITE_FEATURES = (
    "novelty",
    "new_words",
    "has_answer",
    "new_answer",
    "repeat_answer",
    "has_tool",
    "tool_error",
    "step_frac",
)
RECENCY_WEIGHT = 0.1  # untrained retrieval: relevance first, recency between near-equals
RETRIEVAL_FEATURES = ("relevance", "recency", "has_answer", "latest", "has_tool", "write_score")


@dataclass(frozen=True)
class WriteDecision:
    commit: bool
    novelty: float
    score: float | None  # the learned score, when a model is fitted
    features: tuple[float, ...]
    reason: str  # committed | redundant | low-score | gate-off


def write_features(
    record: MemoryRecord, novelty: float, memory: ExecutionMemory, max_steps: int
) -> tuple[float, ...]:
    answers = memory.answers()
    has_answer = record.answer is not None
    repeat = has_answer and record.answer in answers
    return (
        round(novelty, 4),
        round(new_words(record, memory), 4),
        float(has_answer),
        float(has_answer and not repeat),
        float(repeat),
        float(record.tool is not None),
        float(record.tool_error),
        round((record.step + 1) / max(1, max_steps), 4),
    )


def new_words(record: MemoryRecord, memory: ExecutionMemory) -> float:
    """The share of the record's distinct words that neither the task nor a committed record
    has: what it adds, read literally."""
    mine = words(record.embed_text())
    return len(mine - memory.known) / len(mine) if mine else 0.0


class WriteGate:
    def __init__(
        self,
        *,
        enabled: bool = True,
        redundant_above: float = 0.92,
        model: Logistic | None = None,
        threshold: float = 0.5,
    ) -> None:
        self.enabled = enabled
        self.redundant_above = redundant_above
        self.model = model
        self.threshold = threshold

    def decide(
        self,
        record: MemoryRecord,
        vector: Sequence[float],
        memory: ExecutionMemory,
        max_steps: int,
    ) -> WriteDecision:
        novelty = 1.0 - memory.max_similarity(vector) if len(memory) else 1.0
        features = write_features(record, novelty, memory, max_steps)
        score = self.model.prob(features) if self.model is not None else None
        if not self.enabled:
            return WriteDecision(True, novelty, score, features, "gate-off")
        if len(memory) and 1.0 - novelty > self.redundant_above:
            return WriteDecision(False, novelty, score, features, "redundant")
        if score is not None and score < self.threshold:
            return WriteDecision(False, novelty, score, features, "low-score")
        return WriteDecision(True, novelty, score, features, "committed")


def retrieval_features(
    memory: ExecutionMemory, i: int, query: Sequence[float]
) -> tuple[float, ...]:
    n = len(memory)
    record = memory.records[i]
    return (
        round(cosine(query, memory.vectors[i]), 4),
        round((i + 1) / n, 4),
        float(record.answer is not None),
        float(i == n - 1),
        float(record.tool is not None),
        round(memory.scores[i], 4),
    )


class RetrievalGate:
    def __init__(
        self,
        *,
        enabled: bool = True,
        k: int = 3,
        max_chars: int = 2000,
        model: Logistic | None = None,
    ) -> None:
        self.enabled = enabled
        self.k = max(1, k)
        self.max_chars = max_chars
        self.model = model

    def score(self, memory: ExecutionMemory, i: int, query: Sequence[float]) -> float:
        features = retrieval_features(memory, i, query)
        if self.model is not None:
            return self.model.prob(features)
        return features[0] + RECENCY_WEIGHT * features[1]  # relevance, recency breaks ties

    def select(
        self, memory: ExecutionMemory, query: Sequence[float], budget: int | None = None
    ) -> list[MemoryRecord]:
        """The records the next step sees, in step order, within `max_chars` and `budget` (the
        size of what they replace: the transcript after the task)."""
        limit = self.max_chars if budget is None else min(self.max_chars, budget)
        n = len(memory)
        if n == 0:
            return []
        if self.enabled:
            ranked = sorted(range(n), key=lambda i: (-self.score(memory, i, query), -i))
            ranked = ranked[: self.k]
        else:
            ranked = list(range(n - 1, -1, -1))  # newest first, so the budget keeps them
        chosen: list[int] = []
        used = 0
        for i in ranked:
            size = len(memory.records[i].text()) + 1
            if chosen and used + size > limit:
                continue
            chosen.append(i)
            used += size
        return [memory.records[i] for i in sorted(chosen)]
