"""The asyncio HTTP client: ``AsyncClient``, the same methods as ``Client``, awaited.

The methods run the plans of ``_operations.Operations`` (the ones ``Client`` runs) over
asyncio streams: HTTP/1.1 with keep-alive and a small pool of connections per client, so a
request never blocks the event loop and cancelling the task that awaits one closes its
connection (the server sees the request end). Standard library only.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import ssl as _ssl
import time as _time
import urllib.parse
from typing import Any, AsyncIterator, Dict, List, Optional, Tuple

from . import _protocol as p
from ._operations import DEFAULT_URL, Operations as O
from .errors import EngramError

__all__ = ["AsyncClient"]

_RESENDABLE = frozenset({"GET", "HEAD"})  # reads: sending one twice changes nothing
_MAX_HEADERS = 200


class _Closed(Exception):
    """The server closed the connection before the answer's first byte."""


class _Malformed(Exception):
    """The answer is not HTTP/1.x as this client reads it."""


class _Conn:
    """One keep-alive connection."""

    __slots__ = ("reader", "writer", "idle_since")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float, expiry: float) -> bool:
        # The loop feeds the reader as bytes or EOF arrive, so a connection the server closed
        # while it sat idle shows as at_eof; bytes nobody asked for mean it is out of step.
        return (not self.writer.is_closing() and not self.reader.at_eof()
                and not getattr(self.reader, "_buffer", b"") and now - self.idle_since < expiry)

    def abort(self) -> None:
        """Drop the connection now (the server sees it close), also where its loop has closed."""
        try:
            self.writer.transport.abort()
        except RuntimeError:  # the loop is closed: end the TCP connection at least
            sock = self.writer.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


async def _read_head(reader: asyncio.StreamReader) -> Tuple[int, str, Dict[str, str]]:
    try:
        line = await reader.readline()
    except (ConnectionError, asyncio.IncompleteReadError) as e:
        raise _Closed(repr(e)) from None
    if not line:
        raise _Closed("the server closed the connection")
    if not line.endswith(b"\n"):
        raise asyncio.IncompleteReadError(line, None)
    parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise _Malformed(f"status line {line[:100]!r}")
    headers: Dict[str, str] = {}
    for _ in range(_MAX_HEADERS):
        h = await reader.readline()
        if h in (b"\r\n", b"\n"):
            return int(parts[1]), parts[0], headers
        if not h.endswith(b"\n"):
            raise asyncio.IncompleteReadError(h, None)
        name, sep, value = h.decode("latin-1").partition(":")
        if not sep:
            raise _Malformed(f"header line {h[:100]!r}")
        key, value = name.strip().lower(), value.strip()
        headers[key] = headers[key] + ", " + value if key in headers else value
    raise _Malformed(f"more than {_MAX_HEADERS} header lines")


async def _read_chunked(reader: asyncio.StreamReader, headers: Dict[str, str]) -> bytes:
    body = bytearray()
    while True:
        size_line = await reader.readline()
        if not size_line.endswith(b"\n"):
            raise asyncio.IncompleteReadError(size_line, None)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _Malformed(f"chunk size {size_line[:100]!r}") from None
        if size == 0:
            break
        body += await reader.readexactly(size)
        if await reader.readexactly(2) != b"\r\n":
            raise _Malformed("chunk without CRLF")
    while True:  # trailers, kept with the headers (the admin export's counts)
        t = await reader.readline()
        if t in (b"\r\n", b"\n"):
            return bytes(body)
        if not t.endswith(b"\n"):
            raise asyncio.IncompleteReadError(t, None)
        name, sep, value = t.decode("latin-1").partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()


async def _exchange(conn: _Conn, head: bytes, body: bytes, method: str) -> Tuple[p.Response, bool]:
    """Send one request on conn and read its whole answer; returns it and whether conn may be reused."""
    try:
        conn.writer.write(head + body)
        await conn.writer.drain()
    except ConnectionError as e:
        raise _Closed(repr(e)) from None
    status, version, headers = await _read_head(conn.reader)
    while 100 <= status < 200:  # interim answers (100 Continue): the real one follows
        status, version, headers = await _read_head(conn.reader)
    keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    if method == "HEAD" or status in (204, 304):
        data = b""
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        data = await _read_chunked(conn.reader, headers)
    elif "content-length" in headers:
        try:
            n = int(headers["content-length"])
        except ValueError:
            raise _Malformed(f"Content-Length {headers['content-length']!r}") from None
        data = await conn.reader.readexactly(n)
    else:  # the body runs to the end of the connection
        data = await conn.reader.read()
        keep = False
    return p.Response(status, headers, data), keep


