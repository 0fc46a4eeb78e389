"""The encoder's GELU (`moscopt.embedding.gelu`): float32 GELU as accurate as the formula allows."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from moscopt.embedding.gelu import BLOCK, LIMIT, gelu


def exact(xs: np.ndarray) -> np.ndarray:
    """GELU in float64 from math.erf, rounded to float32."""
    values = [float(x) * 0.5 * (1 + math.erf(float(x) / math.sqrt(2))) for x in xs.reshape(-1)]
    return np.array(values, dtype=np.float32).reshape(xs.shape)


def check(xs: np.ndarray) -> None:
    got, want = gelu(xs), exact(xs)
    assert got.shape == xs.shape and got.dtype == np.float32
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    same_sign = np.sign(got) == np.sign(want)
    near = xs > -0.5  # where GELU is not a tiny difference of nearly equal numbers
    assert (ulps[near & same_sign] <= 2).all() and (same_sign | (want == 0) | ~near).all()
    error = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert (error <= 3e-7 * np.maximum(np.abs(xs.astype(np.float64)), 1.0)).all()


def test_gelu_on_a_grid_across_blocks() -> None:
    """A fine grid over and past the polynomial's range, several blocks long (the blocks' edges
    included), flat and as a matrix."""
    xs = np.linspace(-8, 8, 2 * BLOCK + 1001, dtype=np.float32)
    check(xs)
    check(xs[: 300 * 400].reshape(300, 400))


def test_gelu_at_the_edges() -> None:
    edges = [0.0, -0.0, LIMIT, -LIMIT, np.nextafter(np.float32(LIMIT), np.float32(9)), 1e30, -1e30]
    check(np.array(edges, dtype=np.float32))
    assert abs(gelu(np.array([-1e30], dtype=np.float32))[0]) <= 3e-7  # ~0, not -1e30 x rounding
    assert gelu(np.array([1e30], dtype=np.float32))[0] == np.float32(1e30)


_floats = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(st.lists(_floats, min_size=1, max_size=50))
def test_gelu_on_any_floats(values: list[float]) -> None:
    check(np.array(values, dtype=np.float32))
