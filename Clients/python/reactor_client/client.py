"""The synchronous HTTP client for reactord.

Standard library only (`http.client`), so that firing events or reading the state from a script,
a cron job or a test needs nothing installed.

Connections are kept alive: a `Client` keeps a few idle `http.client.HTTPConnection`s in a pool,
and each call takes one (or opens one when none is free), so a loop of `fire`s pays for one TCP
handshake rather than one per event. The pool is shared safely between threads: a connection is
used by one call at a time. A pooled connection the server has closed meanwhile (reactord drops
idle keep-alive connections after 60 s, with a 408) is noticed before it is used and discarded.
One that breaks during a call is discarded too, and the call is sent once more on a new
connection when that cannot apply anything twice: a request that did not get out whole, an
idempotent one (`GET`), or one carrying an `Idempotency-Key`. A `fire` without a key that may have
reached the server is never sent again: it raises `ReactorConnectionError`.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import socket
import ssl as ssl_module  # `ssl` is the name of the option, as in asyncio and websockets
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple
from urllib.parse import quote, urlencode, urlsplit

from .errors import (
    ReactorConnectionError,
    ReactorProtocolError,
    ReactorTimeoutError,
    error_from_problem,
    problem_from_body,
    retry_after_seconds,
)

if TYPE_CHECKING:  # websockets is only needed (and imported) when subscribing
    from .subscription import Subscription

__all__ = ["Client", "Response"]

USER_AGENT = "reactor-client-python/0.1"
BATCH_MODES = ("strict", "prune")
DEFAULT_POOL_SIZE = 8
# RFC 9110 §9.2.2: sending one of these twice has the effect of sending it once.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})


class Response:
    """A raw answer (status, headers, body), for callers that need more than the parsed JSON."""

    def __init__(self, status: int, reason: str, headers: Dict[str, str], body: bytes):
        self.status = status
        self.reason = reason
        self.headers = headers  # names lower-cased
        self.body = body

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as error:
            raise ReactorProtocolError(f"reactord's answer is not JSON ({error}): {self.body[:200]!r}") from None


class ClientBase:
    """What `Client` and `AsyncClient` share: the server's address, the token, the timeout, the TLS
    settings, how requests are made up and how answers are read. Holds no connection."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:7070",
        token: Optional[str] = None,
        timeout: float = 10,
        ssl: Optional[ssl_module.SSLContext] = None,
    ):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"reactord's URL must be http:// or https:// with a host, not {url!r}")
        if ssl is not None and parts.scheme != "https":
            raise ValueError(f"ssl is for an https:// URL: nothing would use it with {url!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._https = parts.scheme == "https"
        # What https:// and wss:// trust: the caller's context (a private CA, a client certificate),
        # else the system's CAs, with the host name checked.
        self.ssl: Optional[ssl_module.SSLContext] = (ssl or ssl_module.create_default_context()) if self._https else None
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        # A reverse proxy may serve reactord under a prefix: keep it in front of every path.
        self._prefix = parts.path.rstrip("/")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, token={'***' if self.token else None})"

    def subscribe(self, path: Optional[str] = None, mode: str = "patch", **options: Any) -> "Subscription":
        """A live subscription over WebSocket (needs the `websockets` package); see `Subscription`.

        ``async with client.subscribe("/players") as sub: async for version, state in sub: ...``
        """
        from .subscription import Subscription  # deferred: the HTTP client works without websockets

        return Subscription(self, path=path, mode=mode, **options)  # type: ignore[arg-type]

    def target(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        """The request target for an API path, with the URL's prefix and an encoded query."""
        target = self._prefix + path
        if query:
            target += "?" + urlencode(query, quote_via=quote, safe="/")
        return target

    def auth_headers(self) -> Dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    # -----------------------------------------------------------------------------------------
    # Shared plumbing

    def _headers(self, extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        return {"Accept": "application/json", "User-Agent": USER_AGENT, **self.auth_headers(), **(extra or {})}

    @staticmethod
    def _events_request(body: Any, idempotency_key: Optional[str]) -> Tuple[bytes, Dict[str, str]]:
        """The body and headers of `POST /events`; a value JSON cannot carry raises ValueError here,
        before anything is sent."""
        headers = {"Content-Type": "application/json"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8"), headers

    @staticmethod
    def _batch_query(mode: str) -> Optional[Dict[str, str]]:
        if mode not in BATCH_MODES:
            raise ValueError(f"mode must be one of {BATCH_MODES}, not {mode!r}")
        return {"mode": "prune"} if mode == "prune" else None

    @staticmethod
    def _fire_version(answer: Any) -> int:
        version = answer.get("version") if isinstance(answer, dict) else None
        if not isinstance(version, int):
            raise ReactorProtocolError(f"expected {{\"version\": N}}, got {answer!r}")
        return version

    @staticmethod
    def _batch_answer(answer: Any) -> Dict[str, Any]:
        if not isinstance(answer, dict) or not isinstance(answer.get("version"), int):
            raise ReactorProtocolError(f"expected {{\"version\": N, ...}}, got {answer!r}")
        return answer

    @staticmethod
    def _path_query(path: Optional[str]) -> Optional[Dict[str, str]]:
        if path is None:
            return None
        if not isinstance(path, str) or (path and not path.startswith("/")):
            raise ValueError(f"path must be a JSON Pointer (\"\" or starting with '/'), not {path!r}")
        return {"path": path}

    @staticmethod
    def _checked(answer: Response, check: bool) -> Response:
        if check and answer.status >= 400:
            problem = problem_from_body(answer.status, answer.reason, answer.header("Content-Type"), answer.body)
            raise error_from_problem(problem, answer.status, retry_after_seconds(answer.header("Retry-After")))
        return answer

    def _timeout_error(self, error: BaseException) -> ReactorTimeoutError:
        return ReactorTimeoutError(f"no answer from reactord at {self.url} within {self.timeout} s")

    def _connection_error(self, error: BaseException) -> ReactorConnectionError:
        return ReactorConnectionError(f"cannot reach reactord at {self.url}: {error!r}")


class Client(ClientBase):
    """A reactord server at `url`; `token` is the bearer secret when tokens are configured.

    >>> client = Client("http://127.0.0.1:7070")
    >>> version = client.fire({"type": "increment", "path": "/counter"})
    >>> client.state("/counter")
    1

    Error answers raise `ReactorError` (`ReactorClientError` for 4xx, `ReactorServerError` for
    5xx) carrying the problem; an unreachable server raises `ReactorConnectionError`.

    `ssl` is an `ssl.SSLContext` for an https:// URL, used by the requests and by `subscribe()`'s
    wss:// connections: `ssl.create_default_context(cafile="ca.pem")` trusts a server whose
    certificate a private CA signed. Without one the system's CAs are trusted.

    `timeout` bounds connecting and each wait for the server, as in `http.client`. Connections are
    kept alive (see the module's docstring): at most `pool_size` idle ones are kept, threads firing
    at once beyond that open extra connections that are closed after use, and `pool_size=0` opens
    a connection per call. A `Client` can be shared between threads. `close()` (or `with Client(...)
    as client:`) closes the idle connections; the client stays usable.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:7070",
        token: Optional[str] = None,
        timeout: float = 10,
        pool_size: int = DEFAULT_POOL_SIZE,
        ssl: Optional[ssl_module.SSLContext] = None,
    ):
        super().__init__(url, token, timeout, ssl)
        if not isinstance(pool_size, int) or pool_size < 0:
            raise ValueError(f"pool_size must be a non-negative integer, not {pool_size!r}")
        self.pool_size = pool_size
        self._pool = _ConnectionPool(self._new_connection, pool_size)

    # -----------------------------------------------------------------------------------------
    # The API

    def fire(self, event: Mapping[str, Any], idempotency_key: Optional[str] = None) -> int:
        """Fires one event; returns the version it produced once it is applied.

        With `idempotency_key`, retrying after a lost answer (a `ReactorConnectionError`) with the
        same key is safe: the server replays its first answer instead of applying the event twice.
        """
        body, headers = self._events_request(event, idempotency_key)
        return self._fire_version(self.request("POST", "/events", body=body, headers=headers).json())

    def fire_batch(
        self,
        events: Iterable[Mapping[str, Any]],
        mode: str = "strict",
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Fires an array of events; each applied one takes its own version, with nothing between.

        `mode="strict"` (all or nothing): a rejected event raises its problem, with `"index"`, and
        nothing is applied; else `{"version": N, "applied": K}`. `mode="prune"`: the accepted
        events are applied and the answer lists the others under `"rejected"` (each an `index`
        and a `problem`), which is why it returns the whole answer rather than just the version.
        """
        query = self._batch_query(mode)
        body, headers = self._events_request(list(events), idempotency_key)
        return self._batch_answer(self.request("POST", "/events", query=query, body=body, headers=headers).json())

    def state(self, path: Optional[str] = None) -> Any:
        """The state, or the sub-tree at the JSON Pointer `path` (404 `path-not-found` if absent)."""
        return self.state_with_version(path)[1]

    def state_with_version(self, path: Optional[str] = None) -> Tuple[int, Any]:
        """`(version, state)` read from one answer (the version is its ETag), so they always match;
        reading them in two requests could pair a state with another version."""
        answer = self.request("GET", "/state", query=self._path_query(path))
        return _etag_version(answer.header("ETag")), answer.json()

    def health(self) -> bool:
        """True when reactord answers `/readyz` with 200, False when it is not ready or unreachable.

        Never raises for a down server: a health check is asked precisely to find that out.
        """
        try:
            answer = self.request("GET", "/readyz", check=False)
        except ReactorConnectionError:
            return False
        return answer.status == 200

    def close(self) -> None:
        """Closes the idle connections, and those in use once their call is over. The client stays
        usable: a later call opens a new connection."""
        self._pool.clear()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -----------------------------------------------------------------------------------------
    # Plumbing

    def request(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
        check: bool = True,
    ) -> Response:
        """One request on a pooled connection. With `check`, an error status raises its problem.

        A reused connection that fails is replaced by a new one for one more attempt, when sending
        the request again cannot apply it twice (see the module's docstring).
        """
        all_headers = self._headers(headers)
        target = self.target(path, query)
        resendable = is_resendable(method, all_headers)
        retried = False
        while True:
            connection, reused = self._pool.acquire()
            if reused and connection.timeout != self.timeout:  # the timeout changed since it was opened
                connection.timeout = self.timeout
                connection.sock.settimeout(self.timeout)
            sent = False
            try:
                connection.request(method, target, body=body, headers=all_headers)
                sent = True
                raw = connection.getresponse()
                answer = Response(raw.status, raw.reason, {k.lower(): v for k, v in raw.getheaders()}, raw.read())
            except socket.timeout as error:  # TimeoutError on 3.10+: not retried, the wait is over
                connection.close()
                raise self._timeout_error(error) from error
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                if reused and not retried and (resendable or not sent):
                    retried = True  # a connection the server closed under us: once more on a new one
                    continue
                raise self._connection_error(error) from error
            except BaseException:  # interrupted mid-request: the connection is in an unknown state
                connection.close()
                raise
            self._pool.release(connection)
            return self._checked(answer, check)

    def _new_connection(self) -> http.client.HTTPConnection:
        """A connection, not yet open: `request` connects it, within the timeout."""
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self.ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)


def is_resendable(method: str, headers: Mapping[str, str]) -> bool:
    """Whether a request that may have reached the server can be sent again without applying it
    twice: an idempotent method, or an `Idempotency-Key` (reactord replays its first answer)."""
    return method.upper() in IDEMPOTENT_METHODS or any(name.lower() == "idempotency-key" for name in headers)


def socket_is_dropped(sock: Any) -> bool:
    """Whether an idle connection's socket is unusable: readable (an idle HTTP connection has
    nothing to read unless the server closed it, reset it, or wrote before closing, as reactord's
    408 to a connection idle for too long) or already closed."""
    if sock is None:
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)
    except (OSError, ValueError):  # a closed socket (fileno -1)
        return True


class _ConnectionPool:
    """Idle `HTTPConnection`s for one client, most recently used first, shared between threads.

    Never blocks: a thread that finds no idle connection opens a new one, and a connection coming
    back when `size` are idle already is closed. `clear()` closes the idle ones and makes those in
    use close when they come back (a generation number tells them apart).
    """

    def __init__(self, connect: Callable[[], http.client.HTTPConnection], size: int):
        self._connect = connect
        self._size = size
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._generation = 0
        self._pid = os.getpid()

    def acquire(self) -> Tuple[http.client.HTTPConnection, bool]:
        """A connection, and whether it was used before (an idle one that still looks open)."""
        while True:
            with self._lock:
                if self._pid != os.getpid():  # forked: the idle sockets are the parent's too
                    self._idle = []
                    self._pid = os.getpid()
                connection = self._idle.pop() if self._idle else None
                generation = self._generation
            if connection is None:
                connection = self._connect()
                connection._reactor_generation = generation  # type: ignore[attr-defined]
                return connection, False
            if not socket_is_dropped(connection.sock):
                return connection, True
            connection.close()

    def release(self, connection: http.client.HTTPConnection) -> None:
        """Takes a connection back after a complete exchange (closed if the server asked for it)."""
        if connection.sock is not None:  # http.client closes it after a `Connection: close` answer
            with self._lock:
                if (
                    len(self._idle) < self._size
                    and getattr(connection, "_reactor_generation", None) == self._generation
                    and self._pid == os.getpid()
                ):
                    self._idle.append(connection)
                    return
        connection.close()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for connection in idle:
            connection.close()


def _etag_version(etag: Optional[str]) -> int:
    """The version in an ETag: `"12"` (or the weak `W/"12"`)."""
    if etag:
        value = etag.strip()
        if value.startswith("W/"):
            value = value[2:]
        value = value.strip('"')
        if value.isdigit():
            return int(value)
    raise ReactorProtocolError(f"expected an ETag with the state's version, got {etag!r}")
