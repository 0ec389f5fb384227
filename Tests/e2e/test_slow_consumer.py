"""Slow consumers: a subscriber that stops reading must not hold the others back. With the
`snapshot` policy it loses its patches and converges through a fresh snapshot once it reads again;
with `close` it is closed with 4008."""

from __future__ import annotations

import contextlib
import json
import random
import socket
import string
import threading
import time

import pytest

from conftest import get_state, post_events, request, wait_until
from prometheus import scrape
from subscriptions import OP_CLOSE, OP_PING, OP_PONG, RawWebSocket, apply_patch, assert_same_json, next_json, subscribe

EVENTS = 2000  # about 7 MB of patches: more than the kernel buffers of a reader that stopped (about 3 MB here)
BATCH = 50
VALUE_BYTES = 3500  # each patch stays under the 4096-byte bound: see test_a_message_bigger_than_the_bound_*


def sizable_events(seed: int):
    """EVENTS events, each changing the state (so each has its own patch) by about VALUE_BYTES."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    for i in range(EVENTS):
        data = "".join(rng.choices(alphabet, k=VALUE_BYTES))
        if i % 3 == 2:
            yield {"type": "merge", "path": "/blob", "value": {"i": i, "data": data, "extra": {"k": i}}}
        else:
            yield {"type": "set", "path": "/blob", "value": {"i": i, "data": data}}


def fire_all(server, seed: int) -> int:
    events = list(sizable_events(seed))
    version = 0
    for start in range(0, len(events), BATCH):
        answer = post_events(server, events[start:start + BATCH])
        assert answer.status == 200, answer
        version = answer.json()["version"]
    return version


class FastReader(threading.Thread):
    """Reads a subscription as fast as it comes, recording every version and rebuilding the state."""

    def __init__(self, server, until: int):
        super().__init__(daemon=True)
        self.ws = subscribe(server)
        self.snapshot = next_json(self.ws)
        self.until = until
        self.versions: list[int] = []
        self.state = self.snapshot["state"]
        self.error: BaseException | None = None
        self.start()

    def run(self):
        try:
            while not self.versions or self.versions[-1] < self.until:
                message = next_json(self.ws, timeout=20)
                assert message["type"] == "patch", {k: message[k] for k in ("type", "version")}
                self.versions.append(message["version"])
                self.state = apply_patch(self.state, message["ops"])
        except BaseException as error:  # reported by check()
            self.error = error

    def check(self, final_version: int):
        self.join(25)
        assert not self.is_alive(), f"the fast subscriber got only {len(self.versions)} versions"
        if self.error:
            raise self.error
        assert self.versions == list(range(self.snapshot["version"] + 1, final_version + 1)), (
            f"the fast subscriber missed or reordered versions: {len(self.versions)} messages"
        )
        self.ws.close()


def test_a_slow_subscriber_is_conflated_and_converges_with_a_snapshot(reactord):
    server = reactord("--max-unsent-bytes", "4096")
    slow = RawWebSocket.connect(server, timeout=20, rcvbuf=4096)
    try:
        first = slow.recv_json()
        assert first["type"] == "snapshot" and first["version"] == 0
        fast = FastReader(server, until=EVENTS)
        started = time.monotonic()
        final_version = fire_all(server, seed=1)
        assert final_version == EVENTS
        fast.check(final_version)
        expected = get_state(server)
        assert_same_json(fast.state, expected, "the fast subscriber's state")

        # The slow one reads again: what was queued before it fell behind, then a fresh snapshot.
        mirror, version = first["state"], first["version"]
        patches = snapshots = 0
        while version < final_version:
            message = slow.recv_json()
            if message["type"] == "snapshot":
                snapshots += 1
                assert message["version"] >= version
                mirror, version = message["state"], message["version"]
            else:
                assert message["type"] == "patch"
                assert message["version"] == version + 1, "a patch after a gap: the snapshot must come first"
                mirror, version = apply_patch(mirror, message["ops"]), message["version"]
                patches += 1
        assert snapshots >= 1, "the slow subscriber was never conflated"
        assert patches < EVENTS - 100, f"the slow subscriber got {patches} patches: they were not dropped"
        print(f"slow subscriber: {patches} patches, then {snapshots} snapshot(s) at version {version}")
        assert version == final_version
        assert_same_json(mirror, expected, "the slow subscriber's state after its snapshot")
        server.wait_for_log("slow subscriber")

        # Then it gets patches again.
        answer = post_events(server, {"type": "increment", "path": "/after"})
        message = slow.recv_json()
        assert (message["type"], message["version"]) == ("patch", answer.json()["version"])
        assert time.monotonic() - started < 25
    finally:
        slow.close()


def test_a_slow_subscriber_is_closed_with_4008_under_the_close_policy(reactord):
    server = reactord("--max-unsent-bytes", "4096", "--slow-consumer", "close")
    slow = RawWebSocket.connect(server, timeout=20, rcvbuf=4096)
    try:
        assert slow.recv_json()["type"] == "snapshot"
        fast = FastReader(server, until=EVENTS)
        final_version = fire_all(server, seed=2)
        fast.check(final_version)
        assert_same_json(fast.state, get_state(server), "the fast subscriber's state")

        # Reading again: the patches sent before it fell behind, in order, then the close frame.
        last = 0
        while True:
            opcode, payload = slow.recv()
            if opcode == OP_CLOSE:
                break
            import json

            message = json.loads(payload)
            assert message["type"] == "patch" and message["version"] == last + 1
            last = message["version"]
        code = int.from_bytes(payload[:2], "big")
        assert code == 4008, payload
        assert last < final_version
        assert slow.is_closed(5)
        server.wait_for_log("slow subscriber closed")
        # The server is fine: a new subscriber gets the current state.
        with subscribe(server) as ws:
            assert next_json(ws)["version"] == final_version
        assert request(server, "GET", "/readyz").status == 200
    finally:
        slow.close()


def test_a_message_bigger_than_the_bound_still_reaches_an_idle_subscriber(reactord):
    """A subscriber with nothing unsent is not slow. One message larger than --max-unsent-bytes must
    still bring it to the new state (as the patch itself, or as a snapshot once its socket drains);
    it must not be left behind for good."""
    server = reactord("--max-unsent-bytes", "1024")
    with subscribe(server) as ws:
        assert next_json(ws)["version"] == 0
        version = post_events(server, {"type": "set", "path": "/big", "value": "x" * 2000}).json()["version"]
        message = next_json(ws, timeout=5)
        assert message["version"] == version, message
        state = message["state"] if message["type"] == "snapshot" else apply_patch({}, message["ops"])
        assert_same_json(state, get_state(server))
        # And the next, small change arrives as a patch.
        version = post_events(server, {"type": "increment", "path": "/n"}).json()["version"]
        message = next_json(ws, timeout=5)
        assert (message["type"], message["version"]) == ("patch", version)


def rss_kib(server) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def open_connections(server) -> float:
    return scrape(server).value("reactor_http_connections_open")


@pytest.mark.parametrize("offer", ["", "Connection: Upgrade\r\nUpgrade: h2c\r\n"], ids=["plain", "declined-upgrade"])
def test_a_client_that_pipelines_requests_and_reads_no_answers_holds_bounded_memory(reactord, offer):
    """HTTP answers are bounded like a subscriber's pushes: past --max-unsent-bytes unsent, the
    server reads no more of that client's requests until its answers drain, and a client that
    reads nothing for an idle timeout is let go. Before, a thousand pipelined GETs of a 100 KB
    state held 100 MB until the client closed; requests offering an upgrade the server declines
    (h2c) are bounded alike."""
    server = reactord("--max-unsent-bytes", "65536", "--idle-timeout", "3")
    assert post_events(server, {"type": "set", "path": "/blob", "value": "x" * 100_000}).status == 200
    before = rss_kib(server)
    stalled = socket.create_connection(("127.0.0.1", server.port))
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        stalled.sendall(f"GET /state HTTP/1.1\r\nHost: localhost\r\n{offer}\r\n".encode() * 1000)
        time.sleep(1.5)
        grown = rss_kib(server) - before
        assert grown < 20_000, f"the server holds {grown} KiB more for a client that reads nothing"
        # Everyone else is served meanwhile.
        assert request(server, "GET", "/state").status == 200
        # Reading nothing for the idle timeout, the client is let go.
        wait_until(lambda: open_connections(server) <= 1, 10, message="the stalled connection is closed")
    finally:
        stalled.close()


def test_a_websocket_client_that_fires_and_reads_no_answers_is_closed_with_4008(reactord):
    """An acknowledgement cannot be dropped as a patch can: a client firing with 100 KB ids and
    reading none of the answers is closed once more than --max-unsent-bytes of them wait."""
    server = reactord("--max-unsent-bytes", "65536")
    before = rss_kib(server)
    client = RawWebSocket.connect(server, timeout=20, rcvbuf=4096)
    try:
        assert client.recv_json()["type"] == "snapshot"
        big_id = "i" * 100_000
        sent = 0
        with contextlib.suppress(OSError):
            for _ in range(300):
                client.send_text(json.dumps({"type": "fire", "id": big_id, "event": {"type": "increment", "path": "/n"}}))
                sent += 1
        server.wait_for_log("slow client closed")
        grown = rss_kib(server) - before
        assert grown < 20_000, f"the server holds {grown} KiB more for a client that reads nothing"
        # Reading now: the answers sent before, then the close frame, unless the server already cut
        # the connection (a peer that reads nothing gets 2 s to take its close frame).
        acks, close = 0, None
        with contextlib.suppress(ConnectionError, OSError):
            while close is None:
                opcode, payload = client.recv()
                if opcode == OP_CLOSE:
                    close = int.from_bytes(payload[:2], "big")
                    break
                kind = json.loads(payload)["type"]
                assert kind in ("ack", "patch"), payload[:200]
                acks += kind == "ack"
        assert close in (4008, None), close
        assert acks < sent
        assert request(server, "GET", "/readyz").status == 200
    finally:
        client.close()


def test_a_websocket_client_that_pings_and_reads_nothing_holds_bounded_memory_and_is_let_go(reactord):
    """One pong waits in the output at a time, however many pings arrive; and pinging does not
    keep a client that reads none of what is sent to it: after the idle timeout it is closed."""
    server = reactord("--idle-timeout", "3")
    before = rss_kib(server)
    client = RawWebSocket.connect(server, timeout=20, rcvbuf=4096)
    try:
        started = time.monotonic()
        with contextlib.suppress(OSError):
            while time.monotonic() - started < 2:
                for _ in range(200):
                    client.send_frame(OP_PING, b"p" * 125)
        grown = rss_kib(server) - before
        assert grown < 20_000, f"the server holds {grown} KiB more for a client that pings and reads nothing"
        assert request(server, "GET", "/readyz").status == 200
        server.wait_for_log("subscriber closed: its client read none", timeout=15)
        wait_until(lambda: scrape(server).value("reactor_subscribers") == 0, 5, message="the stalled subscriber is gone")
    finally:
        client.close()


def test_a_ping_while_much_waits_unread_is_answered_once_the_output_drains_with_the_newest_payload(reactord):
    """Past 64 KiB waiting in the output, a ping is not answered at once; the newest one is, once
    the client has read what waited (RFC 6455 §5.5.3), and the next ping at once."""
    server = reactord("--max-unsent-bytes", "100000000", "--max-body-bytes", "4000000")
    client = RawWebSocket.connect(server, timeout=10, rcvbuf=4096)
    try:
        assert client.recv_json()["type"] == "snapshot"
        for i in range(4):
            assert post_events(server, {"type": "set", "path": "/big", "value": str(i) * 1_000_000}).status == 200
        time.sleep(0.3)
        client.send_frame(OP_PING, b"A")
        time.sleep(0.2)
        client.send_frame(OP_PING, b"B")
        pongs, patches = [], 0
        while patches < 4 or not pongs:
            _, opcode, payload = client.recv_frame()
            if opcode == OP_PONG:
                pongs.append(payload)
            else:
                patches += 1
        assert pongs[-1] == b"B", pongs
        client.send_frame(OP_PING, b"C")
        _, opcode, payload = client.recv_frame()
        assert (opcode, payload) == (OP_PONG, b"C")
    finally:
        client.close()


def test_an_event_stream_whose_client_reads_nothing_is_let_go_after_the_idle_timeout(reactord):
    server = reactord("--idle-timeout", "2", "--max-body-bytes", str(1 << 20))
    stalled = socket.create_connection(("127.0.0.1", server.port))
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        stalled.sendall(b"GET /stream HTTP/1.1\r\nHost: localhost\r\n\r\n")
        wait_until(lambda: scrape(server).value("reactor_subscribers") == 1, 5, message="the stream subscribed")
        for i in range(20):
            assert post_events(server, {"type": "set", "path": "/blob", "value": str(i) * 200_000}).status == 200
        server.wait_for_log("subscriber closed: its client read none", timeout=15)
        wait_until(lambda: scrape(server).value("reactor_subscribers") == 0, 5, message="the stalled stream is gone")
    finally:
        stalled.close()


def test_a_large_answer_read_slowly_is_not_cut_off_at_the_idle_timeout(reactord):
    """A client that reads, however slowly, is not one that reads nothing: a 4 MB state read in
    64 KB steps over several idle timeouts arrives whole."""
    server = reactord("--idle-timeout", "1", "--request-timeout", "1", "--max-body-bytes", str(8 << 20))
    blob = "y" * (4 << 20)
    assert post_events(server, {"type": "set", "path": "/blob", "value": blob}).status == 200
    slow = socket.create_connection(("127.0.0.1", server.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    try:
        slow.sendall(b"GET /state HTTP/1.1\r\nHost: localhost\r\n\r\n")
        received = b""
        started = time.monotonic()
        while True:
            chunk = slow.recv(65536)
            if not chunk:
                break
            received += chunk
            head, _, body = received.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))) if body else None
            if length is not None and len(body) >= length:
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        assert length is not None and len(body) >= length, f"the answer stopped after {len(received)} bytes, {elapsed:.1f} s in"
        assert elapsed > 1.5, f"read in {elapsed:.1f} s: not slower than the idle timeout, which proves nothing"
        assert json.loads(body[:length])["blob"] == blob
    finally:
        slow.close()
