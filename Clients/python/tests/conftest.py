"""Fixtures: a real reactord on 127.0.0.1 for the client's tests.

The binary is $REACTORD_BIN, by default <repo>/.build/debug/reactord; the tests never build it
(scripts/test.sh does). Each server is stopped with SIGTERM at teardown and must exit 0. Every
test is bounded by an alarm, and every network call in the client carries a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import http.server
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

CLIENT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CLIENT_ROOT))  # `import reactor_client` without installing it

from reactor_client import Client  # noqa: E402

REPO = CLIENT_ROOT.parents[1]
REACTORD_BIN = os.environ.get("REACTORD_BIN") or str(REPO / ".build" / "debug" / "reactord")
ADDRESS_LINE = re.compile(r"address=127\.0\.0\.1:(\d+)")
STARTUP_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
TEST_TIME_LIMIT = 30


@pytest.fixture(autouse=True)
def _time_limit():
    """Fails a test that hangs rather than blocking the suite."""

    def expired(signum, frame):
        raise TimeoutError(f"test exceeded its time limit of {TEST_TIME_LIMIT} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_TIME_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class Reactord:
    """A running reactord: its process, port, URL and log (stderr, in a file)."""

    def __init__(self, args: list[str], log_dir: Path):
        if not os.access(REACTORD_BIN, os.X_OK):
            raise AssertionError(f"no reactord at {REACTORD_BIN}: run `swift build --product reactord` or set REACTORD_BIN")
        self.args = [REACTORD_BIN, "--port", "0", *args]
        handle, name = tempfile.mkstemp(prefix="reactord-", suffix=".log", dir=log_dir)
        os.close(handle)
        self.log_path = Path(name)
        self._log = open(self.log_path, "wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("REACTORD_")}
        self.process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log, env=env)
        self.port = self._wait_for_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._clients: list[Client] = []
        self._metric_reads = 0

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            match = ADDRESS_LINE.search(self.log())
            if match:
                return int(match.group(1))
            if self.process.poll() is not None:
                raise AssertionError(f"reactord exited with {self.process.returncode}: {self.args}\n{self.log()}")
            time.sleep(0.02)
        self.process.kill()
        self.process.wait(5)
        raise AssertionError(f"reactord did not log its address within {STARTUP_TIMEOUT} s\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, token: str | None = None, timeout: float = 5, **options) -> Client:
        """A client, closed (its kept-alive connections) when the server stops."""
        client = Client(self.url, token=token, timeout=timeout, **options)
        self._clients.append(client)
        return client

    def metric(self, name: str) -> float:
        """A sample of `GET /metrics` (without labels), read on a connection of its own, which
        `reactor_http_connections_accepted_total` counts too."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        self._metric_reads += 1
        try:
            connection.request("GET", "/metrics", headers={"Connection": "close"})
            answer = connection.getresponse()
            text = answer.read().decode()
            assert answer.status == 200, text
        finally:
            connection.close()
        for line in text.splitlines():
            sample, _, value = line.partition(" ")
            if sample == name:
                return float(value)
        raise AssertionError(f"no {name} in /metrics:\n{text}")

    def accepted_connections(self) -> int:
        """Connections accepted so far, not counting those of `metric` (this one's included)."""
        return int(self.metric("reactor_http_connections_accepted_total")) - self._metric_reads

    def stop(self) -> int:
        """SIGTERM, then the exit status (killed if it does not exit in time)."""
        for client in self._clients:
            with contextlib.suppress(Exception):  # never keeps the server from stopping
                client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise AssertionError(f"reactord did not exit within {STOP_TIMEOUT} s\n{self.log()}")
        finally:
            self._log.close()


@pytest.fixture
def reactord(tmp_path) -> Callable[..., Reactord]:
    """A factory: `reactord("--token", "a:b:read")` starts a server; each must exit 0 on SIGTERM."""
    started: list[Reactord] = []

    def start(*flags: str) -> Reactord:
        server = Reactord(list(flags), tmp_path)
        started.append(server)
        return server

    yield start

    failures = []
    for server in started:
        code = server.stop()
        if code != 0:
            failures.append(f"reactord {server.args[1:]} exited with {code}, not 0:\n{server.log()}")
    if failures:
        pytest.fail("\n".join(failures))


@pytest.fixture
def server(reactord) -> Reactord:
    """A default server: no tokens, state `{}`, an ephemeral port."""
    return reactord()


@pytest.fixture
def client(server) -> Client:
    return server.client()


def run(coroutine, timeout: float = 20):
    """Runs a test's coroutine in a fresh event loop, bounded in time."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


def answering_handler(status: int, body: bytes, headers: dict[str, str], reason: str | None = None,
                      seen: list[str] | None = None) -> type[http.server.BaseHTTPRequestHandler]:
    """A handler for `stub_http_server` answering every GET with `status`, `headers` and `body`
    (a Content-Length is added); the targets asked for go into `seen`, when given."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if seen is not None:
                seen.append(self.path)
            self.send_response(status, reason)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


@contextlib.contextmanager
def stub_http_server(handler: type[http.server.BaseHTTPRequestHandler], threaded: bool = False):
    """A plain HTTP server on 127.0.0.1 answering with `handler`, for what reactord never does (a
    proxy's HTML error page, a URL prefix, dropping a kept-alive connection mid-request); yields
    its base URL. `threaded` serves each connection on a thread of its own (for keep-alive)."""
    stub = (http.server.ThreadingHTTPServer if threaded else http.server.HTTPServer)(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=stub.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{stub.server_port}"
    finally:
        stub.shutdown()
        stub.server_close()
        thread.join(5)


class TcpProxy:
    """A TCP proxy on 127.0.0.1 in front of `upstream_port`, on threads of its own, for what the
    network does underneath a client: `freeze()` stops carrying anything over the connections open
    now and leaves them open (a network gone silent: no FIN, no RST). `url` is its base URL."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._frozen: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                downstream.close()
                continue
            pair = (downstream, upstream)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._pump, args=(pair,), daemon=True).start()

    def _pump(self, pair: tuple[socket.socket, socket.socket]) -> None:
        downstream, upstream = pair
        try:
            while not self._closed:
                if pair in self._frozen:
                    time.sleep(0.05)  # what arrives stays unread, and nothing is closed
                    continue
                readable, _, _ = select.select(pair, [], [], 0.05)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is downstream else downstream).sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            for side in pair:
                side.close()

    def freeze(self) -> None:
        with self._lock:
            self._frozen.update(self._pairs)

    def close(self) -> None:
        self._closed = True
        self._listener.close()


@pytest.fixture
def tcp_proxy() -> Callable[[int], TcpProxy]:
    """A factory: `tcp_proxy(port)` starts a `TcpProxy` in front of `port`, closed at teardown."""
    proxies: list[TcpProxy] = []

    def start(upstream_port: int) -> TcpProxy:
        proxy = TcpProxy(upstream_port)
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.close()
