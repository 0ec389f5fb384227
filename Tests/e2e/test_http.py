"""HTTP/1.1 on the wire, over raw sockets: keep-alive, pipelining, chunked bodies, 100-continue,
HTTP/1.0, broken requests, limits and timeouts."""

from __future__ import annotations

import json
import re
import socket
import struct
import time

import pytest

from conftest import RawConnection, assert_problem, curl_response, event_request, get_state, http_request, raw, wait_until


def test_keep_alive_is_the_default_in_http_1_1(server):
    with raw(server) as conn:
        for _ in range(3):
            conn.send(http_request("GET", "/livez"))
            answer = conn.read_response()
            assert answer.status == 200
            assert answer.header("Connection") is None
            assert answer.json() == {"status": "live"}
        assert not conn.is_closed(0.3)


def test_pipelined_responses_come_in_request_order(server):
    requests = [
        event_request({"type": "set", "path": "/a", "value": 1}),
        http_request("GET", "/state"),
        http_request("GET", "/nope"),
        event_request({"type": "increment", "path": "/a", "by": 10}),
        http_request("HEAD", "/state"),
        http_request("GET", "/state?path=/a"),
        http_request("GET", "/livez"),
    ]
    with raw(server) as conn:
        conn.send(b"".join(requests))  # one write: the server sees them all at once
        answers = [conn.read_response(head_request=(i == 4)) for i in range(len(requests))]
    assert [a.status for a in answers] == [200, 200, 404, 200, 200, 200, 200]
    assert answers[0].json() == {"version": 1}
    assert answers[1].json() == {"a": 1}
    assert answers[3].json() == {"version": 2}
    assert answers[4].header("ETag") == '"2"' and answers[4].body == b""
    assert answers[5].json() == 11
    assert answers[6].json() == {"status": "live"}


def test_many_pipelined_requests_all_get_answers(server):
    count = 200  # more than the server reads ahead before it stops reading
    with raw(server, timeout=10) as conn:
        conn.send(b"".join(event_request({"type": "append", "path": "/l", "value": i}) for i in range(count)))
        versions = [conn.read_response().json()["version"] for _ in range(count)]
    assert versions == list(range(1, count + 1))
    assert get_state(server) == {"l": list(range(count))}


def test_pipelined_answers_larger_than_the_write_batch_keep_their_order(server):
    # The loop holds what a turn writes in one 64 KiB batch: answers past its end flush it, and one
    # larger than the whole batch goes straight out after what was held. Order and bytes must hold.
    big = "x" * 100_000
    with raw(server, timeout=10) as conn:
        conn.send(event_request({"type": "set", "path": "/big", "value": big}))
        assert conn.read_response().json() == {"version": 1}
        small = 400  # about 60 KiB of answers before and after the big one
        requests = [http_request("GET", "/livez")] * small + [http_request("GET", "/state?path=/big")] \
            + [http_request("GET", f"/state?path=/n{i}") for i in range(small)]
        conn.send(b"".join(requests))
        answers = [conn.read_response() for _ in range(len(requests))]
    assert all(a.status == 200 and a.json() == {"status": "live"} for a in answers[:small])
    assert answers[small].status == 200 and answers[small].json() == big
    assert [a.status for a in answers[small + 1:]] == [404] * small
    assert all(f"/n{i}" in a.json()["detail"] for i, a in enumerate(answers[small + 1:]))


def test_pipelined_requests_with_a_journal_each_get_their_own_answer(reactord, tmp_path):
    # With a journal an event's answer waits for its fsync while the requests after it are read and
    # answered: each request's context (reused once nothing holds it) must still carry its own answer.
    server = reactord("--data-dir", str(tmp_path / "data"))
    requests = []
    for i in range(40):
        requests.append(event_request({"type": "append", "path": "/l", "value": i}))
        requests.append(http_request("GET", "/livez") if i % 2 else http_request("GET", f"/state?path=/nope{i}"))
    with raw(server, timeout=10) as conn:
        conn.send(b"".join(requests))
        answers = [conn.read_response() for _ in range(len(requests))]
    for i in range(40):
        assert answers[2 * i].json() == {"version": i + 1}, (i, answers[2 * i])
        other = answers[2 * i + 1]
        assert (other.status, other.json()) == ((200, {"status": "live"}) if i % 2 else (404, other.json())), (i, other)
        if not i % 2:
            assert other.json()["detail"].find(f"/nope{i}") >= 0, other.json()
    assert get_state(server) == {"l": list(range(40))}


