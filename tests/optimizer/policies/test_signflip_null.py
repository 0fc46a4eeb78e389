"""The sign-flip test's null distribution (`signflip._Null`, a list over values of one parity)
gives the weights, boundaries and tails of the dictionary it replaced, bit for bit."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.optimizer.policies.signflip import _Null


def flip(null: dict[int, float], magnitude: int) -> dict[int, float]:
    """The reference: one more difference of this magnitude with a fair random sign."""
    out: dict[int, float] = {}
    for v, w in null.items():
        half = w / 2.0
        out[v - magnitude] = out.get(v - magnitude, 0.0) + half
        out[v + magnitude] = out.get(v + magnitude, 0.0) + half
    return out


def boundary(null: dict[int, float], allowance: float) -> tuple[float, float]:
    tail, found = 0.0, math.inf
    for v in sorted((v for v in null if v > 0), reverse=True):
        if tail + null[v] > allowance * (1.0 + 1e-12):
            break
        tail += null[v]
        found = v
    return found, tail


def weights(null: _Null) -> dict[int, float]:
    return {null.value(i): w for i, w in enumerate(null.w) if w != 0.0}


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.lists(st.integers(1, 7), min_size=1, max_size=12),  # one look's magnitudes
            st.floats(0.001, 0.3),  # the look's allowance
            st.floats(-8.0, 8.0) | st.just(-math.inf) | st.just(math.inf),  # the stop bound
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_the_list_null_is_the_dictionary_null(
    steps: list[tuple[list[int], float, float]],
) -> None:
    reference: dict[int, float] = {0: 1.0}
    null = _Null()
    for magnitudes, allowance, low in steps:
        for m in magnitudes:
            reference = flip(reference, m)
            null.flip(m)
        assert weights(null) == reference  # the same floats, bit for bit
        found = boundary(reference, allowance)
        assert null.boundary(allowance) == found
        for value in range(-10, 11):
            want = sum(w for v, w in reference.items() if v >= value)
            assert math.isclose(null.tail(value), want, rel_tol=1e-12, abs_tol=1e-300)
        if reference:
            assert null.largest() == max(reference)
        high = found[0]
        reference = {v: w for v, w in reference.items() if low < v < high}
        null.keep_between(low, high)
        assert weights(null) == reference
