"""The wire format between the sandbox's test judge and the solution's process.

Messages are ``marshal``-ed, length-prefixed. Values cross as plain data only: None, bool, int,
float, complex, str, bytes, and lists, tuples, sets, frozensets and dicts of these, tagged, so
that the judge's `decode` never builds an object of a type the solution chose; anything else is
an opaque handle ``("H", id)``. Standard library only (loaded inside the sandbox).
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_CONTAINERS: dict[type, str] = {list: "L", tuple: "T", set: "S", frozenset: "F"}
_BUILD: dict[str, Any] = {"L": list, "T": tuple, "S": set, "F": frozenset}
_MAX_MESSAGE = 64 << 20
_MAX_DEPTH = 100


class RemoteError(Exception):
    """The solution raised an exception that the judge cannot re-raise as a builtin one."""


class ProtocolError(Exception):
    """The solution's process sent something that is not a well-formed message."""


def send(fd: int, message: Any) -> None:
    data = marshal.dumps(message)
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int) -> Any:
    header = _read_exact(fd, 8)
    size = int.from_bytes(header, "little")
    if size > _MAX_MESSAGE:
        raise ProtocolError("message too large")
    return marshal.loads(_read_exact(fd, size))


def _read_exact(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise RemoteError("the solution's process ended")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def decode(value: object, handle: Callable[[int], object], depth: int = 0) -> object:
    """Plain data from its wire form; handles become ``handle(id)``. Strict: anything else is a
    `ProtocolError` (the judge never builds an object of a type the solution chose)."""
    if type(value) in _SCALARS:
        return value
    if depth > _MAX_DEPTH or type(value) is not tuple or len(value) != 2:
        raise ProtocolError("malformed value")
    tag, body = value
    if tag == "H" and type(body) is int:
        return handle(body)
    if type(body) is not list:
        raise ProtocolError("malformed value")
    if tag in _BUILD:
        return _BUILD[tag](decode(item, handle, depth + 1) for item in body)
    if tag == "D":
        pairs = [item for item in body if type(item) is list and len(item) == 2]
        if len(pairs) != len(body):
            raise ProtocolError("malformed dict")
        return {decode(k, handle, depth + 1): decode(v, handle, depth + 1) for k, v in pairs}
    raise ProtocolError("malformed value")


def encode(value: object, handle: Callable[[object], int], depth: int = 0) -> object:
    """The wire form of ``value``; what is not plain data becomes ``("H", handle(value))``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth > _MAX_DEPTH:
        raise ValueError("value nested too deeply")
    # Subclasses (Counter, OrderedDict, namedtuples, ...) cross as their plain base type: the
    # judge compares what they contain, never with methods the solution wrote.
    if isinstance(value, dict):
        pairs = dict.items(value)
        return (
            "D",
            [[encode(k, handle, depth + 1), encode(v, handle, depth + 1)] for k, v in pairs],
        )
    for container, tag in _CONTAINERS.items():
        if isinstance(value, container):
            items: Any = container.__iter__(value)  # type: ignore[attr-defined]
            return (tag, [encode(v, handle, depth + 1) for v in items])
    base: Any
    for base in (bool, int, float, complex, str, bytes):  # e.g. an IntEnum member
        if isinstance(value, base):
            return base(value)
    if kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        item = value.item()  # type: ignore[attr-defined]
        if type(item) in _SCALARS:
            return item
    return ("H", handle(value))
