"""HTTP/1.1 keep-alive connections to one origin over asyncio streams, with h11 for the protocol.

`HTTPTransport` posts every request of an OpenAI-compatible endpoint through one `Pool` per event
loop. The pool is small on purpose: its whole import is h11 (about 50 ms), where aiohttp's is
about 350 ms, a third of `moscopt eval`'s start-up (it builds two TLS contexts at import); and
its per-call work is one h11 parse and no more bookkeeping than a list of idle connections.

- Connections are opened on demand, at most `limit` at a time (a semaphore), and kept for the
  next request when both sides finished the exchange cleanly; one the server closed while idle
  is dropped before reuse.
- `https` gets a default TLS context (made on first use, not at import). A proxy from the
  environment (`moscopt.lm.transport.env_proxy`) carries `http` requests in absolute form and
  `https` ones through a `CONNECT` tunnel, with basic auth from the proxy URL; an `https://`
  proxy is dialled with TLS (and an https origin's TLS runs inside the proxy's).
- Every failure of the network or of the peer's HTTP (refused, reset, cut short, a malformed
  status line, a TLS error) raises `HTTPError`; a timeout raises `TimeoutError`.
- A response body is read up to `max_body` bytes: a larger one (announced by its
  Content-Length, or found while reading a chunked or endless body) raises `BodyTooLarge` and
  its connection is closed, so a hostile server cannot fill the memory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import math
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

import h11

Headers = Sequence[tuple[str, str]]
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
READ_SIZE = 65536
# a connection attempt pending this many times longer than the quickest one made to its origin,
# and at least CONNECT_FLOOR seconds, is made again (`Pool._dial`), at most CONNECT_RETRIES times
CONNECT_FACTOR = 4.0
CONNECT_FLOOR = 0.05
CONNECT_RETRIES = 8
REFUSED_RETRIES = 1  # of those, at most this many for a refused attempt
# what the network or the peer's HTTP raises: refused, reset, cut short, TLS, malformed
_FAILURES = (OSError, asyncio.IncompleteReadError, h11.ProtocolError)


class HTTPError(Exception):
    """The connection or the peer's HTTP failed (the request may or may not have arrived)."""