def test_a_read_pipelined_after_a_write_sees_it(reactord, tmp_path):
    # With a journal a write is answered once written down; a read pipelined behind it on the same
    # connection waits for that answer rather than reading the state from before it.
    server = reactord("--data-dir", str(tmp_path / "data"))
    requests = []
    for i in range(20):
        requests.append(event_request({"type": "set", "path": "/q", "value": i}))
        requests.append(http_request("GET", "/state?path=/q"))
        requests.append(http_request("HEAD", "/state"))
    requests.append(http_request("GET", "/readyz"))
    with raw(server, timeout=10) as conn:
        conn.send(b"".join(requests))
        answers = [conn.read_response(head_request=(i % 3 == 2 and i < 60)) for i in range(len(requests))]
    for i in range(20):
        write, read, head = answers[3 * i : 3 * i + 3]
        assert write.json() == {"version": i + 1}, (i, write)
        assert (read.status, read.json()) == (200, i), (i, read)
        assert read.header("ETag") == f'"{i + 1}"' and head.header("ETag") == f'"{i + 1}"', (i, read, head)
    assert answers[-1].json()["version"] == 20, answers[-1]


def test_request_split_into_single_bytes(server):
    data = event_request({"type": "set", "path": "/slow", "value": "ok"})
    with raw(server) as conn:
        for i in range(len(data)):
            conn.send(data[i : i + 1])
        assert conn.read_response().json() == {"version": 1}
    assert get_state(server) == {"slow": "ok"}


