"""permessage-deflate (RFC 7692) on reactord's WebSockets: negotiated with Python's `websockets`
and with a raw socket; pushes compressed once per selection, in a stream whose context carries from
message to message, sent as the same bytes to every subscriber in step with it (a late subscriber
joins at the stream's next fresh start); each message compressed on its own, small ones left plain,
for a client that asks for server_no_context_takeover; compressed messages from clients inflated
within the message limit (a decompression bomb closes 1009 and costs nothing); the settings that
turn it off. Frames are inflated here with Python's zlib, one decompressor per connection kept
from message to message as a browser does, independently of the server's code."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from conftest import get_state, post_events
from subscriptions import OP_CLOSE, OP_PING, OP_TEXT, RawWebSocket, encode_frame, next_json, subscribe

OFFER = {"Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits", "Sec-WebSocket-Protocol": "reactor.v1"}
OFFER_NO_CONTEXT = {**OFFER, "Sec-WebSocket-Extensions": "permessage-deflate; server_no_context_takeover; client_max_window_bits"}
TAIL = b"\x00\x00\xff\xff"


def wide_object(count: int = 64) -> dict:
    """A realistic value: a few hundred bytes per entry, many entries."""
    return {f"player{i}": {"name": f"Player number {i}", "score": i * 10, "team": "red" if i % 2 else "blue",
                           "inventory": ["sword", "shield", "potion"], "position": {"x": i, "y": -i}} for i in range(count)}


def read_frame(ws: RawWebSocket) -> tuple[int, int, bytes]:
    """(first byte, opcode, payload) of the next frame other than a ping."""
    while True:
        _, opcode, payload = ws.recv_frame()
        if opcode != OP_PING:
            return ws.last_first_byte, opcode, payload


def message_of(ws: RawWebSocket, first: int, payload: bytes) -> dict:
    """The JSON message a text frame carries, inflated when RSV1 says it is compressed, by the
    connection's one decompressor (its window kept, as the server may refer back to it)."""
    if first & 0x40:
        if not hasattr(ws, "inflater"):
            ws.inflater = zlib.decompressobj(wbits=-15)
        payload = ws.inflater.decompress(payload + TAIL)
    return json.loads(payload)


def next_message(ws: RawWebSocket) -> tuple[int, int, dict]:
    """(first byte, frame length, message) of the next data message."""
    first, _, payload = read_frame(ws)
    return first, len(payload), message_of(ws, first, payload)


def deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    compressed = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert compressed.endswith(TAIL)
    return compressed[:-4]


def test_websockets_negotiates_deflate_and_gets_every_message(server):
    post_events(server, {"type": "set", "path": "/players", "value": wide_object()})
    with subscribe(server, subprotocols=["reactor.v1"]) as ws:
        assert ws.response.headers["Sec-WebSocket-Extensions"] == "permessage-deflate; client_no_context_takeover"
        snapshot = next_json(ws)
        assert snapshot["state"]["players"] == wide_object()
        post_events(server, {"type": "set", "path": "/players/player3/score", "value": 7})
        assert next_json(ws)["ops"] == [{"op": "replace", "path": "/players/player3/score", "value": 7}]
        # The client compresses what it sends (client_no_context_takeover: each message on its own).
        for score in (1, 2):
            ws.send(json.dumps({"type": "fire", "id": f"f{score}", "event": {"type": "set", "path": "/players/player1/name", "value": "x" * 400 + str(score)}}))
            answers = [next_json(ws) for _ in range(2)]
            assert {answer["type"] for answer in answers} == {"ack", "patch"}, answers
    assert get_state(server)["players"]["player1"]["name"] == "x" * 400 + "2"


def test_pushes_come_from_a_stream_whose_context_carries_over(server):
    post_events(server, {"type": "set", "path": "/players", "value": wide_object()})
    with RawWebSocket.connect(server, headers=OFFER) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions") == "permessage-deflate; client_no_context_takeover"
        first, size, snapshot = next_message(ws)
        assert first & 0x40, "the snapshot is compressed"
        assert size * 4 < len(json.dumps(wide_object())), size
        assert snapshot["state"]["players"] == wide_object()
        sizes = []
        for n in range(1, 11):
            post_events(server, {"type": "set", "path": "/players/player5", "value": {**wide_object()["player5"], "score": n}})
            first, size, patch = next_message(ws)
            assert first & 0x40, "in the stream even a short patch is compressed"
            assert patch["version"] == n + 1 and patch["ops"][0]["value"]["score"] == n
            sizes.append(size)
        plain = len(json.dumps(patch, separators=(",", ":")))
        assert max(sizes[1:]) * 3 < plain, (sizes, plain)


