"""The fixed front end of the router's heads: center the task embedding on the training tasks'
mean, keep its top principal directions (over the training tasks), scale to unit norm.

Fitted once, when training starts, and stored with the heads (a resumed run and an export reuse
it; it never changes). Why: a family of tasks differs from the others in a few directions of the
embedding; the rest is each task's own wording and numbers. A head trained on a few tasks of a
family generalizes to the family's other tasks only in the directions they share, so the heads
read the top `dim` directions (12 by default, chosen on `scripts/bench_router.py`'s world:
12 and 16 routed held-out tasks best, 64 clearly worse; the script's docstring has the runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from moscopt.routing.arrays import decode_array, encode_array

if TYPE_CHECKING:
    import numpy.typing as npt

    Array = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Projection:
    """x -> unit(basis @ (x - center)); `basis` is dim x embedding_dim."""

    center: Array
    basis: Array

    @property
    def embedding_dim(self) -> int:
        return int(self.center.shape[0])

    @property
    def dim(self) -> int:
        return int(self.basis.shape[0])

    def apply(self, x: Array) -> Array:
        x = np.asarray(x, np.float32)
        if x.shape != self.center.shape:
            raise ValueError(
                f"the router reads {self.embedding_dim}-dimensional embeddings, got {x.shape[0]}"
            )
        z = self.basis @ (x - self.center)
        norm = float(np.linalg.norm(z))
        out: Array = (z / np.float32(norm) if norm > 0 else z).astype(np.float32)
        return out

    @classmethod
    def identity(cls, dim: int) -> Projection:
        return cls(np.zeros(dim, np.float32), np.eye(dim, dtype=np.float32))

    @classmethod
    def fit(cls, vectors: Sequence[Array], dim: int) -> Projection:
        """The top `dim` principal directions of `vectors` (fewer if they span fewer; the
        identity for fewer than two vectors). Each direction's sign is fixed (its largest
        entry is positive), so the same vectors always give the same projection."""
        if len(vectors) < 2:
            d = int(np.asarray(vectors[0]).shape[0]) if vectors else dim
            return cls.identity(d)
        m = np.stack([np.asarray(v, np.float64) for v in vectors])
        center = m.mean(axis=0)
        _, s, vt = np.linalg.svd(m - center, full_matrices=False)
        rank = int((s > s[0] * 1e-6).sum()) if s.size and s[0] > 0 else 0
        basis = vt[: max(1, min(dim, rank))]
        signs = np.sign(basis[np.arange(len(basis)), np.abs(basis).argmax(axis=1)])
        basis = basis * np.where(signs == 0, 1.0, signs)[:, None]
        return cls(center.astype(np.float32), basis.astype(np.float32))

    def to_json(self) -> dict[str, Any]:
        return {"center": encode_array(self.center), "basis": encode_array(self.basis)}

    @classmethod
    def from_json(cls, data: Any) -> Projection:
        center = decode_array(data["center"]).astype(np.float32)
        basis = decode_array(data["basis"]).astype(np.float32)
        if center.ndim != 1 or basis.ndim != 2 or basis.shape[1] != center.shape[0]:
            raise ValueError("projection: basis must be dim x len(center)")
        return cls(center, basis)
