"""Live subscriptions over WebSocket (`GET /subscribe`), on the `websockets` library.

A `Subscription` keeps the selected state locally: it starts from the server's snapshot, applies
every RFC 6902 patch itself, and yields `(version, state)` after each. When the connection drops
it reconnects by itself, with a bounded exponential backoff, asking for `since=<last version>` so
that the server sends exactly what was missed; a snapshot (`resumed: false`) replaces the state
when the server can no longer serve that. The consumer sees one unbroken sequence of states.

One background task reads the socket. It is the only writer of the local state and the only
reader of messages, so `fire` acknowledgements and state changes cannot race each other: the
server sends the firing subscriber's own patch before its ack, and this client handles them in
that order, so when `await sub.fire(...)` returns, `sub.state` already includes the event.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
from typing import TYPE_CHECKING, Any, AsyncIterator, Dict, Mapping, Optional, Tuple

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from .errors import (
    ReactorConnectionError,
    ReactorError,
    ReactorProtocolError,
    ReactorTimeoutError,
    error_from_problem,
    problem_from_body,
)
from .patch import PatchError, apply_patch

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Subscription"]

log = logging.getLogger("reactor_client")

MODES = ("patch", "state")
_END = object()  # queued once the subscription is over
QUICK_DROP_SECONDS = 1.0  # a connection that lived less than this is reopened after a delay


class Subscription:
    """A live view of reactord's state (or of the sub-tree at `path`); see the module docstring.

    Use it as an async context manager, then iterate:

        async with client.subscribe(path="/players") as sub:
            async for version, players in sub:
                ...

    The yielded states share unchanged parts with each other (see `reactor_client.patch`):
    treat them as read-only, and `copy.deepcopy` one before editing it.

    Options (keyword arguments of `Client.subscribe`):
      - `reconnect_attempts`: consecutive failed reconnection attempts before giving up (the
        iteration then raises `ReactorConnectionError`); None retries forever. Default 10.
      - `backoff_initial`, `backoff_max`: the delay before the second attempt, doubled (with
        jitter) after each failure up to `backoff_max` seconds. The first attempt is immediate,
        unless the connection dropped within a second of opening.
      - `open_timeout`, `fire_timeout`: seconds for a handshake and for an ack (default: the
        client's timeout).
      - `max_message_bytes`: the largest message accepted (a snapshot is one message). 64 MiB.
    """

    def __init__(
        self,
        client: "Client",
        path: Optional[str] = None,
        mode: str = "patch",
        *,
        reconnect_attempts: Optional[int] = 10,
        backoff_initial: float = 0.1,
        backoff_max: float = 5.0,
        open_timeout: Optional[float] = None,
        fire_timeout: Optional[float] = None,
        max_message_bytes: Optional[int] = 64 * 1024 * 1024,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if path is not None and (not isinstance(path, str) or (path and not path.startswith("/"))):
            raise ValueError(f"path must be a JSON Pointer (\"\" or starting with '/'), not {path!r}")
        if reconnect_attempts is not None and reconnect_attempts < 0:
            raise ValueError("reconnect_attempts must not be negative")
        self.client = client
        self.path = path
        self.mode = mode
        self.reconnect_attempts = reconnect_attempts
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.open_timeout = client.timeout if open_timeout is None else open_timeout
        self.fire_timeout = client.timeout if fire_timeout is None else fire_timeout
        self.max_message_bytes = max_message_bytes

        self.version: Optional[int] = None
        """The version of `state`: the last one received (None before the snapshot)."""
        self.state: Any = None
        """The selected value at `version`, maintained locally."""
        self.connections = 0
        """Successful handshakes so far: 1 plus the reconnections (for monitoring and tests)."""
        self.snapshots = 0
        """Snapshots received: 1 unless a resume could not be served or the consumer was slow."""

        self._queue: "asyncio.Queue[Any]" = asyncio.Queue()
        self._connected = asyncio.Event()
        self._ws: Optional[ClientConnection] = None
        self._task: Optional[asyncio.Task] = None
        self._pending: Dict[str, "asyncio.Future[int]"] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self._failure: Optional[BaseException] = None
        self._resync = False  # the next connection asks for a snapshot rather than `since`
        self._over = asyncio.Event()  # set once the subscription is closed or failed
        self._delay = backoff_initial

    # -----------------------------------------------------------------------------------------
    # Life cycle

    async def __aenter__(self) -> "Subscription":
        await self.open()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def open(self) -> None:
        """Connects. The first connection is not retried: a wrong URL, token or path should fail
        right away (as `ReactorError` or `ReactorConnectionError`) rather than after backoff."""
        if self._task is not None:
            raise RuntimeError("this subscription is already open")
        ws = await self._connect()
        self._task = asyncio.create_task(self._run(ws), name="reactor-subscription")

    async def close(self) -> None:
        """Closes the connection and ends the iteration; pending `fire` calls fail."""
        if self._closed:
            return
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        self._fail_pending(ReactorConnectionError("the subscription was closed before the answer arrived"))
        self._over.set()
        self._queue.put_nowait(_END)

    # -----------------------------------------------------------------------------------------
    # Reading

    def __aiter__(self) -> AsyncIterator[Tuple[int, Any]]:
        return self

    async def __anext__(self) -> Tuple[int, Any]:
        """The next `(version, state)`: after the snapshot, then after each change.

        Ends when the subscription is closed; raises the reason when it failed for good
        (`ReactorConnectionError` once reconnection gave up, `ReactorError` for a refused one).
        """
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # later calls end too
            if self._failure is not None:
                raise self._failure
            raise StopAsyncIteration
        return item

    # -----------------------------------------------------------------------------------------
    # Firing

    async def fire(self, event: Mapping[str, Any], timeout: Optional[float] = None) -> int:
        """Fires an event over the socket; returns its version (the `ack`), or raises the
        `ReactorError` of the server's `error` answer.

        Waits for a connection while reconnecting. If the connection drops before the ack, raises
        `ReactorConnectionError`: the event may or may not have been applied, and it is not sent
        again by itself since events are not idempotent (use `Client.fire` with an idempotency
        key when that matters).
        """
        timeout = self.fire_timeout if timeout is None else timeout
        if self._closed:
            raise ReactorConnectionError("the subscription is closed")
        if not self._connected.is_set():
            # Wait for the reconnection, but not past the subscription's end.
            waiters = [asyncio.ensure_future(self._connected.wait()), asyncio.ensure_future(self._over.wait())]
            try:
                await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            if not self._connected.is_set() and not self._over.is_set():
                raise ReactorTimeoutError(f"not connected to reactord within {timeout} s")
        ws = self._ws
        if ws is None or self._closed:
            raise ReactorConnectionError(f"the subscription is over: {self._failure or 'closed'}")
        request_id = f"f-{next(self._ids)}"
        future: "asyncio.Future[int]" = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            message = {"type": "fire", "id": request_id, "event": event}
            try:
                await ws.send(json.dumps(message, separators=(",", ":"), allow_nan=False))
            except ConnectionClosed as error:
                raise ReactorConnectionError(f"the connection closed while firing: {error}") from error
            try:
                return await asyncio.wait_for(future, timeout)
            except asyncio.TimeoutError:
                raise ReactorTimeoutError(f"no ack from reactord within {timeout} s; the event may have been applied") from None
        finally:
            self._pending.pop(request_id, None)

    # -----------------------------------------------------------------------------------------
    # Internals

    def _url(self) -> str:
        query: Dict[str, Any] = {"mode": self.mode}
        if self.path is not None:
            query["path"] = self.path
        if self.version is not None and not self._resync:
            query["since"] = self.version
        scheme = "wss" if self.client.url.startswith("https:") else "ws"
        netloc = self.client.url.split("://", 1)[1].split("/", 1)[0]
        return f"{scheme}://{netloc}{self.client.target('/subscribe', query)}"

    async def _connect(self) -> ClientConnection:
        """One handshake. A refusal (4xx/5xx) raises its problem; anything else that keeps the
        connection from opening raises ReactorConnectionError."""
        url = self._url()
        try:
            ws = await connect(
                url,
                additional_headers=self.client.auth_headers(),
                subprotocols=["reactor.v1"],  # type: ignore[list-item]
                compression=None,  # reactord does not do permessage-deflate
                open_timeout=self.open_timeout,
                max_size=self.max_message_bytes,
                user_agent_header="reactor-client-python/0.1",
            )
        except InvalidStatus as error:
            response = error.response
            problem = problem_from_body(
                response.status_code, response.reason_phrase, response.headers.get("Content-Type"), response.body or b""
            )
            raise error_from_problem(problem, response.status_code) from None
        except InvalidURI as error:
            raise ValueError(f"cannot subscribe at {url!r}: {error}") from error
        except (asyncio.TimeoutError, TimeoutError) as error:
            raise ReactorTimeoutError(f"no WebSocket handshake with {url} within {self.open_timeout} s") from error
        except (OSError, InvalidHandshake, ConnectionClosed) as error:
            raise ReactorConnectionError(f"cannot subscribe at {url}: {error!r}") from error
        self.connections += 1
        self._resync = False
        self._ws = ws
        self._connected.set()
        return ws

    async def _run(self, ws: ClientConnection) -> None:
        """Reads until the subscription is closed, reconnecting whenever the connection drops."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                opened = loop.time()
                try:
                    await self._read(ws)
                    reason: str = f"closed by reactord ({ws.close_code} {ws.close_reason!r})"
                except ConnectionClosed as error:
                    reason = f"connection lost ({error})"
                except (PatchError, ReactorProtocolError) as error:
                    # Our state and the server's disagree (or the server sent nonsense): resuming
                    # would replay the same patch onto the same state, so start over from a
                    # snapshot, which replaces the state. Patches apply atomically, so the state
                    # consumers already got is intact.
                    reason = f"cannot use a message ({error})"
                    self._resync = True
                    await ws.close(1002)
                self._ws = None
                self._connected.clear()
                self._fail_pending(
                    ReactorConnectionError(f"{reason} before the answer: the event may or may not have been applied")
                )
                log.info("reactor subscription: %s; reconnecting", reason)
                # A connection that dropped right after opening waits before the next one, so a
                # server that keeps accepting and closing (or a bug) cannot make us spin.
                ws = await self._reconnect(immediate=loop.time() - opened >= QUICK_DROP_SECONDS)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # the subscription is over: tell the consumer why
            self._failure = error
            self._closed = True
            self._connected.clear()
            self._fail_pending(ReactorConnectionError(f"the subscription failed: {error}"))
            self._over.set()
            self._queue.put_nowait(_END)

    async def _reconnect(self, immediate: bool) -> ClientConnection:
        """Connects again, retrying with exponential backoff and jitter, bounded in delay
        (`backoff_max`) and in consecutive attempts (`reconnect_attempts`)."""
        if immediate:
            self._delay = self.backoff_initial
        else:
            await self._backoff()
        attempt = 0
        while True:
            try:
                return await self._connect()
            except ReactorError as error:
                if error.status < 500:  # a refusal that retrying will not change (token revoked, ...)
                    raise
                last: Exception = error
            except ReactorConnectionError as error:
                last = error
            attempt += 1
            if self.reconnect_attempts is not None and attempt >= self.reconnect_attempts:
                raise ReactorConnectionError(f"gave up reconnecting to reactord after {attempt} attempts: {last}") from last
            await self._backoff()

    async def _backoff(self) -> None:
        await asyncio.sleep(self._delay * random.uniform(0.5, 1.0))
        self._delay = min(self.backoff_max, self._delay * 2)

    async def _read(self, ws: ClientConnection) -> None:
        async for raw in ws:
            try:
                message = json.loads(raw)
            except ValueError as error:
                raise ReactorProtocolError(f"a message that is not JSON: {raw[:200]!r}") from error
            if not isinstance(message, dict):
                raise ReactorProtocolError(f"a message that is not an object: {message!r}")
            self._handle(message)

    def _handle(self, message: Dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "snapshot":
            # Replaces whatever we hold, even at a lower version: the server may have restarted.
            self.snapshots += 1
            self._publish(_version(message), message.get("state"))
        elif kind == "patch":
            version = _version(message)
            if self.version is None:
                raise ReactorProtocolError("a patch before any snapshot")
            if version <= self.version:
                return  # already applied
            self._publish(version, apply_patch(self.state, message.get("ops")))
        elif kind == "state":
            version = _version(message)
            if self.version is None or version > self.version:
                self._publish(version, message.get("state"))
        elif kind in ("ack", "error"):
            future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                log.warning("reactor subscription: an answer to no pending fire: %s", message)
            elif kind == "ack":
                future.set_result(_version(message))
            else:
                problem = message.get("problem")
                if not isinstance(problem, dict):
                    problem = {"type": "about:blank", "title": "Error", "detail": f"reactord answered {message!r}"}
                future.set_exception(error_from_problem(problem))
        else:
            log.debug("reactor subscription: ignoring a message of type %r", kind)  # newer servers

    def _publish(self, version: int, state: Any) -> None:
        self.version, self.state = version, state
        self._queue.put_nowait((version, state))

    def _fail_pending(self, error: Exception) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)


def _version(message: Mapping[str, Any]) -> int:
    version = message.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReactorProtocolError(f"a message without a version: {message!r}")
    return version
