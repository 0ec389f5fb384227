"""Helpers for the subscription tests (/subscribe over WebSocket, /stream over Server-Sent Events).

- An RFC 6902 JSON Patch applier and a strict JSON equality (1 != 1.0 != true), to rebuild the
  state client-side from a snapshot and patches and compare it with `GET /state`.
- A minimal WebSocket client over a raw socket (RFC 6455), for what a library hides or refuses to
  do: handshakes with chosen headers, unmasked or binary frames, a client that never reads, never
  answers a ping.
- A random event generator covering every event type of the JSON document.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import random
import re
import socket
import struct
from urllib.parse import quote

from conftest import HOST, RawConnection, Reactord, Response, http_request

# ---------------------------------------------------------------------------------------------
# JSON Pointer (RFC 6901) and JSON Patch (RFC 6902)


class PatchError(Exception):
    pass


def pointer_tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"not a JSON Pointer: {pointer!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def pointer(*tokens) -> str:
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def _index(token: str, length: int, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"bad array index {token!r}")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PatchError(f"array index {index} out of range (length {length})")
    return index


def resolve(document, path: str):
    value = document
    for token in pointer_tokens(path):
        if isinstance(value, dict):
            if token not in value:
                raise PatchError(f"no member {token!r} at {path!r}")
            value = value[token]
        elif isinstance(value, list):
            value = value[_index(token, len(value), False)]
        else:
            raise PatchError(f"{path!r} goes through a scalar")
    return value


def _parent(document, path: str):
    tokens = pointer_tokens(path)
    if not tokens:
        raise PatchError("the root has no parent")
    return resolve(document, pointer(*tokens[:-1])), tokens[-1]


def _add(document, path: str, value):
    if path == "":
        return value
    parent, token = _parent(document, path)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(token, len(parent), True), value)
    else:
        raise PatchError(f"cannot add under a scalar at {path!r}")
    return document


def _remove(document, path: str):
    parent, token = _parent(document, path)
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"nothing to remove at {path!r}")
        return parent.pop(token)
    if isinstance(parent, list):
        return parent.pop(_index(token, len(parent), False))
    raise PatchError(f"cannot remove under a scalar at {path!r}")


def apply_patch(document, operations: list[dict]):
    """Applies RFC 6902 operations in order; returns the new document (the input is not changed)."""
    document = copy.deepcopy(document)
    for operation in operations:
        op, path = operation["op"], operation["path"]
        if op == "add":
            document = _add(document, path, copy.deepcopy(operation["value"]))
        elif op == "remove":
            if path == "":
                raise PatchError("cannot remove the root")
            _remove(document, path)
        elif op == "replace":
            resolve(document, path)
            if path == "":
                document = copy.deepcopy(operation["value"])
            else:
                parent, token = _parent(document, path)
                if isinstance(parent, list):
                    parent[_index(token, len(parent), False)] = copy.deepcopy(operation["value"])
                else:
                    parent[token] = copy.deepcopy(operation["value"])
        elif op == "move":
            source = operation["from"]
            if path != source and (path + "/").startswith(source + "/"):
                raise PatchError(f"cannot move {source!r} into itself")
            value = resolve(document, source)
            if path != source:
                if source == "":
                    raise PatchError("cannot move the root")
                _remove(document, source)
                document = _add(document, path, value)
        elif op == "copy":
            document = _add(document, path, copy.deepcopy(resolve(document, operation["from"])))
        elif op == "test":
            if not strict_equal(resolve(document, path), operation["value"]):
                raise PatchError(f"test failed at {path!r}")
        else:
            raise PatchError(f"unknown op {op!r}")
    return document


def strict_equal(a, b) -> bool:
    """JSON equality that tells true from 1 and 1 from 1.0 (Python's == does not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b


def assert_same_json(actual, expected, context: str = "") -> None:
    if not strict_equal(actual, expected):
        raise AssertionError(
            f"{context}\nclient-side: {json.dumps(actual, sort_keys=True)[:2000]}\n"
            f"server:      {json.dumps(expected, sort_keys=True)[:2000]}"
        )


def assert_resumes(server: Reactord, since: int, state_then, through: int, state_now, context: str = "") -> None:
    """A WebSocket subscriber resuming with `since` gets one patch per version after it, up to
    `through`, then nothing; applied to `state_then` (the state at `since`) they make `state_now`."""
    with subscribe(server, since=since) as ws:
        mirror = state_then
        for expected in range(since + 1, through + 1):
            message = next_json(ws)
            assert message["type"] == "patch" and message["version"] == expected, (context, expected, message)
            mirror = apply_patch(mirror, message["ops"])
        assert_silent(ws, 0.3)
    assert_same_json(mirror, state_now, f"{context}: the patches do not rebuild the state")


# ---------------------------------------------------------------------------------------------
# URLs


def ws_url(server: Reactord, target: str = "/subscribe", **query) -> str:
    return f"ws://{HOST}:{server.port}{target}{query_string(**query)}"


def query_string(**query) -> str:
    parts = [f"{key}={quote(str(value), safe='')}" for key, value in query.items() if value is not None]
    return ("?" + "&".join(parts)) if parts else ""


# ---------------------------------------------------------------------------------------------
# A raw WebSocket client

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def handshake_request(target: str, headers: dict | None = None, key: str | None = None) -> bytes:
    """A WebSocket opening handshake; `headers` override or (with value None) drop the defaults."""
    base = {
        "Host": f"{HOST}",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": key or base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
    }
    for name, value in (headers or {}).items():
        base.pop(name, None)
        if value is not None:
            base[name] = value
    return http_request("GET", target, headers=base)


def encode_frame(opcode: int, payload: bytes = b"", fin: bool = True, mask: bool = True, rsv: int = 0) -> bytes:
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([mask_bit | length])
    elif length < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", length)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", length)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def read_handshake_response(connection: RawConnection) -> Response:
    """The answer to a handshake: a 101 (no body follows its head), or an error with its body."""
    version, status, reason, headers = connection.read_head()
    response = Response(status, headers, b"", reason, version)
    length = response.header("Content-Length")
    if status != 101 and length is not None:
        response.body = connection.read_exactly(int(length))
    return response


