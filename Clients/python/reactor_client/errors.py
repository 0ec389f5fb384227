"""Exceptions raised by the Reactor client.

reactord answers every error with an RFC 9457 problem (`application/problem+json`) whose `type` is
stable, so the exceptions carry that problem whole: callers branch on `.type` (or `.status`), and
extra members such as `knownTypes`, `index` or `parameter` stay reachable through `.problem`.

Network failures are a different kind of error (nothing was answered), so they derive from the
built-in `ConnectionError` instead, and `except ReactorError` never swallows them by accident.
"""

from __future__ import annotations

import json
import time
from email.utils import parsedate_to_datetime
from typing import Any, Mapping, Optional

__all__ = [
    "ReactorError",
    "ReactorClientError",
    "ReactorServerError",
    "ReactorConnectionError",
    "ReactorTimeoutError",
    "ReactorProtocolError",
    "error_from_problem",
    "problem_from_body",
    "retry_after_seconds",
]


class ReactorError(Exception):
    """reactord answered with an error: `.problem` is its RFC 9457 problem, as a dict.

    `str(error)` is the problem's `detail`, the one human-readable sentence reactord writes for
    this very failure (the `title` only names the kind).

    `retry_after` is the seconds to wait before asking again, when the answer said (a 429, a 503):
    the problem's `retryAfter` member when it has one, else the `Retry-After` header, given here as
    `retry_after`; None otherwise.
    """

    def __init__(self, problem: Mapping[str, Any], status: Optional[int] = None, retry_after: Optional[float] = None):
        self.problem: dict = dict(problem)
        found = self.problem.get("status")
        self.status: int = status if status is not None else (found if isinstance(found, int) else 0)
        member = self.problem.get("retryAfter")
        if isinstance(member, (int, float)) and not isinstance(member, bool) and member >= 0:
            retry_after = member
        self.retry_after: Optional[float] = retry_after
        super().__init__(self.detail)

    @property
    def type(self) -> str:
        """The problem's stable `type`, e.g. `/problems/unknown-event-type`."""
        return str(self.problem.get("type", "about:blank"))

    @property
    def title(self) -> str:
        return str(self.problem.get("title", ""))

    @property
    def detail(self) -> str:
        detail = self.problem.get("detail")
        if isinstance(detail, str) and detail:
            return detail
        return self.title or f"reactord answered {self.status}"

    def __str__(self) -> str:
        return self.detail

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, type={self.type!r}, detail={self.detail!r})"


class ReactorClientError(ReactorError):
    """A 4xx answer: the request was refused (bad event, missing token, unknown path, ...)."""


class ReactorServerError(ReactorError):
    """A 5xx answer: the server could not serve a valid request (retrying may help)."""


class ReactorConnectionError(ConnectionError):
    """reactord could not be reached, or the connection broke before an answer arrived.

    When this interrupts a request that changes the state (`fire`), it is unknown whether the
    event was applied: retry with the same idempotency key to find out safely.
    """


class ReactorTimeoutError(ReactorConnectionError, TimeoutError):
    """No answer within the client's timeout."""


class ReactorProtocolError(ValueError):
    """reactord (or whatever answered in its place) sent something this client cannot read."""


def problem_from_body(status: int, reason: str, content_type: Optional[str], body: bytes) -> dict:
    """The problem of an error answer, or one made up from it when the body is not a problem.

    A proxy in front of reactord may answer errors in HTML; the made-up problem keeps the status
    and the start of the body so that the exception still says what happened.
    """
    if body:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "type" in parsed:
            parsed.setdefault("status", status)
            return parsed
    text = body[:200].decode("utf-8", errors="replace").strip()
    return {
        "type": "about:blank",
        "title": reason or f"HTTP {status}",
        "status": status,
        "detail": text or reason or f"reactord answered {status} ({content_type or 'no body'})",
    }


def retry_after_seconds(header: Optional[str]) -> Optional[float]:
    """The seconds a `Retry-After` header asks for: delta-seconds or an HTTP date (RFC 9110
    §10.2.3); None without one, or for one that is neither."""
    if header is None:
        return None
    text = header.strip()
    if text.isdigit():
        return float(text)
    try:
        date = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, date.timestamp() - time.time())


def error_from_problem(
    problem: Mapping[str, Any], status: Optional[int] = None, retry_after: Optional[float] = None
) -> ReactorError:
    """The exception for a problem: `ReactorClientError` for 4xx, `ReactorServerError` for 5xx;
    `retry_after` is the seconds of the answer's `Retry-After` header, if any."""
    if status is None:
        found = problem.get("status")
        status = found if isinstance(found, int) else 0
    if 400 <= status < 500:
        return ReactorClientError(problem, status, retry_after)
    if status >= 500:
        return ReactorServerError(problem, status, retry_after)
    return ReactorError(problem, status, retry_after)