class BodyTooLarge(HTTPError):
    """The response body is longer than the pool's `max_body` bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body is larger than {limit} bytes")
        self.limit = limit


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    content: bytes


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port)

    @property
    def authority(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


_tls: ssl.SSLContext | None = None


def tls_context() -> ssl.SSLContext:
    """The process's default client TLS context (the system's CA store), made once."""
    global _tls
    if _tls is None:
        _tls = ssl.create_default_context()
    return _tls


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)

    @property
    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    async def exchange(
        self, request: h11.Request, body: bytes, max_body: int | None = None
    ) -> Response:
        conn = self.h11
        self.writer.write(conn.send(request) + conn.send(h11.Data(data=body)))
        self.writer.write(conn.send(h11.EndOfMessage()))
        await self.writer.drain()
        status, headers, parts, size = 0, {}, [], 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await self.reader.read(READ_SIZE))
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in event.headers}
                announced = headers.get("content-length", "")
                if max_body is not None and announced.isdigit() and int(announced) > max_body:
                    raise BodyTooLarge(max_body)
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if max_body is not None and size > max_body:
                    raise BodyTooLarge(max_body)
                parts.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return Response(status, headers, b"".join(parts))
            elif isinstance(event, h11.ConnectionClosed):
                raise HTTPError("the server closed the connection before answering")

    def reusable(self) -> bool:
        conn = self.h11
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            return self.usable
        return False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class Pool:
    """Keep-alive connections to `url`'s origin for the running loop; `proxy`: an http URL;
    `max_body`: the longest response body read (None: unbounded)."""

    def __init__(
        self, url: str, *, limit: int, proxy: str | None = None, max_body: int | None = None
    ) -> None:
        self.max_body = max_body
        self.origin = Origin.of(url)
        self.proxy = Origin.of(proxy) if proxy else None
        self._proxy_auth = _basic_auth(proxy) if proxy else None
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max(1, limit))
        self._fastest: float | None = None  # the quickest connection set-up here, seconds
        self._connected = asyncio.Event()  # set when the first connection is made

    async def post(self, url: str, headers: Headers, body: bytes, *, timeout: float) -> Response:
        """POST `body` to `url` (on this pool's origin); at most `timeout` seconds in all."""
        parts = urlsplit(url)
        target = url if self.proxy and self.origin.scheme == "http" else _path(parts)
        all_headers = [
            ("Host", self.origin.authority),
            ("Content-Length", str(len(body))),
            *headers,
        ]
        if self._proxy_auth and self.origin.scheme == "http":
            all_headers.append(("Proxy-Authorization", self._proxy_auth))
        request = h11.Request(method="POST", target=target, headers=all_headers)
        async with asyncio.timeout(timeout), self._slots:
            connection = await self._connection()
            try:
                response = await connection.exchange(request, body, self.max_body)
            except _FAILURES as e:
                connection.close()
                raise HTTPError(f"{type(e).__name__}: {e}") from None
            except BaseException:
                connection.close()  # cancelled or timed out mid-exchange: not reusable
                raise
            if connection.reusable():
                self._idle.append(connection)
            else:
                connection.close()
            return response

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.usable:
                return connection
            connection.close()
        try:
            return await self._open()
        except _FAILURES as e:
            raise HTTPError(f"cannot connect to {self.origin.authority}: {e}") from None

    async def _open(self) -> _Connection:
        origin, proxy = self.origin, self.proxy
        tls = tls_context() if origin.scheme == "https" else None
        if proxy is None:
            reader, writer = await self._dial(
                origin.host, origin.port, ssl=tls, server_hostname=origin.host if tls else None
            )
            return _Connection(reader, writer)
        reader, writer = await self._dial_proxy(proxy)
        if tls is not None:
            await self._tunnel(reader, writer)
            await writer.start_tls(tls, server_hostname=origin.host)
        return _Connection(reader, writer)

    async def _dial_proxy(self, proxy: Origin) -> Streams:
        """A connection to the proxy: TLS to an `https://` proxy (an https origin's own TLS
        then runs inside it), plain TCP to an `http://` one."""
        if proxy.scheme == "https":
            return await self._dial(
                proxy.host, proxy.port, ssl=tls_context(), server_hostname=proxy.host
            )
        return await self._dial(proxy.host, proxy.port)

    async def _dial(self, host: str, port: int, **tls: Any) -> Streams:
        """`asyncio.open_connection`, with a connection attempt that is slow or refused while
        others to this origin succeed given up and made again at once (`CONNECT_RETRIES` times
        at most; the last attempt waits as long as the request's timeout lets it).

        A server with a small listen backlog (Python's `http.server`: 5) cannot queue a burst
        of connections: the kernel drops the attempts beyond its backlog (or, on some systems,
        refuses them: such an attempt is made again `REFUSED_RETRIES` times, so that a server
        that went down is still found down at once), and TCP sends a dropped attempt again only
        after a second. An attempt
        still pending `CONNECT_FACTOR` times longer than the quickest connection made here
        (and at least `CONNECT_FLOOR`) was dropped; a new one is queued as soon as the server
        has taken the earlier ones (`scripts/bench_backlog.py`)."""
        loop = asyncio.get_running_loop()
        refused = 0
        for attempt in range(CONNECT_RETRIES + 1):
            last = attempt == CONNECT_RETRIES
            start = loop.time()
            task = asyncio.ensure_future(asyncio.open_connection(host, port, **tls))
            try:
                if not last and await self._late(task, start):
                    task.cancel()
                    await asyncio.wait({task})
                    if not task.cancelled() and task.exception() is None:
                        task.result()[1].close()  # made just as it was given up
                    continue
                streams = await task
            except ConnectionRefusedError:
                # once, where the server has answered before: a server that went down is
                # refused again at once, and its requests fail (and are retried) as before
                refused += 1
                if last or self._fastest is None or refused > REFUSED_RETRIES:
                    raise
                await asyncio.sleep(max(CONNECT_FLOOR, CONNECT_FACTOR * self._fastest))
                continue
            finally:
                task.cancel()  # cancelled ourselves: the attempt goes too
            self._fastest = min(self._fastest or math.inf, loop.time() - start)
            self._connected.set()
            return streams
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _late(self, task: asyncio.Future[Streams], start: float) -> bool:
        """Whether the connection attempt `task`, begun at `start`, is still pending past the
        deadline the quickest connection here sets (waiting for the first one if none is made
        yet: an attempt that completes first is never late)."""
        if self._fastest is None:
            first: asyncio.Future[Any] = asyncio.ensure_future(self._connected.wait())
            either: list[asyncio.Future[Any]] = [task, first]
            try:
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            finally:
                first.cancel()
            if task.done() or self._fastest is None:
                return False
        deadline = start + max(CONNECT_FLOOR, CONNECT_FACTOR * self._fastest)
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining > 0:
            await asyncio.wait({task}, timeout=remaining)
        return not task.done()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """CONNECT through the proxy to the origin (the bytes after it are the origin's)."""
        target = f"{self.origin.host}:{self.origin.port}"
        headers = [("Host", target)]
        if self._proxy_auth:
            headers.append(("Proxy-Authorization", self._proxy_auth))
        conn = h11.Connection(h11.CLIENT)
        writer.write(conn.send(h11.Request(method="CONNECT", target=target, headers=headers)))
        await writer.drain()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(READ_SIZE))
            elif isinstance(event, h11.Response):
                if not 200 <= event.status_code < 300:
                    raise HTTPError(f"the proxy refused the tunnel: HTTP {event.status_code}")
                return
            elif isinstance(event, h11.ConnectionClosed):
                raise HTTPError("the proxy closed the connection")

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _path(parts: SplitResult) -> str:
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


def _basic_auth(proxy: str) -> str | None:
    parts = urlsplit(proxy)
    if parts.username is None:
        return None
    user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return "Basic " + base64.b64encode(user.encode()).decode()
