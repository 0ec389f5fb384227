"""GET /stream: Server-Sent Events, read with `curl -N` (and a raw socket where curl cannot help):
retry, then snapshot and patch records; path, mode, since and Last-Event-ID; errors; heartbeats."""

from __future__ import annotations

import json
import signal
import socket
import time

import pytest

from conftest import HOST, assert_problem, curl_response, get_state, http_request, post_events, raw
from sse import CurlStream, finished_stream, id_version
from subscriptions import apply_patch, assert_same_json, query_string, without_history


def fire(server, event) -> int:
    answer = post_events(server, event)
    assert answer.status == 200, answer
    return answer.json()["version"]


def test_stream_with_curl_n_snapshot_then_patches(server):
    fire(server, {"type": "set", "path": "/players", "value": [{"name": "Ayla"}]})
    with CurlStream(server) as stream:
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers.get("cache-control") == "no-cache"
        assert stream.record() == {"retry": "1000"}
        record, snapshot = stream.message()
        assert id_version(record) == "1" and record["event"] == "snapshot"
        assert without_history(snapshot) == {"type": "snapshot", "version": 1, "state": {"players": [{"name": "Ayla"}]}}
        mirror = snapshot["state"]
        events = [
            {"type": "append", "path": "/players", "value": {"name": "Bo", "tags": ["new", "line\nbreak"]}},
            {"type": "increment", "path": "/players/0/level", "by": 2},
            {"type": "patch", "ops": [{"op": "move", "from": "/players/1", "path": "/players/0"}]},
            {"type": "remove", "path": "/players/1/level"},
        ]
        for event in events:
            version = fire(server, event)
            record, message = stream.message()
            assert (id_version(record), record["event"]) == (str(version), "patch")
            assert message["type"] == "patch" and message["version"] == version
            mirror = apply_patch(mirror, message["ops"])
            assert_same_json(mirror, get_state(server))


def test_last_event_id_resumes_with_the_missed_patches(server):
    for _ in range(5):
        fire(server, {"type": "increment", "path": "/n"})
    status, _, records = finished_stream(server, "/stream", "-H", "Last-Event-ID: 2")
    assert status == 200
    assert records[0] == {"retry": "1000"}
    assert [(id_version(r), r["event"]) for r in records[1:]] == [("3", "patch"), ("4", "patch"), ("5", "patch")]
    state = {"n": 2}
    for record in records[1:]:
        state = apply_patch(state, json.loads(record["data"])["ops"])
    assert state == get_state(server)
    # since= in the query does the same; the current version sends nothing.
    _, _, records = finished_stream(server, "/stream?since=4")
    assert [(id_version(r), r["event"]) for r in records[1:]] == [("5", "patch")]
    _, _, records = finished_stream(server, "/stream", "-H", "Last-Event-ID: 5")
    assert records == [{"retry": "1000"}]


def test_event_ids_name_their_history_which_last_event_id_is_checked_against(server):
    for _ in range(3):
        fire(server, {"type": "increment", "path": "/n"})
    _, _, records = finished_stream(server, "/stream?since=1", seconds=0.5)
    history = get_snapshot_history(server)
    assert [r["id"] for r in records[1:]] == [f"2-{history}", f"3-{history}"]
    # The id as the browser sends it back: the patches after it, in this history.
    _, _, records = finished_stream(server, "/stream", "-H", f"Last-Event-ID: 1-{history}", seconds=0.5)
    assert [r["id"] for r in records[1:]] == [f"2-{history}", f"3-{history}"]
    # Of another history (a server that started over since): a fresh snapshot, not these patches.
    _, _, records = finished_stream(server, "/stream", "-H", "Last-Event-ID: 1-0123456789abcdef", seconds=0.5)
    assert [r["id"] for r in records[1:]] == [f"3-{history}"]
    assert without_history(json.loads(records[1]["data"])) == {"type": "snapshot", "version": 3, "state": {"n": 3}, "resumed": False}
    # Even at the version this server is at.
    _, _, records = finished_stream(server, "/stream", "-H", "Last-Event-ID: 3-0123456789abcdef", seconds=0.5)
    assert [(r["id"], r["event"]) for r in records[1:]] == [(f"3-{history}", "snapshot")]
    # The header wins over the query: an EventSource reconnects to the URL it was opened with.
    _, _, records = finished_stream(server, "/stream?since=1", "-H", f"Last-Event-ID: 2-{history}", seconds=0.5)
    assert [(r["id"], r["event"]) for r in records[1:]] == [(f"3-{history}", "patch")]
    _, _, records = finished_stream(server, "/stream?since=1", "-H", "Last-Event-ID: 2-0123456789abcdef", seconds=0.5)
    assert [(r["id"], r["event"]) for r in records[1:]] == [(f"3-{history}", "snapshot")]


def get_snapshot_history(server) -> str:
    _, _, records = finished_stream(server, "/stream", seconds=0.5)
    return json.loads(records[1]["data"])["history"]


def test_last_event_id_too_old_gets_a_snapshot_with_resumed_false(reactord):
    server = reactord("--resume-window", "5")
    for _ in range(20):
        fire(server, {"type": "increment", "path": "/n"})
    _, _, records = finished_stream(server, "/stream", "-H", "Last-Event-ID: 3")
    assert [(id_version(r), r["event"]) for r in records[1:]] == [("20", "snapshot")]
    assert without_history(json.loads(records[1]["data"])) == {"type": "snapshot", "version": 20, "state": {"n": 20}, "resumed": False}


