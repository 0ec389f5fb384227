"""The WebSocket layer under /subscribe, with a raw-socket client: handshake errors, origins,
frame-level limits and violations, pings, and the close on shutdown."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import signal
import socket
import struct
import threading
import time

import pytest

from conftest import HOST, assert_problem, http_request, raw
from subscriptions import (
    OP_BINARY,
    OP_CLOSE,
    OP_PING,
    OP_TEXT,
    RawWebSocket,
    close_code,
    encode_frame,
    handshake_request,
    read_handshake_response,
    next_json,
    subscribe,
)


def handshake(server, target="/subscribe", headers=None, key=None):
    with raw(server) as connection:
        connection.send(handshake_request(target, headers, key))
        return read_handshake_response(connection)


# ---------------------------------------------------------------------------------------------
# The opening handshake


def test_a_valid_handshake_is_101_with_the_accept_key(server):
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    with RawWebSocket(server.port) as ws:
        ws.conn.send(handshake_request("/subscribe", {"Sec-WebSocket-Protocol": "other, reactor.v1"}, key))
        answer = read_handshake_response(ws.conn)
        assert answer.status == 101, answer
        assert answer.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        assert answer.header("Upgrade").lower() == "websocket"
        assert "upgrade" in answer.header("Connection").lower()
        assert answer.header("Sec-WebSocket-Protocol") == "reactor.v1"
        assert ws.recv_json()["type"] == "snapshot"


def test_no_subprotocol_is_chosen_when_none_offered_is_known(server):
    answer = handshake(server, headers={"Sec-WebSocket-Protocol": "graphql-ws"})
    assert answer.status == 101
    assert answer.header("Sec-WebSocket-Protocol") is None


def test_a_plain_get_is_426_with_upgrade_headers(server):
    with raw(server) as connection:
        connection.send(http_request("GET", "/subscribe"))
        answer = connection.read_response()
    assert_problem(answer, 426, "websocket-required")
    assert answer.header("Upgrade") == "websocket"
    assert answer.header("Sec-WebSocket-Version") == "13"


@pytest.mark.parametrize("version", ["8", "12", "14", "abc"])
def test_a_wrong_version_is_426_naming_13(server, version):
    answer = handshake(server, headers={"Sec-WebSocket-Version": version})
    assert_problem(answer, 426, "websocket-handshake")
    assert answer.header("Sec-WebSocket-Version") == "13"


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-WebSocket-Key": None},
        {"Sec-WebSocket-Key": "c2hvcnQ="},
        {"Sec-WebSocket-Key": "not base64 at all!!!!!=="},
        {"Sec-WebSocket-Version": None},
        {"Connection": None},
        {"Connection": "keep-alive"},
        {"Upgrade": "h2c"},
    ],
    ids=["no-key", "short-key", "bad-key", "no-version", "no-connection", "connection-without-upgrade", "upgrade-not-websocket"],
)
def test_other_bad_handshakes_are_400(server, headers):
    answer = handshake(server, headers=headers)
    assert_problem(answer, 400, "websocket-handshake")


def test_a_handshake_over_http_1_0_is_400(server):
    with raw(server) as connection:
        request = handshake_request("/subscribe").replace(b"HTTP/1.1", b"HTTP/1.0", 1)
        connection.send(request)
        answer = connection.read_response()
    assert answer.status == 400, answer


def test_websocket_origin_restricts_origins(reactord):
    server = reactord("--websocket-origin", "https://dash.example", "--websocket-origin", "https://ops.example")
    answer = handshake(server, headers={"Origin": "https://evil.example"})
    assert_problem(answer, 403, "websocket-handshake")
    assert handshake(server, headers={"Origin": "https://dash.example"}).status == 101
    assert handshake(server, headers={"Origin": "https://OPS.example"}).status == 101
    # Non-browser clients send no Origin: allowed.
    assert handshake(server).status == 101


def test_any_origin_without_the_flag_when_the_server_has_tokens(reactord):
    server = reactord("--token", "reader:r3ad-s3cret:read")
    answer = handshake(server, target="/subscribe?access_token=r3ad-s3cret", headers={"Origin": "https://anything.example"})
    assert answer.status == 101, answer


def test_without_tokens_only_the_servers_own_origin_and_the_cors_origins_may_open_one(reactord):
    """A page elsewhere in the local browser must not read and fire with nobody's token."""
    server = reactord("--cors-origin", "https://dash.example")
    answer = handshake(server, headers={"Origin": "https://evil.example"})
    problem = assert_problem(answer, 403, "websocket-handshake")
    assert "https://evil.example" in problem["detail"], problem
    # The server's own pages (the dashboard), as a browser sends it: Host with its port.
    assert handshake(server, headers={"Host": f"{HOST}:{server.port}", "Origin": f"http://{HOST}:{server.port}"}).status == 101
    assert handshake(server, headers={"Origin": "https://dash.example"}).status == 101
    assert handshake(server).status == 101, "a client that is no browser sends no Origin"
    # --cors-origin '*' says any page may: then any origin opens one too.
    anyone = reactord("--cors-origin", "*")
    assert handshake(anyone, headers={"Origin": "https://evil.example"}).status == 101


