"""The bound on a reply litellm reads: `llm.max_response_bytes` after decompression.

litellm reads each provider's body itself (through httpx, under the provider's SDK). Where
moscopt's direct transport counts the bytes it reads, this module bounds what litellm reads:
`bounded(limit)` (a context variable, so only the calls made inside it, in this task) makes every
httpx response body read there

- refused before any byte is read when it is compressed (`Content-Encoding` other than
  `identity`: a few kilobytes of gzip or brotli inflate to gigabytes in one decoder call), or
  announces a `Content-Length` past the bound;
- refused as soon as the bytes read pass the bound (a chunked or endless body).

Every request litellm sends asks for an uncompressed answer (`IDENTITY`, in `litellm_fields`),
so a server that honours `Accept-Encoding` is never refused. So no reply, compressed or not,
holds more than the bound plus one network read (64 KiB) in memory.

`install()` wraps `httpx.Response.iter_bytes`/`aiter_bytes` once per process (they are what
`read`/`aread` use); outside `bounded` they behave exactly as before.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterator
from typing import Any

from moscopt.lm.errors import cause_of
from moscopt.lm.transport import too_large

IDENTITY = {"Accept-Encoding": "identity"}
_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("moscopt_body", default=None)


class BodyRefused(Exception):
    """A reply past the bound (or compressed) under `bounded`; the message names the key."""


@contextlib.contextmanager
def bounded(limit: int | None) -> Iterator[None]:
    """Bound every response body httpx reads in this context to `limit` bytes (None: no bound)."""
    if limit is not None:
        install()
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def refused(e: BaseException) -> BodyRefused | None:
    """The `BodyRefused` under `e` (litellm and the SDKs wrap what httpx raised), if any."""
    return cause_of(e, BodyRefused)


def install() -> None:
    import httpx

    if getattr(httpx.Response, "_moscopt_bounded", False):
        return
    plain_iter, plain_aiter = httpx.Response.iter_bytes, httpx.Response.aiter_bytes

    def iter_bytes(self: httpx.Response, chunk_size: int | None = None) -> Iterator[bytes]:
        limit = _LIMIT.get()
        if limit is None or hasattr(self, "_content"):
            yield from plain_iter(self, chunk_size)
            return
        _check_headers(self, limit)
        seen = 0
        for chunk in plain_iter(self, chunk_size):
            seen += len(chunk)
            if seen > limit:
                raise BodyRefused(too_large(limit))
            yield chunk

    async def aiter_bytes(
        self: httpx.Response, chunk_size: int | None = None
    ) -> AsyncIterator[bytes]:
        limit = _LIMIT.get()
        if limit is None or hasattr(self, "_content"):
            async for chunk in plain_aiter(self, chunk_size):
                yield chunk
            return
        _check_headers(self, limit)
        seen = 0
        async for chunk in plain_aiter(self, chunk_size):
            seen += len(chunk)
            if seen > limit:
                raise BodyRefused(too_large(limit))
            yield chunk

    patched: Any = httpx.Response
    patched.iter_bytes, patched.aiter_bytes = iter_bytes, aiter_bytes
    patched._moscopt_bounded = True


def _check_headers(response: Any, limit: int) -> None:
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise BodyRefused(
            f"the response is compressed ({encoding[:40]}) although an uncompressed one was "
            f"asked for: refused unread, as its size after decompression cannot be bounded by "
            f"llm.max_response_bytes"
        )
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise BodyRefused(too_large(limit))
