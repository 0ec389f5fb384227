"""Helpers for the scale-out tests (test_cluster.py): a real redis-server on a loopback port, a raw
RESP client to read what the nodes wrote there, reactord nodes started on it, and clients that fire
events from threads on keep-alive connections.

The Redis layout the nodes keep for a cluster key KEY (the braces are literal, a Redis Cluster hash
tag, so the three keys share one slot):

    reactor:{KEY}:log       a stream, one entry per append: ID `<version>-0` (its last event's),
                            fields `n` (the name of the node that appended it) and `g` (the events'
                            JSON records, each as `<length> <bytes>\n`, the first one following the
                            previous entry's version; `group_records` reads them)
    reactor:{KEY}:meta      a hash: `version` (the head), `epoch` (a random id set when the cluster
                            was created)
    reactor:{KEY}:snapshot  a hash: `version`, `state`

Everything here is bounded in time: sockets carry timeouts, waits have deadlines, and a
redis-server that does not stop on SIGTERM is killed.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from conftest import HOST, Reactord, Response, free_port, request, wait_until

REDIS_SERVER = os.environ.get("REDIS_SERVER_BIN", "redis-server")
REDIS_START_TIMEOUT = 10.0
REDIS_STOP_TIMEOUT = 10.0


def log_key(key: str) -> str:
    return f"reactor:{{{key}}}:log"


def meta_key(key: str) -> str:
    return f"reactor:{{{key}}}:meta"


def snapshot_key(key: str) -> str:
    return f"reactor:{{{key}}}:snapshot"


# ---------------------------------------------------------------------------------------------
# A raw RESP (Redis serialization protocol) client: enough for PING, XRANGE, XLEN, HGETALL


class RedisError(Exception):
    pass


class RedisClient:
    """One connection to redis-server; `command("XRANGE", key, "-", "+")` answers the parsed reply
    (bulk strings as str, arrays as lists, errors raised as RedisError)."""

    def __init__(self, port: int, timeout: float = 5):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.file = self.sock.makefile("rb")

    def close(self) -> None:
        self.file.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def command(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(out))
        return self._reply()

    def _reply(self):
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError(f"redis closed the connection mid-reply: {line!r}")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            length = int(rest)
            if length < 0:
                return None
            data = self.file.read(length + 2)
            if len(data) != length + 2:
                raise ConnectionError("redis closed the connection mid-reply")
            return data[:-2].decode(errors="replace")
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise RedisError(f"unexpected reply line {line!r}")


def pairs(flat: list | None) -> dict[str, str]:
    """A flat [field, value, field, value, ...] reply (HGETALL, a stream entry) as a dict."""
    flat = flat or []
    return dict(zip(flat[0::2], flat[1::2]))


# ---------------------------------------------------------------------------------------------
# redis-server


class RedisServer:
    """A redis-server on 127.0.0.1, appendonly with an fsync per write, in its own directory.

    `stop()` ends it (SIGTERM or SIGKILL), `start()` starts it again on the same port and directory,
    `start(empty=True)` on the same port with a new, empty directory; `pause()` / `resume()` freeze
    and thaw it (SIGSTOP / SIGCONT: a Redis that keeps its connections open and answers nothing).

    `bind` lists the addresses it listens on instead of 127.0.0.1 alone (keep 127.0.0.1 among them:
    the helpers here talk to it there)."""

    def __init__(self, base_dir: Path, extra: tuple[str, ...] = (), bind: tuple[str, ...] = ()):
        self.base_dir = base_dir
        self.extra = extra
        self.bind = tuple(bind) or (HOST,)
        self.generation = 0
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.paused = False
        self._logs: list = []
        self.directory = self._new_directory()

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}"

    def _new_directory(self) -> Path:
        self.generation += 1
        directory = self.base_dir / f"redis-{self.generation}"
        directory.mkdir(parents=True)
        return directory

    def log(self) -> str:
        parts = []
        for path in sorted(self.base_dir.glob("redis-*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')}")
        return "\n".join(parts)

    def start(self, empty: bool = False) -> None:
        assert self.process is None or self.process.poll() is not None, "redis-server is still running"
        if empty:
            self.directory = self._new_directory()
        attempts = 1 if self.port else 5  # a first start may lose the free port to someone else: try another
        for attempt in range(attempts):
            if not self.port or attempt:
                self.port = free_port()
            if self._spawn():
                return
        raise AssertionError(f"redis-server did not start on 127.0.0.1:{self.port}\n{self.log()[-4000:]}")

    def _spawn(self) -> bool:
        log_path = self.base_dir / f"redis-{len(self._logs) + 1:02d}.log"
        log_file = open(log_path, "wb")
        self._logs.append(log_file)
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port", str(self.port),
                "--bind", *self.bind,
                "--dir", str(self.directory),
                "--appendonly", "yes",
                "--appendfsync", "always",
                "--save", "",
                "--daemonize", "no",
                "--logfile", "",
                *self.extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + REDIS_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with RedisClient(self.port, timeout=1) as client:
                    if client.command("PING") == "PONG":
                        return True
            except (OSError, RedisError):
                pass  # not listening yet, or still loading its append-only file
            time.sleep(0.02)
        self._end(signal.SIGKILL)
        return False

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Ends redis-server with `sig` and waits for it to be gone (SIGKILL if it lingers)."""
        self._end(sig)

    def _end(self, sig: int) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if self.paused:
            if sig != signal.SIGKILL:
                self.process.send_signal(signal.SIGCONT)
            self.paused = False
        self.process.send_signal(sig)
        try:
            self.process.wait(REDIS_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def pause(self) -> None:
        assert self.process is not None and self.process.poll() is None
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if self.paused and self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
        self.paused = False

    def client(self, timeout: float = 5) -> RedisClient:
        return RedisClient(self.port, timeout)

    def command(self, *args):
        with self.client() as client:
            return client.command(*args)

    def close(self) -> None:
        self._end(signal.SIGTERM)
        for log_file in self._logs:
            log_file.close()

    # What the nodes wrote ------------------------------------------------------------------

    def stream(self, key: str) -> list[tuple[str, dict[str, str]]]:
        """Every event of reactor:{key}:log, oldest first, each as if it had an entry of its own:
        [(`<version>-0`, {"n": node, "e": record})]."""
        entries: list[tuple[str, dict[str, str]]] = []
        start = "-"
        with self.client() as client:
            while True:
                page = client.command("XRANGE", log_key(key), start, "+", "COUNT", 1000) or []
                entries += [(entry_id, pairs(fields)) for entry_id, fields in page]
                if len(page) < 1000:
                    break
                start = "(" + page[-1][0]
        events = []
        for entry_id, fields in entries:
            last = stream_versions([(entry_id, fields)])[0]
            assert "n" in fields and "g" in fields, f"entry {entry_id} lacks n or g: {fields}"
            records = group_records(fields["g"])
            for offset, record in enumerate(records):
                events.append((f"{last - len(records) + 1 + offset}-0", {"n": fields["n"], "e": record}))
        return events

    def meta(self, key: str) -> dict[str, str]:
        return pairs(self.command("HGETALL", meta_key(key)))

    def stream_length(self, key: str) -> int:
        return self.command("XLEN", log_key(key))


def group_records(group: str) -> list[str]:
    """The records of an entry's `g` field: `<decimal length> <record>\n` each, the length in
    bytes of the record's UTF-8."""
    data, records, index = group.encode(), [], 0
    while index < len(data):
        space = data.index(b" ", index)
        length = int(data[index:space].decode("ascii"))
        start = space + 1
        assert data[start + length:start + length + 1] == b"\n", f"record at byte {index} is not followed by a newline"
        records.append(data[start:start + length].decode())
        index = start + length + 1
    assert records, "an entry with no records"
    return records


def stream_versions(entries: list[tuple[str, dict[str, str]]]) -> list[int]:
    """The versions of stream entries, checking every ID is `<version>-0`."""
    versions = []
    for entry_id, _ in entries:
        head, _, sequence = entry_id.partition("-")
        assert sequence == "0" and head.isdigit(), f"stream entry ID {entry_id!r} is not <version>-0"
        versions.append(int(head))
    return versions


def assert_contiguous_stream(redis: RedisServer, key: str, head: int) -> list[tuple[str, dict[str, str]]]:
    """The stream holds exactly versions 1..head, each once, each with `e` (JSON) and `n`; its entries."""
    entries = redis.stream(key)
    versions = stream_versions(entries)
    duplicates = sorted({v for v in versions if versions.count(v) > 1}) if len(set(versions)) != len(versions) else []
    assert not duplicates, f"versions appended twice: {duplicates[:20]}"
    missing = sorted(set(range(1, head + 1)) - set(versions))
    assert not missing, f"versions missing from the stream: {missing[:20]} (of 1..{head})"
    assert versions == list(range(1, head + 1)), f"the stream's versions are not 1..{head}: {versions[:5]}...{versions[-5:]}"
    for entry_id, fields in entries:
        assert "e" in fields and "n" in fields, f"entry {entry_id} lacks e or n: {fields}"
        assert isinstance(json.loads(fields["e"]), (dict, list)), f"entry {entry_id}'s e is not a JSON record: {fields['e'][:200]}"
        assert fields["n"], f"entry {entry_id} names no node"
    return entries


# ---------------------------------------------------------------------------------------------
# Nodes


class Cluster:
    """Starts reactord nodes on one Redis and one cluster key, through conftest's `reactord` factory
    (so every node is stopped at teardown and must exit 0, unless the test kill()ed it)."""

    def __init__(self, redis: RedisServer, reactord, key: str = "e2e"):
        self.redis = redis
        self._reactord = reactord
        self.key = key

    def flags(self, name: str, *extra: str) -> list[str]:
        return ["--redis", self.redis.url, "--redis-key", self.key, "--node-name", name, *extra]

    def node(self, name: str, *extra: str) -> Reactord:
        """A node, once ready: it listens before its connections to Redis have answered, and
        refuses writes (503) until they have."""
        server = self._reactord(*self.flags(name, *extra))
        server.name = name
        server.extra = extra
        wait_until(lambda: request(server, "GET", "/readyz").status == 200, 10, message=f"node {name} connects to Redis")
        return server

    def nodes(self, *names: str, extra: tuple[str, ...] = ()) -> list[Reactord]:
        return [self.node(name, *extra) for name in names]

    def restart(self, node: Reactord) -> Reactord:
        """The same node (name and flags) started again, after it stopped or was killed."""
        assert node.process.poll() is not None, "the node is still running"
        return self.node(node.name, *node.extra)

    def stream(self):
        return self.redis.stream(self.key)

    def meta(self):
        return self.redis.meta(self.key)


class HoldingProxy:
    """A TCP proxy to Redis on 127.0.0.1 that holds back, once, the first command towards Redis
    containing every one of `markers` for `seconds`, then passes it on: a command delayed on its
    way (a slow network, a stalled sender), with the connection kept. The commands sent before it
    pass at once, even when they travel in the same write (a node sends a key's claim and the
    append it guards together); the ones after it wait behind it, in order."""

    def __init__(self, target_port: int, markers: tuple[bytes, ...], seconds: float):
        self.target_port = target_port
        self.markers = markers
        self.seconds = seconds
        self.held = threading.Event()
        self.held_at: float | None = None  # time.monotonic() as the command was held
        self.listener = socket.create_server((HOST, 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
                upstream = socket.create_connection((HOST, self.target_port))
            except OSError:
                return
            self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    @staticmethod
    def _command_end(data: bytes, start: int) -> int | None:
        """Where the RESP command (an array of bulk strings) at `start` ends; None if `data` does
        not hold all of it yet."""
        line = data.find(b"\r\n", start)
        if line < 0:
            return None
        if data[start:start + 1] != b"*":  # an inline command: one line
            return line + 2
        position = line + 2
        for _ in range(int(data[start + 1:line])):
            line = data.find(b"\r\n", position)
            if line < 0:
                return None
            position = line + 2 + int(data[position + 1:line]) + 2
            if position > len(data):
                return None
        return position

    def _pump(self, source: socket.socket, destination: socket.socket, towards_redis: bool) -> None:
        pending = b""
        try:
            while data := source.recv(65536):
                if not towards_redis or self.held.is_set():
                    destination.sendall(pending + data)
                    pending = b""
                    continue
                pending += data
                start = 0
                while (end := self._command_end(pending, start)) is not None:
                    if all(marker in pending[start:end] for marker in self.markers):
                        destination.sendall(pending[:start])
                        pending = pending[start:]
                        self.held_at = time.monotonic()
                        self.held.set()
                        time.sleep(self.seconds)
                        start = len(pending)
                        break
                    start = end
                destination.sendall(pending[:start])
                pending = pending[start:]
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                destination.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        for sock in [self.listener, *self.sockets]:
            with contextlib.suppress(OSError):
                sock.close()


# ---------------------------------------------------------------------------------------------
# HTTP


def state_and_version(node: Reactord, query: str = "") -> tuple[object, int]:
    answer = request(node, "GET", "/state" + query)
    assert answer.status == 200, answer
    etag = answer.header("ETag")
    assert etag and etag.startswith('"') and etag.endswith('"'), answer
    return answer.json(), int(etag.strip('"'))


def fire(node: Reactord, event, headers: dict | None = None) -> int:
    """POSTs one event (or an array) to `node`, asserting a 200; its version."""
    answer = request(node, "POST", "/events", body=event, headers=headers)
    assert answer.status == 200, (node.name, answer)
    return answer.json()["version"]


def wait_for_version(nodes: list[Reactord], version: int, timeout: float = 10) -> list[tuple[object, int]]:
    """Waits for every node's GET /state to reach `version`; each one's (state, version) then."""
    results = []
    for node in nodes:
        deadline = time.monotonic() + timeout
        while True:
            state, current = state_and_version(node)
            if current >= version:
                break
            if time.monotonic() >= deadline:
                raise AssertionError(f"node {node.name} stayed at version {current}, not {version}, for {timeout} s")
            time.sleep(0.02)
        results.append((state, current))
    return results


def assert_converged(nodes: list[Reactord], version: int, expected=None, timeout: float = 10):
    """Every node reaches `version`, no further, with the same state (and `expected`, if given)."""
    results = wait_for_version(nodes, version, timeout)
    for node, (state, current) in zip(nodes, results):
        assert current == version, f"node {node.name} is at version {current}, beyond {version}"
        assert state == results[0][0], f"node {node.name} has {state}, node {nodes[0].name} {results[0][0]}"
    if expected is not None:
        assert results[0][0] == expected, f"the nodes agree on {results[0][0]}, not {expected}"
    return results[0][0]


def cluster_info(node: Reactord) -> dict:
    answer = request(node, "GET", "/cluster")
    assert answer.status == 200, answer
    assert (answer.header("Content-Type") or "").startswith("application/json"), answer
    info = answer.json()
    assert isinstance(info, dict), info
    return info


def node_names(nodes) -> set[str]:
    """The names in /cluster's `nodes`: a list of names, or of objects naming one (`name` or `node`)."""
    assert isinstance(nodes, list), f"`nodes` is not a list: {nodes!r}"
    names = set()
    for item in nodes:
        if isinstance(item, dict):
            item = item.get("name", item.get("node"))
        assert isinstance(item, str), f"cannot read a node name from {item!r} in {nodes!r}"
        names.add(item)
    return names


class Firer(threading.Thread):
    """Fires events at one node on one keep-alive connection, each after the previous answer, until
    `count` are sent, `stop` is set, or the connection breaks (the node was killed).

    `event(i)` gives the i-th event. Answers are kept: `versions` of the 2xx ones, in order,
    `refused` [(status, body)] of the others, and `unanswered`, the requests sent with no answer
    (at most one, when the connection broke mid-request)."""

    def __init__(self, node: Reactord, event, count: int | None = None, stop: threading.Event | None = None,
                 stop_on_refusal: bool = True, headers: dict | None = None):
        super().__init__(daemon=True)
        self.node = node
        self.event = event
        self.count = count
        self.stop = stop or threading.Event()
        self.stop_on_refusal = stop_on_refusal
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self.versions: list[int] = []
        self.refused: list[tuple[int, bytes]] = []
        self.unanswered = 0
        self.broken: BaseException | None = None

    @property
    def acked(self) -> int:
        return len(self.versions)

    def run(self) -> None:
        connection = http.client.HTTPConnection(HOST, self.node.port, timeout=10)
        try:
            sent = 0
            while not self.stop.is_set() and (self.count is None or sent < self.count):
                body = json.dumps(self.event(sent))
                sent += 1
                self.unanswered += 1
                connection.request("POST", "/events", body=body, headers=self.headers)
                answer = connection.getresponse()
                data = answer.read()
                self.unanswered -= 1
                if 200 <= answer.status < 300:
                    self.versions.append(json.loads(data)["version"])
                else:
                    self.refused.append((answer.status, data[:300]))
                    if self.stop_on_refusal:
                        return
        except (OSError, http.client.HTTPException) as error:
            self.broken = error  # the node is gone
        finally:
            connection.close()


def run_firers(firers: list[Firer], timeout: float = 30) -> None:
    for firer in firers:
        firer.start()
    deadline = time.monotonic() + timeout
    for firer in firers:
        firer.join(max(0.1, deadline - time.monotonic()))
    alive = [firer.node.name for firer in firers if firer.is_alive()]
    if alive:
        for firer in firers:
            firer.stop.set()
        raise AssertionError(f"firing at {alive} did not finish within {timeout} s")


def problem_of(answer: Response) -> dict:
    """An RFC 9457 problem body, checked loosely: problem+json, a /problems/ type, the status."""
    assert answer.header("Content-Type") == "application/problem+json", answer
    problem = answer.json()
    assert isinstance(problem.get("type"), str) and problem["type"].startswith("/problems/"), problem
    assert problem.get("status") == answer.status, problem
    assert isinstance(problem.get("detail"), str) and problem["detail"], problem
    return problem