def test_without_tokens_a_request_for_another_host_name_is_refused(reactord):
    """DNS rebinding: a page's own name, re-pointed at 127.0.0.1, reaches the server as its own
    origin; the Host it carries gives it away."""
    server = reactord()
    answer = handshake(server, headers={"Host": f"rebind.attacker.example:{server.port}", "Origin": f"http://rebind.attacker.example:{server.port}"})
    problem = assert_problem(answer, 403, "host-not-allowed")
    assert "rebind.attacker.example" in problem["detail"] and "--insecure" in problem["detail"], problem
    for path in ("/state", "/history", "/metrics"):
        with raw(server) as connection:
            connection.send(f"GET {path} HTTP/1.1\r\nHost: rebind.attacker.example\r\n\r\n")
            assert_problem(connection.read_response(), 403, "host-not-allowed")
    with raw(server) as connection:
        connection.send('POST /events HTTP/1.1\r\nHost: rebind.attacker.example\r\nContent-Type: application/json\r\nContent-Length: 32\r\n\r\n{"type":"increment","path":"/n"}')
        assert_problem(connection.read_response(), 403, "host-not-allowed")
    for host in ("localhost", "localhost:1", "app.localhost", "127.0.0.1", "127.1.2.3:80", "[::1]:8080", "LOCALHOST."):
        with raw(server) as connection:
            connection.send(f"GET /state HTTP/1.1\r\nHost: {host}\r\n\r\n")
            assert connection.read_response().status == 200, host
    # Public routes answer anyone, as they do with tokens.
    with raw(server) as connection:
        connection.send("GET /livez HTTP/1.1\r\nHost: rebind.attacker.example\r\n\r\n")
        assert connection.read_response().status == 200
    # With --insecure, or with tokens, the Host is not checked.
    for flags in (["--insecure"], ["--token", "t:s3cret:read"]):
        other = reactord(*flags)
        with raw(other) as connection:
            auth = "Authorization: Bearer s3cret\r\n" if "--token" in flags else ""
            connection.send(f"GET /state HTTP/1.1\r\nHost: example.com\r\n{auth}\r\n")
            assert connection.read_response().status == 200, flags


def test_a_message_in_the_same_packet_as_the_handshake_is_read(server):
    with RawWebSocket(server.port) as ws:
        fire = encode_frame(OP_TEXT, json.dumps({"type": "fire", "id": 1, "event": {"type": "increment", "path": "/n"}}).encode())
        ws.conn.send(handshake_request("/subscribe") + fire)
        assert read_handshake_response(ws.conn).status == 101
        assert ws.recv_json()["type"] == "snapshot"
        assert ws.recv_json()["type"] == "patch"
        assert ws.recv_json() == {"type": "ack", "id": 1, "version": 1}


# ---------------------------------------------------------------------------------------------
# Frames


def test_a_message_over_max_message_bytes_closes_with_1009(reactord):
    server = reactord("--max-message-bytes", "2048")
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        ws.send_text(json.dumps({"type": "fire", "id": 1, "event": {"type": "set", "path": "/a", "value": "x" * 1900}}))
        assert ws.recv_json()["type"] == "patch"
        assert ws.recv_json()["type"] == "ack"
        ws.send_text(json.dumps({"type": "fire", "id": 2, "event": {"type": "set", "path": "/a", "value": "x" * 4096}}))
        assert ws.recv_close()[0] == 1009
        assert ws.is_closed()


def test_a_fragmented_message_over_the_limit_closes_with_1009(reactord):
    server = reactord("--max-message-bytes", "2048")
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        ws.send_frame(OP_TEXT, b"[" + b" " * 1500, fin=False)
        ws.send_frame(0, b" " * 1500, fin=True)
        assert ws.recv_close()[0] == 1009