class RawWebSocket:
    """One WebSocket over a plain socket. `connect()` completes the handshake or raises."""

    def __init__(self, port: int, timeout: float = 5, rcvbuf: int | None = None):
        self.conn = RawConnection.__new__(RawConnection)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(timeout)
        sock.connect((HOST, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn.sock = sock
        self.conn.buffer = b""
        self.sock = sock
        self.response = None

    @classmethod
    def connect(cls, server: Reactord, target: str = "/subscribe", headers: dict | None = None, timeout: float = 5, rcvbuf: int | None = None) -> "RawWebSocket":
        ws = cls(server.port, timeout, rcvbuf)
        ws.conn.send(handshake_request(target, headers))
        ws.response = read_handshake_response(ws.conn)
        if ws.response.status != 101:
            ws.close()
            raise AssertionError(f"handshake refused: {ws.response}")
        return ws

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_frame(self, opcode: int, payload: bytes = b"", **options) -> None:
        self.conn.send(encode_frame(opcode, payload, **options))

    def send_text(self, text: str) -> None:
        self.send_frame(OP_TEXT, text.encode())

    def send_json(self, message) -> None:
        self.send_text(json.dumps(message))

    def recv_frame(self) -> tuple[bool, int, bytes]:
        """(FIN, opcode, payload) of the next frame; its first byte (with the RSV bits) is kept in `last_first_byte`."""
        first, second = self.conn.read_exactly(2)
        self.last_first_byte = first
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", self.conn.read_exactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self.conn.read_exactly(8))[0]
        if second & 0x80:
            raise AssertionError("the server masked a frame")
        return bool(first & 0x80), first & 0x0F, self.conn.read_exactly(length)

    def recv(self, answer_pings: bool = True) -> tuple[int, bytes]:
        """The next data message (opcode, payload) or the close frame (OP_CLOSE, payload)."""
        parts: list[bytes] = []
        opcode = None
        while True:
            fin, op, payload = self.recv_frame()
            if op == OP_PING:
                if answer_pings:
                    self.send_frame(OP_PONG, payload)
                continue
            if op == OP_PONG:
                continue
            if op == OP_CLOSE:
                return OP_CLOSE, payload
            if op != OP_CONT:
                opcode = op
            parts.append(payload)
            if fin:
                return opcode, b"".join(parts)

    def recv_json(self) -> dict:
        opcode, payload = self.recv()
        if opcode != OP_TEXT:
            raise AssertionError(f"expected a text message, got opcode {opcode}: {payload[:200]!r}")
        return json.loads(payload)

    def recv_close(self) -> tuple[int | None, str]:
        """Reads until the close frame; its (code, reason)."""
        while True:
            opcode, payload = self.recv()
            if opcode == OP_CLOSE:
                if len(payload) >= 2:
                    return struct.unpack("!H", payload[:2])[0], payload[2:].decode(errors="replace")
                return None, ""

    def is_closed(self, timeout: float = 3) -> bool:
        return self.conn.is_closed(timeout)


# ---------------------------------------------------------------------------------------------
# Random events of every type


def all_paths(document, prefix: str = ""):
    """Every (pointer, value) in the document, the root excluded."""
    if isinstance(document, dict):
        items = ((pointer(k), v) for k, v in document.items())
    elif isinstance(document, list):
        items = ((pointer(i), v) for i, v in enumerate(document))
    else:
        return
    for relative, value in items:
        path = prefix + relative
        yield path, value
        yield from all_paths(value, path)


def size(document) -> int:
    if isinstance(document, dict):
        return 1 + sum(size(v) for v in document.values())
    if isinstance(document, list):
        return 1 + sum(size(v) for v in document)
    return 1


KEYS = ["a", "b", "c", "players", "list", "nested", "x/y", "t~0", "ünï", "n", "deep", "0", ""]


class EventGenerator:
    """Random, mostly valid events of every JSON-document type, chosen against the current state."""

    TYPES = ["set", "merge", "remove", "increment", "append", "patch"]

    def __init__(self, seed: int):
        self.random = random.Random(seed)

    def scalar(self):
        r = self.random
        return r.choice([
            lambda: r.randint(-1000, 1000),
            lambda: round(r.uniform(-100, 100), 3),
            lambda: r.choice([True, False, None]),
            lambda: r.choice(["", "text", "ünïcødé ✓", 'quote " and \\ back', "line\nbreak", "x" * r.randint(1, 50)]),
        ])()

    def value(self, depth: int = 0):
        r = self.random
        kind = r.random()
        if depth >= 3 or kind < 0.5:
            return self.scalar()
        if kind < 0.75:
            return [self.value(depth + 1) for _ in range(r.randint(0, 4))]
        return {r.choice(KEYS): self.value(depth + 1) for _ in range(r.randint(0, 4))}

    def containers(self, state):
        found = [("", state)] if isinstance(state, (dict, list)) else []
        found += [(p, v) for p, v in all_paths(state) if isinstance(v, (dict, list))]
        return found

    def new_path(self, state) -> str:
        """A path where `set` can put something: a member of an object, an index or - of an array."""
        r = self.random
        containers = self.containers(state)
        if not containers or r.random() < 0.2:
            return pointer(r.choice(KEYS), *([r.choice(KEYS)] if r.random() < 0.3 else []))
        path, container = r.choice(containers)
        if isinstance(container, dict):
            return path + pointer(r.choice(KEYS))
        return path + pointer(r.choice(["-"] + list(range(len(container)))))

    def existing(self, state, predicate=lambda v: True):
        candidates = [p for p, v in all_paths(state) if predicate(v)]
        return self.random.choice(candidates) if candidates else None

    def event(self, state) -> dict:
        r = self.random
        kind = r.choice(self.TYPES)
        if size(state) > 150 and r.random() < 0.5:
            kind = "remove"
        if kind == "set":
            return {"type": "set", "path": self.new_path(state), "value": self.value()}
        if kind == "merge":
            path = self.existing(state, lambda v: isinstance(v, dict)) or ""
            merge = {r.choice(KEYS): (None if r.random() < 0.3 else self.value(1)) for _ in range(r.randint(1, 3))}
            return {"type": "merge", "path": path, "value": merge}
        if kind == "remove":
            path = self.existing(state)
            return {"type": "remove", "path": path} if path else {"type": "set", "path": "/a", "value": 1}
        if kind == "increment":
            path = self.existing(state, lambda v: isinstance(v, int) and not isinstance(v, bool) and abs(v) < 10**9)
            event = {"type": "increment", "path": path or pointer(r.choice(["n", "count", "k"]))}
            if r.random() < 0.7:
                event["by"] = r.randint(-5, 50)
            return event
        if kind == "append":
            path = self.existing(state, lambda v: isinstance(v, list)) or pointer(r.choice(["list", "log"]))
            return {"type": "append", "path": path, "value": self.value(1)}
        return {"type": "patch", "ops": self.patch_ops(state)}

    def patch_ops(self, state) -> list[dict]:
        """1-4 RFC 6902 operations, each valid after the ones before it."""
        r = self.random
        ops: list[dict] = []
        current = copy.deepcopy(state)
        for _ in range(r.randint(1, 4)):
            for _attempt in range(10):
                choice = r.choice(["add", "add", "remove", "replace", "move", "copy", "test"])
                existing = self.existing(current)
                if choice == "add":
                    parent = r.choice(self.containers(current) or [("", current)])
                    path, container = parent
                    if isinstance(container, dict):
                        op = {"op": "add", "path": path + pointer(r.choice(KEYS)), "value": self.value(1)}
                    elif isinstance(container, list):
                        op = {"op": "add", "path": path + pointer(r.choice(["-"] + list(range(len(container) + 1)))), "value": self.value(1)}
                    else:
                        continue
                elif existing is None:
                    continue
                elif choice == "remove":
                    op = {"op": "remove", "path": existing}
                elif choice == "replace":
                    op = {"op": "replace", "path": existing, "value": self.value(1)}
                elif choice == "test":
                    op = {"op": "test", "path": existing, "value": copy.deepcopy(resolve(current, existing))}
                else:
                    target = self.new_path(current)
                    op = {"op": choice, "from": existing, "path": target}
                try:
                    current = apply_patch(current, [op])
                except PatchError:
                    continue
                ops.append(op)
                break
        return ops or [{"op": "add", "path": "/a", "value": self.value()}]


# ---------------------------------------------------------------------------------------------
# The `websockets` library's clients


def subscribe(server: Reactord, target: str = "/subscribe", headers: dict | None = None, subprotocols=None, **query):
    """A `websockets` sync client on `target` with `query` (None values are left out)."""
    from websockets.sync.client import connect

    return connect(
        ws_url(server, target, **query),
        additional_headers=headers,
        subprotocols=subprotocols,
        max_size=None,
        open_timeout=5,
        close_timeout=2,
        ping_interval=None,
    )


def without_history(message: dict) -> dict:
    """A message less a snapshot's `history` (a name drawn at random), which must be there, as a
    short token."""
    if message.get("type") == "snapshot":
        assert re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}", str(message.get("history"))), f"a snapshot without its history: {message}"
    return {key: value for key, value in message.items() if key != "history"}


def next_json(ws, timeout: float = 5) -> dict:
    message = ws.recv(timeout=timeout)
    assert isinstance(message, str), f"expected a text message, got {message[:200]!r}"
    return json.loads(message)


def assert_silent(ws, timeout: float = 0.5) -> None:
    """Nothing arrives within `timeout`."""
    try:
        message = ws.recv(timeout=timeout)
    except TimeoutError:
        return
    raise AssertionError(f"expected no message, got {message[:500]!r}")


def close_code(ws, timeout: float = 5) -> int | None:
    """Reads until the server closes; the close code it sent."""
    from websockets.exceptions import ConnectionClosed

    try:
        while True:
            ws.recv(timeout=timeout)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None
