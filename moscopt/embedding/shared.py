"""One embedder per model per process, shared by everything that embeds.

The familiarity router, the niches, the execution memory and evolution's diversity check all
ask `make_embedder(name)`; for a model name they get the same `SentenceEmbedder`, so the model
loads once per process (in its own child process) whoever asks first. A run calls `preload`
when it starts: the model's process starts loading at once, beside the LLM calls, instead of
when the first vector is needed (the diversity check at the end of the first epoch), and its
vectors are kept in the project's vector store (`moscopt.embedding.store`).

The registry is made on first use, never at import time, and holds no more than one entry per
model name the process has used.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from moscopt.embedding.base import DIFFLIB, HASHING_DIM, hashing_dim, is_model

if TYPE_CHECKING:
    from moscopt.embedding.base import Embedder
    from moscopt.embedding.worker import SentenceEmbedder

_lock = threading.Lock()
_models: dict[str, SentenceEmbedder] = {}


def make_embedder(name: str, *, numbers: bool = False) -> Embedder:
    """`hashing` (256 dimensions) or `hashing-<dim>`: a hashing embedder, each number a word of
    its own with `numbers`, else all numbers one token (`difflib`, the diversity check's text
    ratio, hashes too for a component that needs vectors); any other name: the process's shared
    embedder of that sentence-transformers model (a name or a local path)."""
    from moscopt.embedding.hashing import HashingEmbedder

    dim = HASHING_DIM if name == DIFFLIB else hashing_dim(name)
    if dim is not None:
        return HashingEmbedder(dim, numbers=numbers)
    return sentence_embedder(name)


def sentence_embedder(name: str) -> SentenceEmbedder:
    """The process's one `SentenceEmbedder` of model `name` (nothing loads until it is used)."""
    from moscopt.embedding.worker import SentenceEmbedder

    with _lock:
        found = _models.get(name)
        if found is None:
            found = _models[name] = SentenceEmbedder(name)
        return found


def running_embedder(name: str) -> SentenceEmbedder | None:
    """The process's embedder of model `name` if its process was started, else None (nothing
    is started)."""
    with _lock:
        found = _models.get(name)
    return found if found is not None and found.started else None


def installed() -> bool:
    """Whether a model can be run at all (checked without importing anything): the numpy
    encoder's libraries (the `embeddings` extra) or sentence-transformers. Whether a given
    model loads is known when it does (`EmbedderUnavailable`)."""
    light = ("numpy", "safetensors", "tokenizers")
    if all(importlib.util.find_spec(m) is not None for m in light):
        return True
    return importlib.util.find_spec("sentence_transformers") is not None


def preload(names: Iterable[str], store_dir: Path | None = None) -> list[str]:
    """Start loading each model of `names` in the background (hashing and difflib need no
    model; without the `embeddings` extra nothing starts: its users fall back on their own),
    keeping its vectors in the store at `store_dir`. Returns the models started."""
    from moscopt.embedding.store import FOLDER, VectorStore

    started: list[str] = []
    for name in dict.fromkeys(n for n in names if is_model(n)):
        if not installed():
            break
        embedder = sentence_embedder(name)
        if store_dir is not None and (
            embedder.store is None or embedder.store.directory != store_dir / FOLDER
        ):
            embedder.store = VectorStore(store_dir / FOLDER)  # this run's project's
        embedder.start()
        started.append(name)
    return started


def close_all() -> None:
    """End every model process this one started (tests; a process exiting ends them anyway)."""
    with _lock:
        models = list(_models.values())
        _models.clear()
    for model in models:
        model.close()
        if model.store is not None:
            model.store.close()
