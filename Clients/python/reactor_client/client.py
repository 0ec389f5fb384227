"""The synchronous HTTP client for reactord.

Standard library only (`http.client`), so that firing events or reading the state from a script,
a cron job or a test needs nothing installed. Each call opens its own connection: a `Client` holds
no socket, so it can be shared between threads and never trips over a connection the server has
closed while idle (reactord drops idle keep-alive connections after 60 s).
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import TYPE_CHECKING, Any, Dict, Iterable, Mapping, Optional, Tuple
from urllib.parse import quote, urlencode, urlsplit

from .errors import (
    ReactorConnectionError,
    ReactorProtocolError,
    ReactorTimeoutError,
    error_from_problem,
    problem_from_body,
)

if TYPE_CHECKING:  # websockets is only needed (and imported) when subscribing
    from .subscription import Subscription

__all__ = ["Client", "Response"]

USER_AGENT = "reactor-client-python/0.1"
BATCH_MODES = ("strict", "prune")


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


class Client:
    """A reactord server at `url`; `token` is the bearer secret when tokens are configured.

    >>> client = Client("http://127.0.0.1:7070")
    >>> version = client.fire({"type": "increment", "path": "/counter"})
    >>> client.state("/counter")
    1

    Error answers raise `ReactorError` (`ReactorClientError` for 4xx, `ReactorServerError` for
    5xx) carrying the problem; an unreachable server raises `ReactorConnectionError`.
    """

    def __init__(self, url: str = "http://127.0.0.1:7070", token: Optional[str] = None, timeout: float = 10):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"reactord's URL must be http:// or https:// with a host, not {url!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        # A reverse proxy may serve reactord under a prefix: keep it in front of every path.
        self._prefix = parts.path.rstrip("/")

    def __repr__(self) -> str:
        return f"Client({self.url!r}, token={'***' if self.token else None})"

    # -----------------------------------------------------------------------------------------
    # The API

    def fire(self, event: Mapping[str, Any], idempotency_key: Optional[str] = None) -> int:
        """Fires one event; returns the version it produced once it is applied.

        With `idempotency_key`, retrying after a lost answer (a `ReactorConnectionError`) with the
        same key is safe: the server replays its first answer instead of applying the event twice.
        """
        answer = self._post_events(event, idempotency_key=idempotency_key)
        version = answer.get("version") if isinstance(answer, dict) else None
        if not isinstance(version, int):
            raise ReactorProtocolError(f"expected {{\"version\": N}}, got {answer!r}")
        return version

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
        if mode not in BATCH_MODES:
            raise ValueError(f"mode must be one of {BATCH_MODES}, not {mode!r}")
        events = list(events)
        query = {"mode": "prune"} if mode == "prune" else None
        answer = self._post_events(events, query=query, idempotency_key=idempotency_key)
        if not isinstance(answer, dict) or not isinstance(answer.get("version"), int):
            raise ReactorProtocolError(f"expected {{\"version\": N, ...}}, got {answer!r}")
        return answer

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

    def subscribe(self, path: Optional[str] = None, mode: str = "patch", **options: Any) -> "Subscription":
        """A live subscription over WebSocket (needs the `websockets` package); see `Subscription`.

        ``async with client.subscribe("/players") as sub: async for version, state in sub: ...``
        """
        from .subscription import Subscription  # deferred: the HTTP client works without websockets

        return Subscription(self, path=path, mode=mode, **options)

    # -----------------------------------------------------------------------------------------
    # Plumbing

    def _post_events(self, body: Any, query: Optional[Dict[str, str]] = None, idempotency_key: Optional[str] = None) -> Any:
        headers = {"Content-Type": "application/json"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
        return self.request("POST", "/events", query=query, body=data, headers=headers).json()

    @staticmethod
    def _path_query(path: Optional[str]) -> Optional[Dict[str, str]]:
        if path is None:
            return None
        if not isinstance(path, str) or (path and not path.startswith("/")):
            raise ValueError(f"path must be a JSON Pointer (\"\" or starting with '/'), not {path!r}")
        return {"path": path}

    def target(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        """The request target for an API path, with the URL's prefix and an encoded query."""
        target = self._prefix + path
        if query:
            target += "?" + urlencode(query, quote_via=quote, safe="/")
        return target

    def auth_headers(self) -> Dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def request(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
        check: bool = True,
    ) -> Response:
        """One request on a fresh connection. With `check`, an error status raises its problem."""
        all_headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **self.auth_headers(), **(headers or {})}
        connection_class = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = connection_class(self._host, self._port, timeout=self.timeout)
        try:
            connection.request(method, self.target(path, query), body=body, headers=all_headers)
            raw = connection.getresponse()
            answer = Response(raw.status, raw.reason, {k.lower(): v for k, v in raw.getheaders()}, raw.read())
        except socket.timeout as error:  # TimeoutError on 3.10+
            raise ReactorTimeoutError(f"no answer from reactord at {self.url} within {self.timeout} s") from error
        except (OSError, http.client.HTTPException) as error:
            raise ReactorConnectionError(f"cannot reach reactord at {self.url}: {error!r}") from error
        finally:
            connection.close()
        if check and answer.status >= 400:
            problem = problem_from_body(answer.status, answer.reason, answer.header("Content-Type"), answer.body)
            raise error_from_problem(problem, answer.status)
        return answer


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
