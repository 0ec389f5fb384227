"""Graceful shutdown: SIGTERM stops accepting, lets in-flight requests finish, then exits 0."""

from __future__ import annotations

import json
import signal
import socket
import time

from conftest import HOST, get_state, http_request, raw


def test_in_flight_request_finishes_after_sigterm(reactord):
    server = reactord()
    body = json.dumps({"type": "set", "path": "/saved", "value": "yes"}).encode()
    with raw(server) as conn:
        conn.send(f"POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        time.sleep(0.2)  # the server has read the start of the request
        server.signal(signal.SIGTERM)
        server.wait_for_log(r"stopping")
        time.sleep(0.3)
        assert server.process.poll() is None, "reactord exited with a request in flight"
        # New connections are no longer accepted.
        try:
            socket.create_connection((HOST, server.port), timeout=1).close()
            refused = False
        except ConnectionRefusedError:
            refused = True
        assert refused, "reactord still accepts connections after SIGTERM"
        conn.send(body[10:])
        answer = conn.read_response()
        assert answer.status == 200, answer
        assert answer.json() == {"version": 1}
        assert conn.is_closed()
    assert server.wait(5) == 0
    assert "version=1" in server.log().splitlines()[-1]


def test_pipelined_requests_are_answered_before_exit(reactord):
    server = reactord()
    with raw(server) as conn:
        conn.send(b"".join(
            http_request("POST", "/events", json.dumps({"type": "increment", "path": "/n"}), {"Content-Type": "application/json"})
            for _ in range(3)
        ) + b"GET /state HTTP/1.1\r\nHost: localhost\r\n")  # the last request is still incomplete
        for version in (1, 2, 3):
            assert conn.read_response().json() == {"version": version}
        server.signal(signal.SIGTERM)
        time.sleep(0.2)
        conn.send(b"\r\n")
        assert conn.read_response().json() == {"n": 3}
        assert conn.is_closed()
    assert server.wait(5) == 0


def test_idle_connections_do_not_delay_exit(reactord):
    server = reactord()
    with raw(server) as idle, raw(server) as used:
        used.send(http_request("GET", "/livez"))
        assert used.read_response().status == 200
        started = time.monotonic()
        server.signal(signal.SIGTERM)
        assert server.wait(5) == 0
        assert time.monotonic() - started < 2
        assert idle.is_closed(1) and used.is_closed(1)


def test_sigint_is_graceful_too(reactord):
    server = reactord()
    assert get_state(server) == {}
    server.signal(signal.SIGINT)
    assert server.wait(5) == 0
    assert "signal=SIGINT" in server.log()


def test_last_answer_before_shutdown_says_connection_close(reactord):
    # While draining, the server closes each connection after its in-flight answer. That answer
    # must say so (Connection: close, RFC 9112 §9.6), or a keep-alive client sends its next request
    # on a connection that is being closed and loses it.
    server = reactord()
    body = json.dumps({"type": "increment", "path": "/n"}).encode()
    with raw(server) as conn:
        conn.send(f"POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:5])
        time.sleep(0.2)
        server.signal(signal.SIGTERM)
        server.wait_for_log(r"stopping")
        conn.send(body[5:])
        answer = conn.read_response()
        assert answer.status == 200, answer
        assert answer.header("Connection") == "close", f"the answer before the server closes lacks Connection: close: {answer}"
        assert conn.is_closed()
    assert server.wait(5) == 0


def test_stalled_request_does_not_block_shutdown_beyond_its_timeout(reactord):
    server = reactord("--request-timeout", "1")
    with raw(server) as conn:
        conn.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{")
        time.sleep(0.1)
        started = time.monotonic()
        server.signal(signal.SIGTERM)
        assert server.wait(5) == 0
        assert time.monotonic() - started < 2.5
        assert conn.is_closed(1)


def test_websocket_fires_in_flight_at_sigterm_are_answered_before_the_close(reactord, tmp_path):
    """Events fired over a WebSocket and applied when SIGTERM arrives get their `ack` before the
    1001 close; a `fire` read after the shutdown began is refused (`shutting-down`), not applied. So
    every applied event was acknowledged: a client that retries what it got no `ack` for never
    applies one twice. `--fsync always` keeps each event in flight for an fsync of its own."""
    from websockets.sync.client import connect

    data = str(tmp_path / "data")
    server = reactord("--data-dir", data, "--fsync", "always")
    fires = 2_000
    acks = errors = 0
    with connect(f"ws://{HOST}:{server.port}/subscribe", open_timeout=5, close_timeout=5, ping_interval=None) as ws:
        assert json.loads(ws.recv(timeout=5))["type"] == "snapshot"
        for i in range(fires):
            ws.send(json.dumps({"type": "fire", "id": i, "event": {"type": "increment", "path": "/n"}}))
        time.sleep(0.05)  # read and applied by now, most of them still waiting for their fsync
        server.signal(signal.SIGTERM)
        try:
            while True:
                message = json.loads(ws.recv(timeout=10))
                if message["type"] == "ack":
                    acks += 1
                elif message["type"] == "error":
                    assert message["problem"]["type"].endswith("/shutting-down"), message
                    errors += 1
        except Exception as closed:  # the server's close ends the loop
            assert getattr(closed, "rcvd", None) is not None and closed.rcvd.code == 1001, repr(closed)
    assert server.wait(10) == 0
    assert acks > 0 and acks + errors <= fires, (acks, errors)
    restarted = reactord("--data-dir", data)
    assert get_state(restarted).get("n", 0) == acks, f"{acks} acks and {errors} refusals, but the journal holds {get_state(restarted)}"
