"""Every error answer raises ReactorError carrying reactord's RFC 9457 problem."""

from __future__ import annotations

import email.utils
import json
import socket
import time

import pytest

from conftest import answering_handler, run, stub_http_server
from reactor_client import AsyncClient, Client, ReactorClientError, ReactorError, ReactorServerError

TOKENS = (
    "--token", "reader:r3ad-s3cret:read",
    "--token", "firer:f1re-s3cret:fire",
    "--token", "both:b0th-s3cret:read+fire",
    "--token", "counter:c0unt-s3cret:fire:increment",
)


def assert_problem(error: ReactorError, status: int, kind: str) -> dict:
    """The exception carries the whole problem, and says its detail."""
    assert isinstance(error, ReactorClientError if status < 500 else ReactorServerError)
    assert error.status == status and error.problem["status"] == status
    assert error.type == f"/problems/{kind}" == error.problem["type"]
    assert isinstance(error.problem.get("title"), str) and error.problem["title"] == error.title
    assert isinstance(error.detail, str) and error.detail and error.detail == error.problem["detail"]
    assert str(error) == error.problem["detail"]
    return error.problem


def test_unknown_event_type_lists_the_known_ones(client):
    with pytest.raises(ReactorError) as caught:
        client.fire({"type": "explode", "path": "/n"})
    problem = assert_problem(caught.value, 422, "unknown-event-type")
    assert set(problem["knownTypes"]) == {"append", "increment", "merge", "patch", "remove", "set"}


@pytest.mark.parametrize(
    "event",
    [
        {"type": "set", "path": "/a"},  # no value
        {"type": "set", "path": "/a", "value": 1, "vlaue": 2},  # a typo'd member
        {"type": "increment", "path": 7},
        {"path": "/a", "value": 1},  # no type
    ],
)
def test_malformed_events_are_invalid(client, event):
    with pytest.raises(ReactorError) as caught:
        client.fire(event)
    assert_problem(caught.value, 422, "invalid-event")
    assert client.state_with_version() == (0, {})


def test_an_event_the_state_refuses(client):
    with pytest.raises(ReactorError) as caught:
        client.fire({"type": "remove", "path": "/nothing"})
    assert_problem(caught.value, 422, "event-rejected")


def test_a_failed_json_patch_test_is_a_409(client):
    client.fire({"type": "set", "path": "/n", "value": 1})
    with pytest.raises(ReactorError) as caught:
        client.fire({"type": "patch", "ops": [{"op": "test", "path": "/n", "value": 2}, {"op": "replace", "path": "/n", "value": 3}]})
    assert_problem(caught.value, 409, "precondition-failed")
    assert client.state() == {"n": 1}


def test_a_path_with_nothing_there_is_404(client):
    client.fire({"type": "set", "path": "/a", "value": {"b": 1}})
    with pytest.raises(ReactorError) as caught:
        client.state("/a/c")
    problem = assert_problem(caught.value, 404, "path-not-found")
    assert problem["path"] == "/a/c"
    with pytest.raises(ReactorError) as caught:
        client.state_with_version("/zz")
    assert_problem(caught.value, 404, "path-not-found")


def test_malformed_json_says_where(client):
    with pytest.raises(ReactorError) as caught:
        client.request("POST", "/events", body=b'{"type": "set",', headers={"Content-Type": "application/json"})
    problem = assert_problem(caught.value, 400, "malformed-json")
    assert "line" in problem and "column" in problem


def test_unknown_endpoint_is_404(client):
    with pytest.raises(ReactorError) as caught:
        client.request("GET", "/nowhere")
    assert_problem(caught.value, 404, "not-found")


def test_values_that_are_not_json_are_refused_before_sending(client):
    with pytest.raises(ValueError):
        client.fire({"type": "set", "path": "/x", "value": float("nan")})
    assert client.state_with_version() == (0, {})


# ---------------------------------------------------------------------------------------------
# Tokens


@pytest.fixture
def secured(reactord):
    return reactord(*TOKENS)


def test_no_token_or_a_wrong_token_is_401(secured):
    for token in (None, "wrong"):
        client = secured.client(token)
        with pytest.raises(ReactorError) as caught:
            client.state()
        assert_problem(caught.value, 401, "unauthorized")
        with pytest.raises(ReactorError) as caught:
            client.fire({"type": "increment", "path": "/n"})
        assert_problem(caught.value, 401, "unauthorized")
    assert secured.client().health() is True  # /readyz needs no token


