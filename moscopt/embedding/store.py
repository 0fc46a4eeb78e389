"""The vector store: every vector a model computed, on disk, keyed by (model, text).

It lives in the project's cache folder (`<project>/.moscopt/cache/embeddings/`, beside the
response cache, wherever `llm.cache_dir` puts that), shared by the project's runs, so a rerun
that asks the same questions and gets the same answers from the response cache finds every
vector too and never starts the model. Values are the vector's raw float32 bytes (no pickle);
the key is `FORMAT`, the model's name and the SHA-256 of the text. An entry that cannot be read
or is not a vector of the model's length is a miss (overwritten by the next computation), never
a crash. Safe across threads and processes (diskcache's SQLite index).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.embedding.base import text_key

if TYPE_CHECKING:
    from moscopt.embedding.base import Vector

log = logging.getLogger("moscopt.embedding")
FOLDER = "embeddings"  # under the project's cache folder
# how vectors are computed (packed, unit-norm float32): bump when that changes. v2: the numpy
# encoder's GELU is one float32 polynomial (vectors within float rounding of v1's)
FORMAT = "v2"


class VectorStore:
    """Vectors on disk under `directory`; opened on first use."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._cache: Any = None
        self._lock = threading.Lock()
        self._broken = False

    def _open(self) -> Any:
        with self._lock:
            if self._cache is None and not self._broken:
                try:
                    import diskcache

                    self._cache = diskcache.Cache(str(self.directory))
                except Exception as e:  # an unwritable folder: compute, do not store
                    log.warning("moscopt: vector store %s unusable: %s", self.directory, e)
                    self._broken = True
            return self._cache

    @staticmethod
    def key(model: str, text: str) -> str:
        return f"{FORMAT}:{model}:{text_key(text)}"

    def get_many(self, model: str, texts: Sequence[str]) -> list[Vector | None]:
        """Each text's stored vector, None where there is none (or it is damaged)."""
        import numpy as np

        cache = self._open()
        out: list[Vector | None] = []
        width: int | None = None
        for text in texts:
            raw = None if cache is None else _read(cache, self.key(model, text))
            found = None
            if isinstance(raw, bytes) and raw and len(raw) % 4 == 0:
                found = np.frombuffer(raw, dtype=np.float32).copy()
                width = width or found.shape[0]
                if found.shape[0] != width or not np.all(np.isfinite(found)):
                    found = None
            out.append(found)
        return out

    def put_many(self, model: str, texts: Sequence[str], vectors: Sequence[Vector]) -> None:
        cache = self._open()
        if cache is None:
            return
        try:
            for text, vector in zip(texts, vectors, strict=True):
                cache.set(self.key(model, text), vector.astype("float32").tobytes())
        except Exception as e:  # a full disk: the run goes on, the next one computes again
            log.warning("moscopt: cannot store vectors in %s: %s", self.directory, e)

    def close(self) -> None:
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None


def _read(cache: Any, key: str) -> Any:
    try:
        return cache.get(key)
    except Exception:  # a damaged entry is a miss
        return None