def test_stream_a_path_in_state_mode(server):
    fire(server, {"type": "set", "path": "/game", "value": {"score": 1}})
    with CurlStream(server, "/stream" + query_string(path="/game/score", mode="state")) as stream:
        stream.record()  # retry
        record, message = stream.message()
        assert without_history(message) == {"type": "snapshot", "version": 1, "state": 1}
        fire(server, {"type": "set", "path": "/other", "value": True})
        stream.assert_silent(0.5)
        version = fire(server, {"type": "increment", "path": "/game/score", "by": 41})
        record, message = stream.message()
        assert record["event"] == "state" and id_version(record) == str(version)
        assert message == {"type": "state", "version": version, "state": 42}


def test_stream_resume_of_a_path_selection(server):
    fire(server, {"type": "set", "path": "", "value": {"a": [1], "b": 0}})
    fire(server, {"type": "append", "path": "/a", "value": 2})
    last = fire(server, {"type": "increment", "path": "/b"})
    _, _, records = finished_stream(server, "/stream?path=/a", "-H", "Last-Event-ID: 1")
    assert len(records) == 2 and records[1]["event"] == "patch" and id_version(records[1]) == str(last)
    assert json.loads(records[1]["data"])["ops"] == [{"op": "replace", "path": "", "value": [1, 2]}]


@pytest.mark.parametrize("query", ["mode=all", "since=x", "path=a"])
def test_stream_bad_parameters_are_400(server, query):
    answer = curl_response(f"http://{HOST}:{server.port}/stream?{query}")
    assert_problem(answer, 400, "invalid-parameter")


@pytest.mark.parametrize("value", ["abc", "3-", "-0123456789abcdef", "3-a b", "3@0123456789abcdef"])
def test_a_last_event_id_this_server_did_not_write_gets_a_fresh_snapshot(server, value):
    """An EventSource ends for good on an answer that is not 200: an id it cannot read (another
    server's, of another format) resumes nowhere, with a fresh snapshot."""
    for _ in range(3):
        fire(server, {"type": "increment", "path": "/n"})
    status, _, records = finished_stream(server, "/stream?since=1", "-H", f"Last-Event-ID: {value}", seconds=0.5)
    assert status == 200
    assert [(id_version(r), r["event"]) for r in records[1:]] == [("3", "snapshot")]
    assert without_history(json.loads(records[1]["data"])) == {"type": "snapshot", "version": 3, "state": {"n": 3}, "resumed": False}


def test_stream_needs_the_read_scope(reactord):
    server = reactord("--token", "reader:r3ad-s3cret:read", "--token", "firer:f1re-s3cret:fire")
    answer = curl_response(f"http://{HOST}:{server.port}/stream")
    assert_problem(answer, 401, "unauthorized")
    answer = curl_response(f"http://{HOST}:{server.port}/stream", "-H", "Authorization: Bearer f1re-s3cret")
    assert_problem(answer, 403, "forbidden")
    status, _, records = finished_stream(server, "/stream?access_token=r3ad-s3cret", seconds=1)
    assert status == 200 and records[1]["event"] == "snapshot"


def test_stream_heartbeat_comments(server):
    with raw(server, timeout=20) as connection:
        connection.send(http_request("GET", "/stream"))
        version, status, _, headers = connection.read_head()
        assert status == 200
        started = time.monotonic()
        connection.read_until(b"retry: 1000\n\n")
        connection.read_until(b"\n\n")  # the snapshot
        connection.read_until(b": heartbeat\n\n")
        assert 13 <= time.monotonic() - started <= 18


def test_sigterm_ends_streams_and_exits_0(reactord):
    server = reactord()
    with CurlStream(server) as stream:
        stream.record()
        stream.message()
        server.signal(signal.SIGTERM)
        with pytest.raises(EOFError):
            stream.record(timeout=5)
        assert server.wait() == 0
        assert stream.process.wait(5) == 0


def test_a_record_bigger_than_the_bound_still_reaches_an_idle_stream(reactord):
    """As over WebSocket: one record larger than --max-unsent-bytes must not strand a stream that
    has nothing unsent."""
    server = reactord("--max-unsent-bytes", "1024")
    with CurlStream(server) as stream:
        stream.record()
        assert stream.message()[1]["version"] == 0
        version = fire(server, {"type": "set", "path": "/big", "value": "x" * 2000})
        record, message = stream.message(timeout=5)
        assert message["version"] == version


def test_requests_pipelined_after_a_stream_are_not_answered_nor_left_subscribed(server):
    """A stream takes the connection over, as an upgrade does: requests a client pipelined after it
    get no answer and subscribe nothing, and closing the connection ends its one subscription."""
    from prometheus import scrape

    for _ in range(3):
        sock = socket.create_connection((HOST, server.port), timeout=5)
        sock.sendall(b"".join(b"GET /stream?path=/p%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % i for i in range(50)))
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert scrape(server).value("reactor_subscribers") == 1
        sock.close()
        deadline = time.monotonic() + 5
        while scrape(server).value("reactor_subscribers") != 0:
            assert time.monotonic() < deadline, "a closed connection left subscribers behind"
            time.sleep(0.05)
    assert fire(server, {"type": "set", "path": "/p1", "value": 1}) == 1


@pytest.mark.parametrize("offer", ["", "Connection: Upgrade\r\nUpgrade: h2c\r\n"], ids=["plain", "declined-upgrade"])
def test_writes_pipelined_after_a_stream_are_not_applied(server, offer):
    sock = socket.create_connection((HOST, server.port), timeout=5)
    post = json.dumps({"type": "set", "path": "/x", "value": "applied"}).encode()
    sock.sendall(f"GET /stream HTTP/1.1\r\nHost: localhost\r\n{offer}\r\n".encode()
                 + (b"POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(post), post)) * 3)
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    time.sleep(0.3)
    sock.close()
    assert get_state(server) == {}