def test_a_token_without_the_scope_is_403(secured):
    with pytest.raises(ReactorError) as caught:
        secured.client("r3ad-s3cret").fire({"type": "increment", "path": "/n"})
    assert_problem(caught.value, 403, "forbidden")
    with pytest.raises(ReactorError) as caught:
        secured.client("f1re-s3cret").state()
    assert_problem(caught.value, 403, "forbidden")
    both = secured.client("b0th-s3cret")
    assert both.fire({"type": "increment", "path": "/n"}) == 1
    assert both.state() == {"n": 1}


def test_a_token_limited_to_some_event_types(secured):
    counter = secured.client("c0unt-s3cret")
    assert counter.fire({"type": "increment", "path": "/n"}) == 1
    with pytest.raises(ReactorError) as caught:
        counter.fire({"type": "set", "path": "/n", "value": 100})
    assert_problem(caught.value, 403, "forbidden")
    assert secured.client("r3ad-s3cret").state() == {"n": 1}


# ---------------------------------------------------------------------------------------------
# Server errors


def test_too_many_connections_is_a_server_error(reactord):
    server = reactord("--max-connections", "1")
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as held:
        held.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        assert held.recv(1024).startswith(b"HTTP/1.1 200")  # it is counted by now
        client = server.client()
        with pytest.raises(ReactorServerError) as caught:
            client.state()
        assert_problem(caught.value, 503, "too-many-connections")
        assert "retryAfter" not in caught.value.problem and caught.value.retry_after == 1  # the header's
        assert client.health() is False

        async def subscribe():
            with pytest.raises(ReactorServerError) as caught:
                async with client.subscribe():
                    pass
            assert caught.value.status == 503 and caught.value.retry_after == 1

        run(subscribe())
    # Once the held connection is closed it serves again. The server notices closes
    # asynchronously and each request here is a connection of its own, so with a limit of one
    # the next request may still find the previous one's slot taken: retry for a while.
    deadline = time.monotonic() + 5
    while True:
        try:
            assert client.state() == {}
            break
        except ReactorServerError as error:
            assert error.status == 503 and time.monotonic() < deadline, "the server never freed the slot"
            time.sleep(0.02)


def test_an_error_that_is_not_a_problem_still_raises_reactor_error():
    """A proxy in front of reactord may answer with HTML: the client makes a problem of it."""

    handler = answering_handler(502, b"<html>upstream is down</html>", {"Content-Type": "text/html"}, reason="Bad Gateway")
    with stub_http_server(handler) as url:
        with pytest.raises(ReactorServerError) as caught:
            Client(url, timeout=2).state()
        error = caught.value
        assert error.status == 502 and error.type == "about:blank" and error.title == "Bad Gateway"
        assert "upstream is down" in str(error)


@pytest.mark.parametrize(
    "problem, header, seconds",
    [
        ({"type": "/problems/rate-limited", "status": 429, "retryAfter": 3}, "5", 3),  # the problem's first
        ({"type": "/problems/journal-unavailable", "status": 503}, "7", 7),
        ({"type": "/problems/journal-unavailable", "status": 503}, "HTTP-date", 60),
        ({"type": "/problems/journal-unavailable", "status": 503}, "soon", None),
        ({"type": "/problems/event-rejected", "status": 422}, None, None),
    ],
    ids=["problem", "header", "date", "unreadable", "none"],
)
def test_retry_after_comes_from_the_problem_else_from_the_header(problem, header, seconds):
    if header == "HTTP-date":
        header = email.utils.formatdate(time.time() + 60, usegmt=True)

    headers = {"Content-Type": "application/problem+json"} | ({"Retry-After": header} if header is not None else {})
    with stub_http_server(answering_handler(problem["status"], json.dumps(problem).encode(), headers)) as url:
        with pytest.raises(ReactorError) as caught:
            Client(url, timeout=2).state()
        with pytest.raises(ReactorError) as async_caught:

            async def read():
                async with AsyncClient(url, timeout=2) as client:
                    await client.state()

            run(read())
    for error in (caught.value, async_caught.value):
        if seconds is None:
            assert error.retry_after is None
        else:
            assert error.retry_after == pytest.approx(seconds, abs=2)