def test_invalid_utf8_closes_with_1007(server):
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        ws.send_frame(OP_TEXT, b'{"type":"fire","id":"\xff\xfe"}')
        assert ws.recv_close()[0] == 1007


def test_an_unmasked_client_frame_closes_with_1002(server):
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        ws.send_frame(OP_TEXT, b'{"type":"fire"}', mask=False)
        assert ws.recv_close()[0] == 1002
        assert ws.is_closed()


def test_a_binary_message_closes_with_1003_raw(server):
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        ws.send_frame(OP_BINARY, b"\x00\x01")
        assert ws.recv_close()[0] == 1003


def test_reserved_bits_close_with_1002(server):
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        ws.send_frame(OP_TEXT, b"{}", rsv=4)
        assert ws.recv_close()[0] == 1002


def test_a_ping_is_answered_with_a_pong_and_a_close_is_echoed(server):
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        ws.send_frame(OP_PING, b"are you there")
        fin, opcode, payload = ws.recv_frame()
        assert (fin, opcode, payload) == (True, 0xA, b"are you there")
        ws.send_frame(OP_CLOSE, struct.pack("!H", 1000) + b"bye")
        assert ws.recv_close()[0] == 1000
        assert ws.is_closed()


# ---------------------------------------------------------------------------------------------
# Keep-alive pings


def test_a_quiet_peer_is_pinged_and_kept_while_it_answers(reactord):
    # Timers are checked every quarter of the shorter of the request and idle timeouts (2.5 s by
    # default): --request-timeout 2 makes that 0.5 s.
    server = reactord("--ping-interval", "0.5", "--request-timeout", "2")
    with RawWebSocket.connect(server) as ws:
        ws.recv_json()
        pings = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and pings < 3:
            fin, opcode, payload = ws.recv_frame()
            if opcode == OP_PING:
                pings += 1
                ws.send_frame(0xA, payload)
        assert pings == 3
        ws.send_json({"type": "fire", "id": 1, "event": {"type": "increment", "path": "/n"}})
        assert ws.recv_json()["type"] == "patch"


def test_a_peer_that_never_answers_a_ping_is_dropped(reactord):
    server = reactord("--ping-interval", "0.5", "--request-timeout", "2")
    with RawWebSocket.connect(server, timeout=15) as ws:
        ws.recv_json()
        started = time.monotonic()
        fin, opcode, payload = ws.recv_frame()
        assert opcode == OP_PING
        # No pong: dropped about 10 s after the ping.
        assert ws.is_closed(timeout=14)
        assert 9 <= time.monotonic() - started <= 12


# ---------------------------------------------------------------------------------------------
# Shutdown


def test_sigterm_closes_subscribers_with_1001_and_exits_0(reactord):
    server = reactord()
    sockets = [subscribe(server) for _ in range(3)]
    raw_ws = RawWebSocket.connect(server)
    try:
        for ws in sockets:
            assert next_json(ws)["type"] == "snapshot"
        raw_ws.recv_json()
        server.signal(signal.SIGTERM)
        for ws in sockets:
            assert close_code(ws) == 1001
        assert raw_ws.recv_close()[0] == 1001
        assert server.wait() == 0
    finally:
        raw_ws.close()
        for ws in sockets:
            ws.close()


def test_subscribers_resetting_their_connections_mid_fan_out_leave_the_server_serving(server):
    # Subscribers that vanish (half of them with a reset) while every event is pushed to them: their
    # pushes fail in the loop's write batch, or when they close with bytes still held there. Every
    # event fired meanwhile is answered, and the server stays up and exits cleanly (teardown checks).
    stop = threading.Event()
    rng = random.Random(7)

    def come_and_go():
        while not stop.is_set():
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            sock.sendall(handshake_request("/subscribe"))
            time.sleep(rng.random() * 0.02)
            try:
                sock.recv(65536)
            except OSError:
                pass
            if rng.random() < 0.5:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    churners = [threading.Thread(target=come_and_go) for _ in range(4)]
    for churner in churners:
        churner.start()
    try:
        count = 1500
        with raw(server, timeout=10) as connection:
            for i in range(count):
                connection.send(http_request("POST", "/events", json.dumps({"type": "increment", "path": "/n"}),
                                             {"Content-Type": "application/json"}))
                assert connection.read_response().json() == {"version": i + 1}
    finally:
        stop.set()
        for churner in churners:
            churner.join()
    with raw(server) as connection:
        connection.send(http_request("GET", "/state"))
        assert connection.read_response().json() == {"n": count}