def test_chunked_request_body(server):
    body = json.dumps([{"type": "set", "path": "/a", "value": "x" * 50}, {"type": "increment", "path": "/n"}]).encode()
    parts = [body[:10], body[10:11], body[11:70], body[70:]]
    head = (
        "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    with raw(server) as conn:
        conn.send(head)
        for index, part in enumerate(parts):
            extension = ";note=yes" if index == 1 else ""
            conn.send(f"{len(part):x}{extension}\r\n".encode() + part + b"\r\n")
            time.sleep(0.02)
        conn.send("0\r\nX-Trailer: done\r\n\r\n")
        answer = conn.read_response()
        assert answer.status == 200, answer
        assert answer.json() == {"version": 2, "applied": 2}
        # The connection is still good for the next request.
        conn.send(http_request("GET", "/state?path=/n"))
        assert conn.read_response().json() == 1


def test_expect_100_continue(server):
    body = json.dumps({"type": "set", "path": "/c", "value": True}).encode()
    head = (
        "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Expect: 100-continue\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with raw(server) as conn:
        conn.send(head)
        # The server must invite the body before the client sends it.
        assert conn.read_until(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        conn.send(body)
        answer = conn.read_response()
        assert answer.status == 200 and answer.json() == {"version": 1}


def test_a_pipelined_100_continue_follows_the_answers_due_before_it(reactord, tmp_path):
    """RFC 9110 §15.2: interim responses go in request order too. A POST whose answer waits for
    an fsync, then a POST asking for 100-continue: the 100 comes after the first POST's 200, not
    before it (where a client takes it for the first request's)."""
    server = reactord("--data-dir", str(tmp_path / "data"), "--fsync", "always")
    body = json.dumps({"type": "increment", "path": "/c"}).encode()
    first = http_request("POST", "/events", body, {"Content-Type": "application/json"})
    second = ("POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              f"Expect: 100-continue\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with raw(server) as conn:
        conn.send(first + second)
        answer = conn.read_response()
        assert answer.status == 200 and answer.json() == {"version": 1}, answer
        assert answer.interim == [], "the 100 Continue for the second request came before the first's answer"
        assert conn.read_until(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        conn.send(body)
        answer = conn.read_response()
        assert answer.status == 200 and answer.json() == {"version": 2}, answer


def test_expect_100_continue_with_curl(server):
    body = json.dumps({"type": "set", "path": "/big", "value": "x" * 2000}).encode()
    answer = curl_response(
        f"{server.base_url}/events", "-H", "Content-Type: application/json", "-H", "Expect: 100-continue",
        "--expect100-timeout", "5", "--data-binary", "@-", input=body,
    )
    assert answer.interim == [100]
    assert answer.status == 200 and answer.json() == {"version": 1}


def test_http_1_0_closes_after_the_response(server):
    with raw(server) as conn:
        conn.send(http_request("GET", "/livez", version="HTTP/1.0"))
        answer = conn.read_response()
        assert answer.status == 200
        assert answer.header("Connection") == "close"
        assert conn.is_closed()


def test_http_1_0_keep_alive_on_request(server):
    with raw(server) as conn:
        for _ in range(2):
            conn.send(http_request("GET", "/livez", headers={"Connection": "keep-alive"}, version="HTTP/1.0"))
            answer = conn.read_response()
            assert answer.status == 200
            assert answer.version == "HTTP/1.1"
            assert answer.header("Connection").lower() == "keep-alive"
        assert not conn.is_closed(0.3)


def test_connection_close_is_honoured(server):
    with raw(server) as conn:
        conn.send(http_request("GET", "/livez", headers={"Connection": "close"}) + http_request("GET", "/readyz"))
        answer = conn.read_response()
        assert answer.status == 200
        assert answer.header("Connection") == "close"
        # Nothing after the request that asked to close is answered.
        assert conn.is_closed()


def test_head_has_length_but_no_body(server):
    with raw(server) as conn:
        conn.send(http_request("HEAD", "/state") + http_request("GET", "/livez"))
        head = conn.read_response(head_request=True)
        assert head.status == 200 and head.header("Content-Length") == "2"
        # The next bytes on the wire are the next response, not a body.
        assert conn.read_response().json() == {"status": "live"}


def test_half_closed_client_still_gets_its_answers(server):
    with raw(server) as conn:
        conn.send(event_request({"type": "set", "path": "/a", "value": 1}) + http_request("GET", "/state"))
        conn.sock.shutdown(socket.SHUT_WR)
        assert conn.read_response().json() == {"version": 1}
        assert conn.read_response().json() == {"a": 1}
        assert conn.is_closed()


# --- broken requests -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        "GET /state HTTP/1.1\r\nHost: localhost\r\nBad Header: x\r\n\r\n",
        "GET /state HTTP/1.1\r\nHost: localhost\r\nNoColon\r\n\r\n",
        "GET /state HTTP/1.1 extra\r\nHost: localhost\r\n\r\n",
        "GET  HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n",
        "POST /events HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    ],
    ids=["space-in-name", "no-colon", "junk-after-version", "no-target", "length-and-chunked", "two-lengths", "bad-length", "bad-chunk-size"],
)
def test_malformed_http_is_400_then_close(server, data):
    with raw(server) as conn:
        conn.send(data)
        assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()
    # The server is fine afterwards.
    assert get_state(server) == {}


def test_malformed_request_after_a_good_one(server):
    with raw(server) as conn:
        conn.send(http_request("GET", "/livez") + b"GET /state HTTP/1.1\r\nHost: localhost\r\nBad Header: 1\r\n\r\n")
        assert conn.read_response().status == 200
        answer = conn.read_response()
        assert_problem(answer, 400, "malformed-request")
        assert answer.header("Connection") == "close"
        assert conn.is_closed()


@pytest.mark.parametrize("version", ["HTTP/2.0", "HTTP/1.2", "HTTP/3.0"])
def test_unsupported_http_version_is_505(server, version):
    with raw(server) as conn:
        conn.send(f"GET /state {version}\r\nHost: localhost\r\n\r\n")
        assert_problem(conn.read_response(), 505, "http-version-not-supported")
        assert conn.is_closed()


def test_unknown_method_is_501(server):
    with raw(server) as conn:
        conn.send("BREW /state HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert_problem(conn.read_response(), 501, "not-implemented")
        assert conn.is_closed()


# --- limits --------------------------------------------------------------------------------------


def test_header_limit_is_431(reactord):
    server = reactord("--max-header-bytes", "1024")
    with raw(server) as conn:
        conn.send(http_request("GET", "/livez", headers={"X-Fill": "a" * 600}))
        assert conn.read_response().status == 200  # under the limit
        conn.send(http_request("GET", "/livez", headers={"X-Fill": "a" * 2000}))
        answer = conn.read_response()
        problem = assert_problem(answer, 431, "headers-too-large")
        assert problem["limit"] == 1024
        assert answer.header("Connection") == "close"
        assert conn.is_closed()


def test_header_limit_counts_many_small_headers(reactord):
    server = reactord("--max-header-bytes", "1024")
    with raw(server) as conn:
        conn.send(http_request("GET", "/livez", headers={f"X-H{i}": "v" * 20 for i in range(60)}))
        assert_problem(conn.read_response(), 431, "headers-too-large")
        assert conn.is_closed()


def test_body_limit_by_content_length_before_the_body(reactord):
    server = reactord("--max-body-bytes", "100")
    with raw(server) as conn:
        # Only the head is sent: the server must answer without waiting for the 101 bytes.
        conn.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 101\r\n\r\n")
        problem = assert_problem(conn.read_response(), 413, "body-too-large")
        assert problem["limit"] == 100
        assert conn.is_closed()


def test_body_limit_is_inclusive(reactord):
    server = reactord("--max-body-bytes", "100")
    body = json.dumps({"type": "set", "path": "/a", "value": 1}).encode()
    body += b" " * (100 - len(body))
    with raw(server) as conn:
        conn.send(http_request("POST", "/events", body, {"Content-Type": "application/json"}))
        assert conn.read_response().json() == {"version": 1}


def test_body_limit_while_reading_chunked(reactord):
    server = reactord("--max-body-bytes", "100")
    with raw(server) as conn:
        conn.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        conn.send("3c\r\n" + "[" + " " * 59 + "\r\n")  # 60 bytes: fine so far
        conn.send("3c\r\n" + " " * 60 + "\r\n")  # 120: over the limit, no terminating chunk yet
        assert_problem(conn.read_response(), 413, "body-too-large")
        assert conn.is_closed()
    assert get_state(server) == {}


def test_expect_100_continue_over_the_limit_gets_413_not_100(reactord):
    server = reactord("--max-body-bytes", "100")
    with raw(server) as conn:
        conn.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
        answer = conn.read_response()
        assert answer.interim == []
        assert_problem(answer, 413, "body-too-large")


def test_slowloris_cannot_hold_a_connection(reactord):
    server = reactord("--request-timeout", "1")
    with raw(server) as conn:
        started = time.monotonic()
        conn.send("GET /state HTTP/1.1\r\nHost: localhost\r\n")
        # Trickle a header byte every 0.2 s: each byte is progress, but the whole request is late.
        conn.sock.settimeout(0.2)
        for byte in "X-Slow: " + "a" * 40:
            try:
                conn.send(byte)
                if conn._fill() is not None:  # the server answered (or closed): stop trickling
                    break
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        conn.sock.settimeout(3)
        answer = conn.read_response()
        elapsed = time.monotonic() - started
        problem = assert_problem(answer, 408, "request-timeout")
        assert "1" in problem["detail"]
        assert answer.header("Connection") == "close"
        assert 0.9 <= elapsed <= 3.0, f"408 after {elapsed:.2f} s with --request-timeout 1"
        assert conn.is_closed()


def test_slow_body_times_out(reactord):
    server = reactord("--request-timeout", "1")
    with raw(server) as conn:
        started = time.monotonic()
        conn.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
        answer = conn.read_response()
        assert_problem(answer, 408, "request-timeout")
        assert 0.9 <= time.monotonic() - started <= 3.0
        assert conn.is_closed()
    assert get_state(server) == {}


def test_a_timed_out_connection_is_answered_once(reactord):
    # The connection lingers after its 408 until the client closes; the timeout must not fire again
    # on it (a second answer on a socket shut down for writing would tear down the first).
    server = reactord("--request-timeout", "1")
    with raw(server) as conn:
        conn.send("GET /state HTTP/1.1\r\nHo")
        assert_problem(conn.read_response(), 408, "request-timeout")
        time.sleep(1.0)
    server.wait_for_log(r"status=408")
    assert [re.search(r"status=(\d+)", line).group(1) for line in server.request_lines()] == ["408"], server.log()


def test_a_slow_request_does_not_delay_others(reactord):
    server = reactord("--request-timeout", "1")
    with raw(server) as slow:
        slow.send("GET /state HTTP/1.1\r\nHost: localhost\r\n")
        with raw(server) as fast:
            started = time.monotonic()
            fast.send(http_request("GET", "/livez"))
            assert fast.read_response().status == 200
            assert time.monotonic() - started < 1.0


def test_idle_keep_alive_connection_gets_408_then_close(reactord):
    server = reactord("--idle-timeout", "1")
    with raw(server) as conn:
        conn.send(http_request("GET", "/livez"))
        assert conn.read_response().status == 200
        started = time.monotonic()
        conn.sock.settimeout(3)
        answer = conn.read_response()
        elapsed = time.monotonic() - started
        assert_problem(answer, 408, "request-timeout")
        assert answer.header("Connection") == "close"
        assert 0.9 <= elapsed <= 3.0, f"408 after {elapsed:.2f} s idle with --idle-timeout 1"
        assert conn.is_closed()


def test_connection_that_never_sends_gets_408(reactord):
    server = reactord("--idle-timeout", "1")
    with raw(server) as conn:
        started = time.monotonic()
        assert_problem(conn.read_response(), 408, "request-timeout")
        assert 0.9 <= time.monotonic() - started <= 3.0
        assert conn.is_closed()


def test_activity_keeps_a_connection_alive(reactord):
    server = reactord("--idle-timeout", "1")
    with raw(server) as conn:
        for _ in range(5):  # 2 s in all, never idle for 1 s
            conn.send(http_request("GET", "/livez"))
            assert conn.read_response().status == 200
            time.sleep(0.4)


def test_too_many_connections_get_503_then_close(reactord):
    server = reactord("--max-connections", "2")
    first, second = raw(server), raw(server)
    try:
        for conn in (first, second):  # both are accepted and served
            conn.send(http_request("GET", "/livez"))
            assert conn.read_response().status == 200
        with raw(server) as third:
            answer = third.read_response()
            problem = assert_problem(answer, 503, "too-many-connections")
            assert answer.header("Retry-After") == "1"
            assert "2" in problem["detail"]
            assert third.is_closed()
        # The accepted ones still work.
        first.send(http_request("GET", "/livez"))
        assert first.read_response().status == 200
        # Once one leaves, a new client gets in.
        second.close()
        deadline = time.monotonic() + 3
        while True:
            with raw(server) as fourth:
                fourth.send(http_request("GET", "/livez"))
                answer = fourth.read_response()
            if answer.status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert answer.status == 200, answer
    finally:
        first.close()
        second.close()


def test_server_survives_abrupt_disconnects(server):
    for _ in range(20):
        conn = RawConnection(server.port)
        conn.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ty")
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
        conn.close()
    assert get_state(server) == {}


def test_default_body_limit_is_one_mebibyte(server):
    event = json.dumps({"type": "set", "path": "/blob", "value": ""}).encode()
    body = event[:-2] + b"x" * (1024 * 1024 - len(event)) + b'"}'
    assert len(body) == 1024 * 1024
    with raw(server, timeout=10) as conn:
        conn.send(http_request("POST", "/events", body, {"Content-Type": "application/json"}))
        assert conn.read_response().json() == {"version": 1}
        conn.send(http_request("POST", "/events", body + b" ", {"Content-Type": "application/json"}))
        assert_problem(conn.read_response(), 413, "body-too-large")
    assert len(get_state(server, "/state?path=/blob")) == 1024 * 1024 - len(event)


@pytest.mark.parametrize(
    "head",
    [
        "GET /state HTTP/1.1\r\n\r\n",
        "GET /state HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
        # An upgrade offer does not skip the rule, whether declined (h2c) or taken (WebSocket).
        "GET /state HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
        "POST /events HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n"
        "Content-Type: application/json\r\nContent-Length: 32\r\n\r\n{\"type\":\"increment\",\"path\":\"/h\"}",
        "GET /subscribe HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        "CONNECT a.test:443 HTTP/1.1\r\n\r\n",
    ],
    ids=["no-host", "two-hosts", "no-host-upgrade", "two-hosts-upgrade-post", "two-hosts-websocket", "connect-no-host"],
)
def test_http_1_1_request_needs_exactly_one_host(server, head):
    # RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
    # request message that lacks a Host header field and to any request message that contains
    # more than one Host header field line".
    with raw(server) as conn:
        conn.send(head)
        assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()


def test_connect_is_501_and_what_follows_is_not_read_as_a_request(server):
    """What follows a CONNECT's head is a tunnel's bytes: answered 501 and closed, never run as
    the next request."""
    with raw(server) as conn:
        conn.send("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\nContent-Length: 30\r\n\r\n"
                  "GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert_problem(conn.read_response(), 501, "not-implemented")
        assert conn.is_closed()


def test_http_1_0_request_without_host_is_fine(server):
    with raw(server) as conn:
        conn.send("GET /livez HTTP/1.0\r\n\r\n")
        assert conn.read_response().status == 200


def test_an_open_files_limit_too_low_for_max_connections_lowers_it_and_says_so(reactord):
    """With an open files limit below what --max-connections needs, reactord says so at start and
    takes fewer connections: past them a connection gets a 503 (counted), never a silent reset; once
    connections close, it serves again."""
    import resource

    from conftest import request
    from prometheus import scrape

    def limit_open_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    server = reactord(preexec_fn=limit_open_files)
    server.wait_for_log("the open files limit leaves too few descriptors for --max-connections")
    assert "taken=64" in server.log()
    idle = []
    try:
        for _ in range(64):
            connection = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            connection.sendall(b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert connection.recv(4096).startswith(b"HTTP/1.1 200")
            idle.append(connection)
        refused = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(20)]
        for connection in refused:
            connection.sendall(b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
            answer = connection.recv(4096)
            assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
            connection.close()
    finally:
        for connection in idle:
            connection.close()
    wait_until(lambda: request(server, "GET", "/livez").status == 200, 10, message="served again once connections closed")
    assert scrape(server).value("reactor_http_connections_refused_total", reason="max-connections") >= 20