def test_each_message_on_its_own_for_a_client_that_asks_and_small_ones_plain(server):
    post_events(server, {"type": "set", "path": "/players", "value": wide_object()})
    with RawWebSocket.connect(server, headers=OFFER_NO_CONTEXT) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions") == \
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
        first, _, payload = read_frame(ws)
        assert first & 0x40
        # Inflated with a fresh decompressor: nothing refers to an earlier message.
        assert json.loads(zlib.decompressobj(wbits=-15).decompress(payload + TAIL))["state"]["players"] == wide_object()
        post_events(server, {"type": "set", "path": "/players/player1", "value": {**wide_object()["player2"], "notes": "a longer note " * 20}})
        first, _, payload = read_frame(ws)
        assert first & 0x40
        assert json.loads(zlib.decompressobj(wbits=-15).decompress(payload + TAIL))["version"] == 2
        post_events(server, {"type": "increment", "path": "/n"})
        first, _, payload = read_frame(ws)
        assert not first & 0x40, "a patch under --compression-min-bytes (256) goes out plain"
        assert json.loads(payload)["ops"] == [{"op": "add", "path": "/n", "value": 1}]


def test_a_late_subscriber_joins_the_stream_at_its_next_fresh_start(server):
    with RawWebSocket.connect(server, headers=OFFER) as early:
        next_message(early)
        for n in range(3):
            post_events(server, {"type": "set", "path": f"/p{n}", "value": wide_object(2)})
            next_message(early)
        with RawWebSocket.connect(server, headers=OFFER) as late, RawWebSocket.connect(server, headers={"Sec-WebSocket-Protocol": "reactor.v1"}) as plain:
            next_message(late)
            next_message(plain)
            same = 0
            for n in range(20):
                post_events(server, {"type": "set", "path": f"/q{n % 4}", "value": {"n": n, **wide_object(1)}})
                frames = [read_frame(ws) for ws in (early, late, plain)]
                messages = [message_of(ws, first, payload) for ws, (first, _, payload) in zip((early, late, plain), frames)]
                assert messages[0] == messages[1] == messages[2] and messages[0]["version"] == n + 4
                same += frames[0] == frames[1]
            assert same >= 10, f"the late subscriber took the shared frames after a fresh start ({same} of 20)"


def test_every_subscriber_that_agreed_gets_the_same_compressed_bytes(server):
    with RawWebSocket.connect(server, headers=OFFER) as a, RawWebSocket.connect(server, headers=OFFER) as b, \
            RawWebSocket.connect(server, headers={"Sec-WebSocket-Protocol": "reactor.v1"}) as plain:
        assert plain.response.header("Sec-WebSocket-Extensions") is None
        for ws in (a, b, plain):
            next_message(ws)
        post_events(server, {"type": "set", "path": "/players", "value": wide_object(16)})
        frames = [read_frame(ws) for ws in (a, b, plain)]
        assert frames[0] == frames[1]
        assert frames[0][0] & 0x40 and not frames[2][0] & 0x40
        assert message_of(a, frames[0][0], frames[0][2]) == message_of(plain, frames[2][0], frames[2][2])


def test_a_decompression_bomb_closes_1009_and_the_server_serves_the_others(reactord):
    server = reactord("--max-message-bytes", "65536")
    bomb = deflate(json.dumps({"type": "fire", "event": {"type": "set", "path": "/x", "value": "a" * (50 << 20)}}).encode())
    assert len(bomb) < 65536
    with RawWebSocket.connect(server, headers=OFFER) as ws, subscribe(server) as other:
        read_frame(ws)
        next_json(other)
        ws.conn.send(encode_frame(OP_TEXT, bomb, rsv=0b100))
        first, opcode, payload = read_frame(ws)
        assert opcode == OP_CLOSE and struct.unpack("!H", payload[:2])[0] == 1009, payload
        post_events(server, {"type": "increment", "path": "/n"})
        assert next_json(other)["version"] == 1
    assert "x" not in get_state(server)


def test_a_compressed_message_that_is_not_deflate_data_closes_1007(server):
    with RawWebSocket.connect(server, headers=OFFER) as ws:
        read_frame(ws)
        ws.conn.send(encode_frame(OP_TEXT, b"\xff\xff\xff\xff not deflate", rsv=0b100))
        _, opcode, payload = read_frame(ws)
        assert opcode == OP_CLOSE and struct.unpack("!H", payload[:2])[0] == 1007, payload


