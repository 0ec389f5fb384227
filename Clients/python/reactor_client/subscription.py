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
import ssl as ssl_module  # `ssl` is the name of the option, as in asyncio and websockets
from typing import TYPE_CHECKING, Any, AsyncIterator, Dict, Mapping, NamedTuple, Optional, Tuple

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from .errors import (
    ReactorConnectionError,
    ReactorError,
    ReactorProtocolError,
    ReactorTimeoutError,
    error_from_problem,
    problem_from_body,
    retry_after_seconds,
)
from .patch import PatchError, apply_patch

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Subscription"]

log = logging.getLogger("reactor_client")

MODES = ("patch", "state")
_END = object()  # queued once the subscription is over
QUICK_DROP_SECONDS = 1.0  # a connection that lived less than this is reopened after a delay
# Refusals of a handshake that may pass (besides 5xx): a request that timed out, and a rate limit.
PASSING_REFUSALS = frozenset({408, 429})
# reactord's close code for a client message larger than its --max-message-bytes, which it closes
# the connection on without reading (docs/protocol.md): the event in it was not applied.
MESSAGE_TOO_BIG = 1009


class _PendingFire(NamedTuple):
    """A fire waiting for its answer: the future the answer settles, and the size of the message,
    which is what reactord holds against its --max-message-bytes."""

    future: "asyncio.Future[int]"
    message_bytes: int


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
        iteration then raises `ReactorConnectionError`); None retries forever. Default 10. A
        reconnection refused with a 5xx, 408 or 429 is tried again (after the answer's
        `Retry-After` at least); another refusal (401, 403, ...) ends the subscription at once.
      - `backoff_initial`, `backoff_max`: the delay before the second attempt, doubled (with
        jitter) after each failure up to `backoff_max` seconds. The first attempt is immediate,
        unless the connection dropped within a second of opening.
      - `open_timeout`, `fire_timeout`: seconds for a handshake and for an ack (default: the
        client's timeout). Closing waits for the server's close frame for the client's timeout.
      - `max_message_bytes`: the largest message accepted (a snapshot is one message). 64 MiB.
      - `ssl`: the `ssl.SSLContext` of a wss:// connection (default: the client's).
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
        ssl: Optional[ssl_module.SSLContext] = None,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if path is not None and (not isinstance(path, str) or (path and not path.startswith("/"))):
            raise ValueError(f"path must be a JSON Pointer (\"\" or starting with '/'), not {path!r}")
        if reconnect_attempts is not None and reconnect_attempts < 0:
            raise ValueError("reconnect_attempts must not be negative")
        if ssl is not None and not client.url.startswith("https:"):
            raise ValueError(f"ssl is for an https:// URL: nothing would use it with {client.url!r}")
        self.client = client
        self.path = path
        self.mode = mode
        self.reconnect_attempts = reconnect_attempts
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.open_timeout = client.timeout if open_timeout is None else open_timeout
        self.fire_timeout = client.timeout if fire_timeout is None else fire_timeout
        self.max_message_bytes = max_message_bytes
        self.ssl = ssl if ssl is not None else client.ssl

        self.version: Optional[int] = None
        """The version of `state`: the last one received (None before the snapshot)."""
        self.history: Optional[str] = None
        """The history `version` belongs to, as the last snapshot named it: sent back with `since`,
        so that a server that started over (no data directory) sends a snapshot, not its patches."""
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
        self._pending: Dict[str, _PendingFire] = {}  # in the order they were sent
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
        key when that matters). A message larger than reactord's --max-message-bytes is refused
        unread, with close code 1009: that raises the `ReactorClientError` `POST /events` would
        (413, `/problems/body-too-large`), and the event was not applied.
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
        text = json.dumps({"type": "fire", "id": request_id, "event": event}, separators=(",", ":"), allow_nan=False)
        future: "asyncio.Future[int]" = asyncio.get_running_loop().create_future()
        # Registered right before the send, which writes the frame before it first waits: the order
        # of `_pending` is the order the messages went out.
        self._pending[request_id] = _PendingFire(future, len(text.encode("utf-8")))
        try:
            try:
                await ws.send(text)
            except ConnectionClosed:
                # The connection closed while the message went out: its reader fails every fire
                # still waiting, this one too, and knows how it closed (1009: this was refused).
                pass
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
            if self.history is not None:
                query["history"] = self.history
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
                # reactord agrees to permessage-deflate and compresses its pushes with a context
                # shared between subscribers: a patch costs a few dozen bytes (docs/protocol.md).
                compression="deflate",
                open_timeout=self.open_timeout,
                # Without it, closing a connection that went silent would wait 10 s for its close frame.
                close_timeout=self.client.timeout,
                max_size=self.max_message_bytes,
                ssl=self.ssl if url.startswith("wss:") else None,
                user_agent_header="reactor-client-python/0.1",
            )
        except InvalidStatus as error:
            response = error.response
            problem = problem_from_body(
                response.status_code, response.reason_phrase, response.headers.get("Content-Type"), response.body or b""
            )
            retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            raise error_from_problem(problem, response.status_code, retry_after) from None
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
                    ReactorConnectionError(f"{reason} before the answer: the event may or may not have been applied"),
                    close_code=ws.close_code,
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
            retry_after: Optional[float] = None
            try:
                return await self._connect()
            except ReactorError as error:
                # Another refusal is one that retrying will not change (a token revoked, ...).
                if error.status < 500 and error.status not in PASSING_REFUSALS:
                    raise
                last: Exception = error
                retry_after = error.retry_after
                wait = "" if retry_after is None else f"; trying again in {retry_after:g} s at least"
                log.info("reactor subscription: reconnection refused (%s %s)%s", error.status, error.type, wait)
            except ReactorConnectionError as error:
                last = error
            attempt += 1
            if self.reconnect_attempts is not None and attempt >= self.reconnect_attempts:
                raise ReactorConnectionError(f"gave up reconnecting to reactord after {attempt} attempts: {last}") from last
            await self._backoff(retry_after)

    async def _backoff(self, retry_after: Optional[float] = None) -> None:
        """Sleeps the backoff delay, and at least `retry_after` seconds when the server asked for
        that, spread over up to half as much again so that clients refused together (a fleet
        reconnecting after a restart) do not all come back together."""
        delay = self._delay * random.uniform(0.5, 1.0)
        if retry_after is not None:
            delay = max(delay, retry_after * random.uniform(1.0, 1.5))
        await asyncio.sleep(delay)
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
            history = message.get("history")
            self.history = history if isinstance(history, str) else None
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
            pending = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            future = pending.future if pending is not None else None
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

    def _fail_pending(self, error: Exception, close_code: Optional[int] = None) -> None:
        """Fails the fires still waiting with `error`, but one when the connection closed with
        1009. reactord reads a connection's messages in order and closes at the first one larger
        than its --max-message-bytes, reading nothing after it; every fire sent before that one
        was smaller. So the largest fire still waiting is the refused one or came after it: either
        way it was not applied, and it fails as `POST /events` would (413)."""
        waiting = [pending for pending in self._pending.values() if not pending.future.done()]
        refused = max(waiting, key=lambda pending: pending.message_bytes) if close_code == MESSAGE_TOO_BIG and waiting else None
        for pending in waiting:
            if pending is refused:
                pending.future.set_exception(
                    error_from_problem(
                        {
                            "type": "/problems/body-too-large",
                            "title": "Body too large",
                            "status": 413,
                            "detail": "reactord refused the message unread: it is larger than its --max-message-bytes "
                            "(WebSocket close 1009); the event was not applied",
                        }
                    )
                )
            else:
                pending.future.set_exception(error)


def _version(message: Mapping[str, Any]) -> int:
    version = message.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReactorProtocolError(f"a message without a version: {message!r}")
    return version
