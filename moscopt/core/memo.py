"""A bounded memo of what is computed from an immutable object, keyed by the object itself.

Pools and skills are frozen, but they hold dicts (metadata), so they cannot be hashed, and
equality would compare every body anyway. A candidate pool shares all but one of its skills with
the incumbent (the same objects), so keying by identity lets a pool's digest reuse the canonical
JSON of every unchanged skill: a step's digests cost what changed, not the pool's size. An entry
holds its object, so the object's id is never reused while the entry lives.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """`memo(obj)`: `make(obj)` for the last `size` objects seen, by identity (thread-safe)."""

    def __init__(self, make: Callable[[K], V], size: int) -> None:
        self._make = make
        self._size = size
        self._items: OrderedDict[int, tuple[K, V]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, obj: K) -> V:
        key = id(obj)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] is obj:
                self._items.move_to_end(key)
                return hit[1]
        value = self._make(obj)
        with self._lock:
            self._items[key] = (obj, value)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value
