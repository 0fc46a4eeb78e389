"""The experience archive: distilled insights, niche lessons kept apart from cross-niche
meta-insights.

Niche lessons are retrieved for a task by the similarity of the task's text to the text of the
task each lesson was learned from (only lessons of the task's niche); meta-insights by the
similarity of their own text to the task, from every niche. Adding an insight whose text is
a near-duplicate (cosine >= `dedup`) of one of the same kind (and niche, for lessons) merges it
into that entry instead: the entry's count goes up and its givers are joined. Past `capacity`,
the oldest entry that was never merged is dropped first.
"""

from __future__ import annotations

import hashlib

from moscopt.embedding import Embedder, cosine
from moscopt.extensions.niches.records import Insight, NicheState


def insight_id(kind: str, niche: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{niche}\0{text}".encode()).hexdigest()[:12]


class Archive:
    def __init__(
        self, state: NicheState, embedder: Embedder, *, dedup: float, capacity: int
    ) -> None:
        self.state, self.embedder, self.dedup, self.capacity = state, embedder, dedup, capacity

    def get(self, id: str) -> Insight | None:
        return next((e for e in self.state.archive if e.id == id), None)

    def add(self, entry: Insight) -> tuple[Insight, bool]:
        """Store `entry` or merge it into its near-duplicate: (the stored entry, whether new)."""
        same = [
            e
            for e in self.state.archive
            if e.kind == entry.kind and (entry.kind == "meta" or e.niche == entry.niche)
        ]
        if same:
            vectors = self.embedder.encode_many([entry.text, *(e.text for e in same)])
            scored = [(cosine(vectors[0], v), i) for i, v in enumerate(vectors[1:])]
            sim, i = max(scored, key=lambda x: (x[0], -x[1]))
            if sim >= self.dedup:
                kept = same[i]
                kept.merged += 1
                kept.givers = sorted(set(kept.givers) | set(entry.givers))
                return kept, False
        self.state.archive.append(entry)
        if len(self.state.archive) > self.capacity:
            lone = [e for e in self.state.archive if e.merged == 1 and e is not entry]
            drop = lone[0] if lone else self.state.archive[0]
            self.state.archive.remove(drop)
        return entry, True

    def retrieve(self, niche: str, task_text: str, k: int) -> tuple[list[Insight], list[Insight]]:
        """(the `k` niche lessons of `niche` most similar to the task, the `k` meta-insights
        most similar to it), most similar first."""
        lessons = [e for e in self.state.archive if e.kind == "niche" and e.niche == niche]
        meta = [e for e in self.state.archive if e.kind == "meta"]
        return (
            self._nearest(task_text, lessons, [e.key or e.text for e in lessons], k),
            self._nearest(task_text, meta, [e.text for e in meta], k),
        )

    def _nearest(self, text: str, entries: list[Insight], keys: list[str], k: int) -> list[Insight]:
        if not entries or k <= 0:
            return []
        vectors = self.embedder.encode_many([text, *keys])
        scored = sorted(range(len(entries)), key=lambda i: (-cosine(vectors[0], vectors[i + 1]), i))
        return [entries[i] for i in scored[:k]]
