"""The numpy erf behind the encoder's GELU (`moscopt.embedding.erf`): correctly rounded float32."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.embedding.erf import erf


def rounded(xs: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(x)) for x in xs.reshape(-1)], dtype=np.float32).reshape(
        xs.shape
    )


def test_erf_is_math_erf_rounded_to_float32_on_a_grid() -> None:
    """Every value of a fine grid across the range where erf is not +-1 in float32, the blocks'
    edges included (the grid is several blocks long)."""
    xs = np.linspace(-5, 5, 60_001, dtype=np.float32)
    assert np.array_equal(erf(xs), rounded(xs))
    two_d = xs[:60_000].reshape(300, 200)
    assert np.array_equal(erf(two_d), rounded(two_d))


@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=50))
def test_erf_is_math_erf_rounded_to_float32(values: list[float]) -> None:
    xs = np.array(values, dtype=np.float32)
    assert np.array_equal(erf(xs), rounded(xs))


def test_erf_gives_scipys_bytes() -> None:
    """The encoder's vectors keep the bytes they had when the GELU called scipy."""
    special = pytest.importorskip("scipy.special")
    xs = (np.random.default_rng(0).standard_normal((256, 1536)) * 2).astype(np.float32)
    assert np.array_equal(erf(xs), special.erf(xs))
