"""The asyncio HTTP client for reactord: `AsyncClient`, the `Client` API with `await`.

Standard library only: a small HTTP/1.1 client on an `asyncio.Protocol` (asyncio has none of its
own), enough for reactord's answers (`Content-Length`, and `chunked` or read-to-close for whatever
proxy stands in front). Connections are kept alive and pooled like `Client`'s, with the same rule
for sending a request again on a new connection after a kept-alive one failed (see
`reactor_client.client`), and with a bound: at most `max_connections` are open at once, further
calls wait for one to be free, so that gathering ten thousand fires does not open ten thousand
sockets.

The pool belongs to one event loop: used from another one (a second `asyncio.run`), it drops the
connections of the first and starts over.
"""

from __future__ import annotations

import asyncio
import http.client
import ssl as ssl_module  # `ssl` is the name of the option, as in asyncio and websockets
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .client import DEFAULT_POOL_SIZE, ClientBase, Response, _etag_version, is_resendable, socket_is_dropped
from .errors import ReactorConnectionError

__all__ = ["AsyncClient"]

MAX_HEAD_BYTES = 64 * 1024  # an answer's status line and headers
MAX_CHUNK_LINE_BYTES = 4 * 1024


class AsyncClient(ClientBase):
    """A reactord server at `url`, for asyncio code: the methods of `Client`, as coroutines.

    >>> async with AsyncClient("http://127.0.0.1:7070") as client:
    ...     version = await client.fire({"type": "increment", "path": "/counter"})

    `timeout` bounds connecting, and then the whole exchange (sending the request and reading its
    answer). At most `max_connections` connections are open at once and all are kept alive; a call
    that finds them all busy waits for one. Use it from one event loop, and `await client.close()`
    (or `async with`) before that loop ends. `ssl` and `subscribe()` work as on `Client`.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:7070",
        token: Optional[str] = None,
        timeout: float = 10,
        max_connections: int = DEFAULT_POOL_SIZE,
        ssl: Optional[ssl_module.SSLContext] = None,
    ):
        super().__init__(url, token, timeout, ssl)
        if not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be a positive integer, not {max_connections!r}")
        self.max_connections = max_connections
        host = f"[{self._host}]" if ":" in self._host else self._host
        default_port = 443 if self._https else 80
        self._host_header = host if self._port == default_port else f"{host}:{self._port}"
        self._pool = _AsyncPool(self._open_connection, max_connections)

    # -----------------------------------------------------------------------------------------
    # The API

    async def fire(self, event: Mapping[str, Any], idempotency_key: Optional[str] = None) -> int:
        """Fires one event; returns the version it produced once it is applied (see `Client.fire`)."""
        body, headers = self._events_request(event, idempotency_key)
        return self._fire_version((await self.request("POST", "/events", body=body, headers=headers)).json())

    async def fire_batch(
        self,
        events: Iterable[Mapping[str, Any]],
        mode: str = "strict",
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Fires an array of events (see `Client.fire_batch`)."""
        query = self._batch_query(mode)
        body, headers = self._events_request(list(events), idempotency_key)
        answer = await self.request("POST", "/events", query=query, body=body, headers=headers)
        return self._batch_answer(answer.json())

    async def state(self, path: Optional[str] = None) -> Any:
        """The state, or the sub-tree at the JSON Pointer `path` (404 `path-not-found` if absent)."""
        return (await self.state_with_version(path))[1]

    async def state_with_version(self, path: Optional[str] = None) -> Tuple[int, Any]:
        """`(version, state)` read from one answer (see `Client.state_with_version`)."""
        answer = await self.request("GET", "/state", query=self._path_query(path))
        return _etag_version(answer.header("ETag")), answer.json()

    async def health(self) -> bool:
        """True when reactord answers `/readyz` with 200; False when not ready or unreachable."""
        try:
            answer = await self.request("GET", "/readyz", check=False)
        except ReactorConnectionError:
            return False
        return answer.status == 200

    async def close(self) -> None:
        """Closes the idle connections, and those in use once their call is over. The client stays
        usable: a later call opens a new connection."""
        self._pool.clear()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    # -----------------------------------------------------------------------------------------
    # Plumbing

    async def request(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
        check: bool = True,
    ) -> Response:
        """One request on a pooled connection. With `check`, an error status raises its problem."""
        method = method.upper()
        all_headers = self._headers(headers)
        head = [f"{method} {self.target(path, query)} HTTP/1.1", f"Host: {self._host_header}"]
        for name, value in all_headers.items():
            if any(character in str(name) + str(value) for character in "\r\n\0"):
                raise ValueError(f"a header cannot hold a line break: {name!r}")
            head.append(f"{name}: {value}")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body or b'')}")
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
        resendable = is_resendable(method, all_headers)
        retried = False
        while True:
            async with self._pool.slot():
                try:
                    connection, reused = await self._pool.acquire(self.timeout)
                except (asyncio.TimeoutError, TimeoutError) as error:
                    raise self._timeout_error(error) from None
                except (OSError, ssl_module.SSLError) as error:
                    raise self._connection_error(error) from error
                sent = False
                keep = False
                try:
                    connection.start(self.timeout)
                    connection.transport.write(message)
                    sent = True
                    answer, keep = await connection.read_response(method)
                except (asyncio.TimeoutError, TimeoutError) as error:  # not retried, the wait is over
                    raise self._timeout_error(error) from None
                except (OSError, http.client.HTTPException) as error:
                    if reused and not retried and (resendable or not sent):
                        retried = True  # a connection the server closed under us: once more on a new one
                        continue
                    raise self._connection_error(error) from error
                finally:
                    connection.stop()
                    self._pool.release(connection, keep)
            return self._checked(answer, check)

    async def _open_connection(self) -> "_Connection":
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            lambda: _Connection(loop), self._host, self._port, ssl=self.ssl, server_hostname=self._host if self.ssl else None
        )
        return connection


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: what came in waits in a buffer until an exchange reads it.

    `start(timeout)` arms a timer that fails the exchange's waiting read with TimeoutError, which
    costs less than `asyncio.wait_for` (a task per call).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.transport: Any = None
        self.generation = 0
        self._buffer = bytearray()
        self._eof = False
        self._lost: Optional[BaseException] = None
        self._waiter: Optional[asyncio.Future] = None
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timed_out = False

    # asyncio.Protocol

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Optional[BaseException]) -> None:
        self._eof = True
        self._lost = exc
        self._wake()

    # Life cycle

    def is_open(self) -> bool:
        """Open, with nothing unread: an idle connection reads nothing unless the server closed it
        or wrote before closing (as reactord's 408 after its idle timeout)."""
        return not (self._eof or self._buffer or self.transport is None or self.transport.is_closing())

    def is_usable(self) -> bool:
        """`is_open`, and no bytes nor close waiting on the socket that the loop has not read yet
        (it may not have run since they arrived)."""
        return self.is_open() and not socket_is_dropped(self.transport.get_extra_info("socket"))

    def close(self) -> None:
        if self.transport is not None:
            try:
                self.transport.close()
            except RuntimeError:  # its event loop is closed: the socket goes with the transport
                pass

    def start(self, timeout: float) -> None:
        self._timed_out = False
        self._timer = self.loop.call_later(timeout, self._time_out)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _time_out(self) -> None:
        self._timed_out = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _more(self) -> None:
        """Waits for more bytes; raises when none can come (closed, or the exchange timed out)."""
        if self._eof:
            if self._lost is not None:
                raise ConnectionResetError(f"the connection broke: {self._lost!r}")
            raise http.client.RemoteDisconnected("reactord closed the connection before the whole answer")
        if self._timed_out:
            raise TimeoutError
        self._waiter = self.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self._timed_out:
            raise TimeoutError

    # Reading an answer

    async def _read_until(self, separator: bytes, limit: int) -> bytes:
        start = 0
        while True:
            index = self._buffer.find(separator, start)
            if index >= 0:
                end = index + len(separator)
                data = bytes(self._buffer[:end])
                del self._buffer[:end]
                return data
            if len(self._buffer) > limit:
                raise http.client.LineTooLong(f"an answer's head longer than {limit} bytes")
            start = max(0, len(self._buffer) - len(separator) + 1)
            await self._more()

    async def _read_exactly(self, count: int) -> bytes:
        while len(self._buffer) < count:
            try:
                await self._more()
            except http.client.RemoteDisconnected:
                raise http.client.IncompleteRead(bytes(self._buffer), count - len(self._buffer)) from None
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    async def _read_to_end(self) -> bytes:
        while not self._eof:
            await self._more()
        if self._lost is not None:
            raise ConnectionResetError(f"the connection broke: {self._lost!r}")
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    async def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            line = await self._read_until(b"\r\n", MAX_CHUNK_LINE_BYTES)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise http.client.BadStatusLine(f"a bad chunk size line: {line[:100]!r}") from None
            if size == 0:
                while await self._read_until(b"\r\n", MAX_HEAD_BYTES) != b"\r\n":  # trailers
                    pass
                return bytes(body)
            body += (await self._read_exactly(size + 2))[:size]

    async def read_response(self, method: str) -> Tuple[Response, bool]:
        """The answer, and whether the connection can carry another request."""
        while True:
            head = (await self._read_until(b"\r\n\r\n", MAX_HEAD_BYTES))[:-4].decode("latin-1")
            lines = head.split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
                raise http.client.BadStatusLine(lines[0][:100])
            status = int(code)
            headers: Dict[str, str] = {}
            for line in lines[1:]:
                name, colon, value = line.partition(":")
                if not colon:
                    raise http.client.BadStatusLine(f"a bad header line: {line[:100]!r}")
                headers[name.strip().lower()] = value.strip()
            if not (100 <= status < 200) or status == 101:
                break  # else an interim answer (100 Continue): the real one follows
        tokens = {token.strip().lower() for token in headers.get("connection", "").split(",")}
        keep = "close" not in tokens and (version == "HTTP/1.1" or "keep-alive" in tokens)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked()
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise http.client.BadStatusLine(f"a bad Content-Length: {headers['content-length'][:100]!r}") from None
            body = await self._read_exactly(length)
        else:
            body = await self._read_to_end()  # delimited by the close
            keep = False
        return Response(status, reason, headers, body), keep


