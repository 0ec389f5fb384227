"""permessage-deflate (RFC 7692) on reactord's WebSockets: negotiated with Python's `websockets`
and with a raw socket, pushes compressed once and sent as the same bytes to every subscriber that
agreed, small messages left plain, compressed messages from clients inflated within the message
limit (a decompression bomb closes 1009 and costs nothing), and the settings that turn it off.
Frames are inflated here with Python's zlib, independently of the server's code."""

from __future__ import annotations

import json
import struct
import zlib

from conftest import get_state, post_events
from subscriptions import OP_CLOSE, OP_PING, OP_TEXT, RawWebSocket, encode_frame, next_json, subscribe

OFFER = {"Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits", "Sec-WebSocket-Protocol": "reactor.v1"}
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


def message_of(first: int, payload: bytes) -> dict:
    """The JSON message a text frame carries, inflated when RSV1 says it is compressed."""
    if first & 0x40:
        payload = zlib.decompressobj(wbits=-15).decompress(payload + TAIL)
    return json.loads(payload)


def deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    compressed = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert compressed.endswith(TAIL)
    return compressed[:-4]


def test_websockets_negotiates_deflate_and_gets_every_message(server):
    post_events(server, {"type": "set", "path": "/players", "value": wide_object()})
    with subscribe(server, subprotocols=["reactor.v1"]) as ws:
        assert ws.response.headers["Sec-WebSocket-Extensions"] == \
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
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


def test_large_pushes_go_out_compressed_small_ones_plain(server):
    post_events(server, {"type": "set", "path": "/players", "value": wide_object()})
    with RawWebSocket.connect(server, headers=OFFER) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions").startswith("permessage-deflate")
        first, opcode, payload = read_frame(ws)
        plain = json.dumps(wide_object()).encode()
        assert opcode == OP_TEXT and first & 0x40, "the snapshot is compressed"
        assert len(payload) * 4 < len(plain), (len(payload), len(plain))
        assert message_of(first, payload)["state"]["players"] == wide_object()
        post_events(server, {"type": "increment", "path": "/n"})
        first, _, payload = read_frame(ws)
        assert not first & 0x40, "a patch under --compression-min-bytes (256) goes out plain"
        assert message_of(first, payload)["ops"] == [{"op": "add", "path": "/n", "value": 1}]


def test_every_subscriber_that_agreed_gets_the_same_compressed_bytes(server):
    with RawWebSocket.connect(server, headers=OFFER) as a, RawWebSocket.connect(server, headers=OFFER) as b, \
            RawWebSocket.connect(server, headers={"Sec-WebSocket-Protocol": "reactor.v1"}) as plain:
        assert plain.response.header("Sec-WebSocket-Extensions") is None
        for ws in (a, b, plain):
            read_frame(ws)
        post_events(server, {"type": "set", "path": "/players", "value": wide_object(16)})
        frames = [read_frame(ws) for ws in (a, b, plain)]
        assert frames[0] == frames[1]
        assert frames[0][0] & 0x40 and not frames[2][0] & 0x40
        assert message_of(frames[0][0], frames[0][2]) == message_of(frames[2][0], frames[2][2])


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
    with RawWebSocket.connect(everything, headers=OFFER) as ws:
        read_frame(ws)
        post_events(everything, {"type": "set", "path": "/s", "value": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})
        first, _, payload = read_frame(ws)
        assert first & 0x40, "with a threshold of 0 even a short patch is compressed when that makes it smaller"
        assert message_of(first, payload)["ops"][0]["path"] == "/s"


def test_an_unacceptable_offer_is_declined_not_refused(server):
    headers = {**OFFER, "Sec-WebSocket-Extensions": "permessage-deflate; server_max_window_bits=7, x-webkit-deflate-frame"}
    with RawWebSocket.connect(server, headers=headers) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions") is None
        first, _, payload = read_frame(ws)
        assert not first & 0x40 and message_of(first, payload)["type"] == "snapshot"
