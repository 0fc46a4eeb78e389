"""A task's niche: the benchmark's own label when it has one, else a k-means cluster.

The label is a meta key named by the spec's field map (`fields.niche`: MATH's subject, BBH's
task, GPQA's domain, AIME's year) or, for the generated offline benchmark, its `family`.
Without a label, the tasks' embeddings are clustered once (k-means++, seeded, on the train and
validation tasks) and every later task joins its nearest centroid; both the assignments and the
centroids are kept in the run state, so a resumed run assigns exactly as before.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.embedding import Embedder
from moscopt.extensions.niches.records import NicheState

if TYPE_CHECKING:
    from moscopt.benchmarks import BenchmarkSpec, Task

UNKNOWN = "unknown"
KMEANS_ITERATIONS = 50


def niche_key(spec: BenchmarkSpec) -> str | None:
    """The meta key holding the niche of a task of this benchmark, None if it has none."""
    for fields in spec.field_maps():
        if fields.niche is not None:
            return fields.niche
    return "family" if spec.source.generator is not None else None


class NicheAssigner:
    """Assigns niches by `key` (a meta key) or, with `key` None, by clustering into `k`."""

    def __init__(
        self, key: str | None, state: NicheState, embedder: Embedder, *, k: int, seed: int
    ) -> None:
        self.key, self.state, self.embedder, self.k, self.seed = key, state, embedder, k, seed
        state.source = f"field:{key}" if key is not None else f"kmeans:{k}"

    def fit(self, tasks: Sequence[Task]) -> None:
        """Cluster `tasks` once (nothing to do with a label, or when already fitted)."""
        if self.key is not None or self.state.centroids or not tasks:
            return
        vectors = [v.tolist() for v in self.embedder.encode_many([t.prompt for t in tasks])]
        centroids, labels = kmeans(vectors, self.k, random.Random(f"{self.seed}:niches"))
        self.state.centroids = [[round(x, 6) for x in c] for c in centroids]
        for task, label in zip(tasks, labels, strict=True):
            self.state.assigned[task.id] = f"cluster-{label}"

    def niche(self, task: Task) -> str:
        if self.key is not None:
            value = task.meta.get(self.key)
            return UNKNOWN if value is None or str(value) == "" else str(value)
        found = self.state.assigned.get(task.id)
        if found is not None:
            return found
        if not self.state.centroids:
            return UNKNOWN
        label = nearest(self.embedder.encode(task.prompt).tolist(), self.state.centroids)
        self.state.assigned[task.id] = f"cluster-{label}"
        return self.state.assigned[task.id]


def kmeans(
    vectors: Sequence[Sequence[float]], k: int, rng: random.Random
) -> tuple[list[list[float]], list[int]]:
    """Lloyd's k-means with k-means++ seeding: (centroids, label of each vector).

    Fewer than `k` distinct vectors give fewer clusters; an emptied cluster keeps its centroid.
    Deterministic for a given `rng` state.
    """
    points = [list(v) for v in vectors]
    distinct = {tuple(p) for p in points}
    k = max(1, min(k, len(distinct)))
    centroids = [points[rng.randrange(len(points))]]
    while len(centroids) < k:
        d2 = [min(_dist2(p, c) for c in centroids) for p in points]
        total = sum(d2)
        if total == 0:
            break
        r, acc = rng.random() * total, 0.0
        for p, d in zip(points, d2, strict=True):
            acc += d
            if acc >= r and d > 0:
                centroids.append(p)
                break
    labels = [nearest(p, centroids) for p in points]
    for _ in range(KMEANS_ITERATIONS):
        for j in range(len(centroids)):
            members = [p for p, label in zip(points, labels, strict=True) if label == j]
            if members:
                centroids[j] = [sum(xs) / len(members) for xs in zip(*members, strict=True)]
        new = [nearest(p, centroids) for p in points]
        if new == labels:
            break
        labels = new
    return centroids, labels


def nearest(point: Sequence[float], centroids: Sequence[Sequence[float]]) -> int:
    """Index of the centroid closest to `point` (the first on ties)."""
    return min(range(len(centroids)), key=lambda j: (_dist2(point, centroids[j]), j))


def _dist2(a: Sequence[float], b: Sequence[float]) -> float:
    return sum((x - y) * (x - y) for x, y in zip(a, b, strict=True))