class _AsyncPool:
    """Connections of one `AsyncClient`: at most `limit` at once, idle ones most recently used first."""

    def __init__(self, open_connection: Any, limit: int):
        self._open = open_connection
        self._limit = limit
        self._idle: List[_Connection] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._slots: Optional[asyncio.Semaphore] = None
        self._generation = 0

    def _bind(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._slots is None:
            # Another loop's connections cannot be used from this one (and it may be closed).
            idle, self._idle = self._idle, []
            for connection in idle:
                connection.close()
            self._loop = loop
            self._slots = asyncio.Semaphore(self._limit)
        return self._slots

    def slot(self) -> asyncio.Semaphore:
        """The right to hold a connection: `async with pool.slot(): ...`."""
        return self._bind()

    async def acquire(self, timeout: float) -> Tuple[_Connection, bool]:
        """A connection, and whether it was used before; call within a `slot()`."""
        while self._idle:
            connection = self._idle.pop()
            if connection.is_usable():
                return connection, True
            connection.close()
        connection = await asyncio.wait_for(self._open(), timeout)
        connection.generation = self._generation
        return connection, False

    def release(self, connection: _Connection, keep: bool) -> None:
        if keep and connection.generation == self._generation and connection.is_open() and connection.loop is self._loop:
            self._idle.append(connection)
        else:
            connection.close()

    def clear(self) -> None:
        idle, self._idle = self._idle, []
        self._generation += 1
        for connection in idle:
            connection.close()
