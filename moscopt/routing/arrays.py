"""Numpy arrays as plain JSON data: dtype, shape and the little-endian bytes in base64.

Exact (a float32 array round-trips bit for bit, unlike decimal text of a float32) and about a
third of the size of decimal text; no pickle.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DTYPES = {"float32": "<f4", "float64": "<f8"}


class ArrayFormatError(ValueError):
    """Not an array document, or its bytes do not match its shape."""


def encode_array(array: npt.NDArray[Any]) -> dict[str, Any]:
    import numpy as np

    name = str(array.dtype)
    if name not in DTYPES:
        raise ValueError(f"unsupported dtype {name}")
    data = np.ascontiguousarray(array, dtype=DTYPES[name]).tobytes()
    return {"dtype": name, "shape": list(array.shape), "base64": base64.b64encode(data).decode()}


def decode_array(doc: Any) -> npt.NDArray[np.floating[Any]]:
    import numpy as np

    if not isinstance(doc, dict) or set(doc) != {"dtype", "shape", "base64"}:
        raise ArrayFormatError("an array is an object with exactly dtype, shape and base64")
    dtype = DTYPES.get(doc["dtype"])
    shape = doc["shape"]
    if dtype is None:
        raise ArrayFormatError(f"unsupported dtype {doc['dtype']!r}")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ArrayFormatError("shape must be a list of non-negative integers")
    try:
        raw = base64.b64decode(doc["base64"], validate=True)
    except (ValueError, TypeError) as e:
        raise ArrayFormatError(f"bad base64: {e}") from None
    count = 1
    for n in shape:
        count *= n
    if len(raw) != count * np.dtype(dtype).itemsize:
        raise ArrayFormatError(f"{len(raw)} bytes do not hold a {doc['dtype']} array {shape}")
    out = np.frombuffer(raw, dtype=dtype).reshape(shape)
    return out.astype(doc["dtype"], copy=True)