def final_block(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FINISH)


@pytest.mark.parametrize("cut", [1, 3, 10])
def test_deflate_data_cut_short_closes_1007(server, cut):
    """A message must inflate whole: cut off inside a block it was once inflated as far as it
    went (and answered 400 malformed-json, the connection left open)."""
    message = json.dumps({"type": "fire", "id": 1, "event": {"type": "set", "path": "/a", "value": "x" * 200}}).encode()
    payload = deflate(message)[:-cut]
    with RawWebSocket.connect(server, headers=OFFER) as ws:
        read_frame(ws)
        ws.conn.send(encode_frame(OP_TEXT, payload, rsv=0b100))
        _, opcode, frame = read_frame(ws)
        assert opcode == OP_CLOSE and struct.unpack("!H", frame[:2])[0] == 1007, frame
    # A whole message, flushed or final, is taken.
    for payload in (deflate(message), final_block(message)):
        with RawWebSocket.connect(server, headers=OFFER) as ws:
            read_frame(ws)
            ws.conn.send(encode_frame(OP_TEXT, payload, rsv=0b100))
            _, _, answer = message_of_next(ws)
            assert answer["type"] == "ack", answer


def message_of_next(ws: RawWebSocket) -> tuple[int, int, dict]:
    """The next message that is not a push: an ack or an error."""
    while True:
        first, length, message = next_message(ws)
        if message.get("type") in ("ack", "error"):
            return first, length, message


def test_compressed_text_that_inflates_to_invalid_utf8_closes_1007(server):
    with RawWebSocket.connect(server, headers=OFFER) as ws:
        read_frame(ws)
        ws.conn.send(encode_frame(OP_TEXT, deflate(b'{"type":"\xff"}'), rsv=0b100))
        _, opcode, payload = read_frame(ws)
        assert opcode == OP_CLOSE and struct.unpack("!H", payload[:2])[0] == 1007, payload


def test_rsv1_without_the_extension_is_a_protocol_error(server):
    with RawWebSocket.connect(server, headers={"Sec-WebSocket-Protocol": "reactor.v1"}) as ws:
        read_frame(ws)
        ws.conn.send(encode_frame(OP_TEXT, deflate(b'{"type":"ping"}'), rsv=0b100))
        _, opcode, payload = read_frame(ws)
        assert opcode == OP_CLOSE and struct.unpack("!H", payload[:2])[0] == 1002, payload


def test_the_settings_turn_compression_off_or_lower_its_threshold(reactord):
    off = reactord("--no-websocket-compression")
    with RawWebSocket.connect(off, headers=OFFER) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions") is None
    everything = reactord(env={"REACTORD_COMPRESSION_MIN_BYTES": "0"})
    with RawWebSocket.connect(everything, headers=OFFER_NO_CONTEXT) as ws:
        next_message(ws)
        post_events(everything, {"type": "set", "path": "/s", "value": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})
        first, _, patch = next_message(ws)
        assert first & 0x40, "with a threshold of 0 even a short patch is compressed when that makes it smaller"
        assert patch["ops"][0]["path"] == "/s"


def test_an_unacceptable_offer_is_declined_not_refused(server):
    headers = {**OFFER, "Sec-WebSocket-Extensions": "permessage-deflate; server_max_window_bits=7, x-webkit-deflate-frame"}
    with RawWebSocket.connect(server, headers=headers) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions") is None
        first, _, snapshot = next_message(ws)
        assert not first & 0x40 and snapshot["type"] == "snapshot"


@pytest.mark.parametrize("bits", [15, 12])
def test_an_offer_naming_server_max_window_bits_gets_it_back(server, bits):
    """RFC 7692 §7.1.2.1: an answer to an offer with server_max_window_bits names it too, even at 15,
    or a client that asked for it must fail the connection (as `websockets` does)."""
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
    from websockets.sync.client import connect
    factory = ClientPerMessageDeflateFactory(server_max_window_bits=bits)
    with connect(f"ws://127.0.0.1:{server.port}/subscribe", subprotocols=["reactor.v1"], extensions=[factory], open_timeout=5) as ws:
        assert f"server_max_window_bits={bits}" in ws.response.headers["Sec-WebSocket-Extensions"]
        assert json.loads(ws.recv(timeout=5))["type"] == "snapshot"
        post_events(server, {"type": "set", "path": "/a", "value": "y" * 500})
        assert json.loads(ws.recv(timeout=5))["ops"] == [{"op": "add", "path": "/a", "value": "y" * 500}]