class _Pool:
    """Keep-alive connections to one server, at most ``limit`` at a time, for one event loop.

    A request takes a slot, then an idle connection (or opens one); a connection goes back
    only after its answer was read whole, so one abandoned mid-answer (cancelled, timed out,
    broken) is closed instead. Connections and the slots belong to the loop that made them:
    used from another loop (a new ``asyncio.run``), the pool starts afresh.
    """

    def __init__(self, host: str, port: int, ssl: Optional[_ssl.SSLContext], limit: int, expiry: float) -> None:
        self.host, self.port, self.ssl = host, port, ssl
        self.limit, self.expiry = limit, expiry
        self.idle: List[_Conn] = []
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.slots: Optional[asyncio.Semaphore] = None

    def _bind(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop is not self.loop or self.slots is None:
            for c in self.idle:
                c.abort()
            self.idle = []
            self.loop = loop
            self.slots = asyncio.Semaphore(self.limit)
        return self.slots

    def _idle_conn(self) -> Optional[_Conn]:
        now = _time.monotonic()
        while self.idle:
            c = self.idle.pop()
            if c.usable(now, self.expiry):
                return c
            c.abort()
        return None

    async def _open(self) -> _Conn:
        reader, writer = await asyncio.open_connection(
            self.host, self.port, ssl=self.ssl, server_hostname=self.host if self.ssl else None, limit=1 << 20)
        return _Conn(reader, writer)

    async def send(self, head: bytes, body: bytes, method: str, timeout: float) -> p.Response:
        async with self._bind():
            # One deadline for connecting, sending and reading; on expiry wait_for cancels
            # the attempt, which closes its connection.
            return await asyncio.wait_for(self._attempt(head, body, method), timeout)

    async def _attempt(self, head: bytes, body: bytes, method: str) -> p.Response:
        conn = self._idle_conn()
        reused = conn is not None
        try:
            if conn is None:
                conn = await self._open()
            try:
                resp, keep = await _exchange(conn, head, body, method)
            except _Closed:
                # A reused connection the server closed as we sent on it: nothing was answered,
                # so a read goes once more, on a new connection.
                if not (reused and method in _RESENDABLE):
                    raise
                conn.abort()
                conn = await self._open()
                resp, keep = await _exchange(conn, head, body, method)
        except BaseException:  # CancelledError included: an answer half read must not be reused
            if conn is not None:
                conn.abort()
            raise
        if keep:
            conn.idle_since = _time.monotonic()
            self.idle.append(conn)
        else:
            conn.writer.close()
        return resp

    async def close(self) -> None:
        if self.loop is not asyncio.get_running_loop():
            self._bind()  # they belong to a loop that is gone
            return
        idle, self.idle = self.idle, []
        for c in idle:
            c.writer.close()
        for c in idle:
            try:
                await asyncio.wait_for(c.writer.wait_closed(), 1.0)
            except Exception:  # noqa: BLE001 - closing anyway
                pass


class AsyncClient:
    """A connection pool to ``memctl serve`` for asyncio: ``Client``'s methods, as coroutines.

    ``token``, ``timeout`` and ``ssl_context`` are ``Client``'s (https URLs are verified with the
    system's CAs unless ``ssl_context`` says otherwise). ``timeout`` bounds connecting, sending
    and reading the answer of each request, not the wait for a free connection. Up to
    ``max_connections`` requests are on the wire at once, on keep-alive connections that
    stay open ``keepalive`` seconds when idle; more wait their turn. Cancelling the task that
    awaits a request closes its connection and leaves the client usable. Use it as
    ``async with AsyncClient(...) as c:`` or call ``await c.aclose()``. An AsyncClient serves one
    event loop at a time (a later ``asyncio.run`` may use it again); it is not thread-safe.
    Proxies (``HTTP_PROXY``) are not used. A GET whose pooled connection the server had
    closed is sent again on a new one; a write is not (it fails with status 0), as the server
    may have acted on it: idle connections are dropped after ``keepalive`` seconds, before the
    server's own idle limit (two minutes), so this is rare.
    """

    def __init__(self, url: str = DEFAULT_URL, token: Optional[str] = None, timeout: float = 30.0, *,
                 ssl_context: Optional[_ssl.SSLContext] = None, max_connections: int = 10,
                 keepalive: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"AsyncClient needs an http:// or https:// URL, not {url!r}")
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        https = parts.scheme == "https"
        if https and ssl_context is None:
            ssl_context = _ssl.create_default_context()
        self.ssl_context = ssl_context if https else None
        host = parts.hostname
        port = parts.port or (443 if https else 80)
        self._host_header = (f"[{host}]" if ":" in host else host) + ("" if parts.port is None else f":{port}")
        self._prefix = urllib.parse.quote(parts.path.rstrip("/"), safe="/%:@!$&'()*+,;=-._~")
        self._pool = _Pool(host, port, self.ssl_context, max_connections, keepalive)

    def __repr__(self) -> str:
        return f"AsyncClient({self.url!r})"

    async def aclose(self) -> None:
        """Close the idle connections. The client stays usable (a later request connects
        anew); a request still in flight when it is called pools its connection as usual."""
        await self._pool.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # -- running plans ---------------------------------------------------------------------

    async def _run(self, plan: p.Plan[p.T]) -> p.T:
        return await p.arun(plan, self._perform)

    def _iterate(self, plan: p.Stream[p.T]) -> AsyncIterator[p.T]:
        return p.aiterate(plan, self._perform)

    async def _perform(self, step: p.Step) -> Any:
        if isinstance(step, p.Request):
            return await self._send(step)
        if isinstance(step, p.Sleep):
            await asyncio.sleep(step.seconds)
            return None
        r = step.fn(step.value)
        return await r if inspect.isawaitable(r) else r

    async def _send(self, req: p.Request) -> p.Response:
        timeout = req.timeout or self.timeout
        body = req.body or b""
        lines = [f"{req.method} {self._prefix}{req.target} HTTP/1.1", f"Host: {self._host_header}"]
        lines += [f"{k}: {v}" for k, v in req.headers(self.token)]
        if req.body is not None:
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            return await self._pool.send(head, body, req.method, timeout)
        except asyncio.TimeoutError:
            raise EngramError(0, f"no answer from {self.url} within {timeout}s", req.method, req.path) from None
        except _Closed as e:
            raise EngramError(0, f"{self.url} closed the connection without answering ({e})", req.method, req.path) from None
        except (_Malformed, ValueError) as e:
            raise EngramError(0, f"{self.url} sent a malformed answer: {e}", req.method, req.path) from None
        except asyncio.IncompleteReadError:
            raise EngramError(0, f"{self.url} closed the connection mid-answer", req.method, req.path) from None
        except OSError as e:  # refused, unreachable, reset, TLS failures (ssl.SSLError is an OSError)
            raise EngramError(0, f"cannot reach {self.url}: {e}", req.method, req.path) from None

    # -- the API (docs: _operations.Operations) -------------------------------------------------

    request = p.async_method(O.request)

    health = p.async_method(O.health)
    openapi = p.async_method(O.openapi)
    stats = p.async_method(O.stats)
    sessions = p.async_method(O.sessions)

    remember = p.async_method(O.remember)
    remember_messages = p.async_method(O.remember_messages)
    recall = p.async_method(O.recall)
    forget = p.async_method(O.forget)
    forget_answer = p.async_method(O.forget_answer)
    forgotten = p.async_method(O.forgotten)
    restore = p.async_method(O.restore)
    purge_forgotten = p.async_method(O.purge_forgotten)
    get = p.async_method(O.get)
    list = p.async_method(O.list)
    iter_memories = p.async_iter(O.iter_memories)
    update = p.async_method(O.update)
    delete = p.async_method(O.delete)
    history = p.async_method(O.history)
    revert = p.async_method(O.revert)
    export = p.async_method(O.export)
    cleanup = p.async_method(O.cleanup)

    context = p.async_method(O.context)
    add_turn = p.async_method(O.add_turn)
    distill = p.async_method(O.distill)
    clear_context = p.async_method(O.clear_context)

    tasks = p.async_method(O.tasks)
    start_task = p.async_method(O.start_task)
    task = p.async_method(O.task)
    update_step = p.async_method(O.update_step)
    finish_task = p.async_method(O.finish_task)
    delete_task = p.async_method(O.delete_task)

    jobs = p.async_method(O.jobs)
    job = p.async_method(O.job)
    cancel_job = p.async_method(O.cancel_job)
    admin = p.async_method(O.admin)
    wait_job = p.async_method(O.wait_job)
    archive = p.async_method(O.archive)
