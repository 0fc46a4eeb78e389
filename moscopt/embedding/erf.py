"""The error function on float32 arrays in numpy, for BERT's exact GELU (`moscopt.embedding.bert`).

numpy has no `erf`, and importing scipy for it cost 0.4 s of the first vector's 0.55 s (and
scipy is a large install). Here erf(x) = x h(x^2) on |x| <= `LIMIT`, h a Chebyshev series of
degree `DEGREE` in x^2 computed once per process from `math.erf` (a few milliseconds), evaluated
in float64 and rounded to float32; beyond `LIMIT` erf is +-1 in float32. The series is within
1e-13 of `math.erf`, so the float32 results are the correctly rounded ones: the same bytes as
scipy's `erf` on every value tested (`tests/embedding/test_erf.py`). The arrays are worked in
blocks that stay in the CPU's cache: on a whole layer's activations at once the evaluation was
memory-bound and about 3 times slower than scipy, in blocks about 1.5 times.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

LIMIT = 4.0  # erf(4) = 1 - 1.5e-8 is 1.0 in float32
DEGREE = 24
BLOCK = 8192  # elements worked at a time (64 KiB per float64 buffer)


@cache
def coefficients() -> tuple[float, ...]:
    """The Chebyshev coefficients of h(t) = erf(sqrt t) / sqrt t, t = (u + 1) LIMIT^2 / 2 for
    u in [-1, 1]."""
    import numpy as np
    from numpy.polynomial import chebyshev

    def h(u: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        x = np.sqrt((u + 1) * (LIMIT * LIMIT / 2))
        return np.array([math.erf(v) / v if v > 0 else 2 / math.sqrt(math.pi) for v in x])

    series: Any = chebyshev.chebinterpolate(h, DEGREE)  # numpy's stubs type it as scalars
    return tuple(float(c) for c in series)


def erf(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """erf of each element of the float32 array `x`, as a float32 array of its shape."""
    import numpy as np

    c = coefficients()
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    out = np.empty(flat.shape, dtype=np.float32)
    n = min(BLOCK, flat.size)
    buffers = [np.empty(n) for _ in range(6)]
    for start in range(0, flat.size, BLOCK):
        m = min(BLOCK, flat.size - start)
        x64, u, twice_u, b1, b2, tmp = (b[:m] for b in buffers)
        np.clip(flat[start : start + m], -LIMIT, LIMIT, out=x64)
        np.multiply(x64, x64, out=u)
        u *= 2 / (LIMIT * LIMIT)
        u -= 1
        np.multiply(u, 2, out=twice_u)
        b1.fill(0.0)
        b2.fill(0.0)
        for k in range(len(c) - 1, 0, -1):  # Clenshaw: b_k = c_k + 2u b_{k+1} - b_{k+2}
            np.multiply(twice_u, b1, out=tmp)
            tmp -= b2
            tmp += c[k]
            b2, b1, tmp = b1, tmp, b2
        np.multiply(u, b1, out=tmp)
        tmp -= b2
        tmp += c[0]
        tmp *= x64
        out[start : start + m] = tmp
    return out.reshape(np.shape(x))
