"""Loaders for `SentenceEmbedder`'s process that load no model (tests of the process, the
store and the fallbacks run in a second, not the seconds torch takes to import)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from moscopt.embedding.base import EmbedderUnavailable

if TYPE_CHECKING:
    from moscopt.embedding.base import Vector


def hashing_loader(name: str, threads: int | None = None) -> Callable[[list[str]], list[Vector]]:
    """Encodes with the 32-dimensional hashing embedder, as if it were the model `name`."""
    from moscopt.embedding.hashing import HashingEmbedder

    return HashingEmbedder(32).encode_many


def missing_loader(name: str, threads: int | None = None) -> Callable[[list[str]], list[Vector]]:
    """As if sentence-transformers were not installed."""
    raise EmbedderUnavailable(f"no model here ({name})")


def slow_loader(name: str, threads: int | None = None) -> Callable[[list[str]], list[Vector]]:
    """Takes a minute to load, as a model on a very busy machine might."""
    import time

    time.sleep(60)
    return hashing_loader(name, threads)
