"""End-to-end fixtures: a real reactord process on 127.0.0.1, and small clients to talk to it.

The binary comes from $REACTORD_BIN, by default <repo>/.build/debug/reactord; this suite never
builds it (scripts/test.sh does, before running it).

Every server a test starts is stopped at teardown with SIGTERM, and must exit 0 (graceful shutdown).
Every test is bounded in time: sockets, HTTP clients and subprocesses all carry timeouts, and an
alarm fails any test that runs longer than TEST_TIME_LIMIT seconds.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REACTORD_BIN = os.environ.get("REACTORD_BIN") or str(REPO / ".build" / "debug" / "reactord")
CURL_EXAMPLES = REPO / "Clients" / "curl"

HOST = "127.0.0.1"
STARTUP_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
TEST_TIME_LIMIT = 30
ADDRESS_LINE = re.compile(r"address=127\.0\.0\.1:(\d+)")


# ---------------------------------------------------------------------------------------------
# Per-test time limit


def pytest_configure(config):
    config.addinivalue_line("markers", "time_limit(seconds): this test's own time limit, instead of TEST_TIME_LIMIT")


@pytest.fixture(autouse=True)
def _time_limit(request):
    """Fails a test that hangs instead of letting it block the suite.

    A test that needs longer says so with `@pytest.mark.time_limit(seconds)`.
    """
    marker = request.node.get_closest_marker("time_limit")
    limit = int(marker.args[0]) if marker else TEST_TIME_LIMIT

    def expired(signum, frame):
        raise TimeoutError(f"test exceeded its time limit of {limit} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------
# The server process


def clean_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without any REACTORD_* setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REACTORD_")}
    env.update(extra or {})
    return env


class Reactord:
    """A running reactord: its process, port and log (stderr, kept in a file)."""

    # The log line that gives the port, and what the start-up errors call the process (a subclass
    # that runs reactord elsewhere changes them).
    address_line: re.Pattern = ADDRESS_LINE
    description = "reactord"

    def __init__(self, args: list[str], env: dict[str, str] | None, cwd: Path | None, log_dir: Path, preexec_fn=None, binary: str | None = None):
        binary = binary or REACTORD_BIN
        self.args = [binary, *args]
        # Set by kill(): the process died of SIGKILL on purpose, and teardown expects no exit 0.
        self.killed = False
        # The exit status teardown expects; a test that makes reactord exit otherwise on purpose
        # (a second SIGTERM, say) sets it.
        self.expected_exit = 0
        self.log_path = Path(tempfile.mkstemp(prefix="reactord-", suffix=".log", dir=log_dir)[1])
        self._log_file = open(self.log_path, "wb")
        if not os.access(binary, os.X_OK):
            raise AssertionError(
                f"reactord binary not found at {binary}: run `swift build --product reactord` "
                "or set REACTORD_BIN"
            )
        self.process = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
            env=clean_environment(env),
            cwd=str(cwd) if cwd else None,
            preexec_fn=preexec_fn,
        )
        self.port = self._wait_for_port()
        self.base_url = f"http://{HOST}:{self.port}"
        self.returncode: int | None = None

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            match = self.address_line.search(self.log())
            if match:
                return int(match.group(1))
            if self.process.poll() is not None:
                raise AssertionError(
                    f"{self.description} exited with {self.process.returncode} before listening; "
                    f"args={self.args}\n{self.log()}"
                )
            time.sleep(0.02)
        self.process.kill()
        self.process.wait(5)
        raise AssertionError(f"{self.description} did not log its address within {STARTUP_TIMEOUT} s\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, pattern: str, timeout: float = 5.0) -> re.Match:
        """Waits for a regular expression to match the log (log lines are written as they happen)."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.log())
            if match:
                return match
            if time.monotonic() >= deadline:
                raise AssertionError(f"log never matched {pattern!r} within {timeout} s:\n{self.log()}")
            time.sleep(0.02)

    def request_lines(self) -> list[str]:
        return [line for line in self.log().splitlines() if line.endswith("] request")]

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.process.send_signal(sig)

    def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            self.returncode = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise AssertionError(f"reactord did not exit within {timeout} s\n{self.log()}")
        return self.returncode

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then the exit status (the process is killed if it does not exit in time)."""
        if self.process.poll() is None:
            self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> int:
        """SIGKILL (a crash, as far as the server can tell), then the exit status (-9).

        The fixture's teardown then accepts that the process is gone without a graceful exit.
        """
        self.killed = True
        if self.process.poll() is None:
            self.process.kill()
        return self.wait()

    def close(self) -> None:
        self._log_file.close()


@pytest.fixture
def reactord(tmp_path):
    """A factory: `reactord("--token", "a:b:read", env={...})` starts a server and returns it.

    `--port 0` is added unless `port=False` (to let a config file or the environment choose the
    port). `preexec_fn` runs in the child before reactord starts (to set a resource limit, say).
    At teardown each server gets SIGTERM and must exit 0, except one a test ended with `kill()`
    (or one whose `expected_exit` the test set). `binary` runs another reactord than $REACTORD_BIN
    (an installed copy, say).
    """
    started: list[Reactord] = []

    def start(*flags: str, env: dict[str, str] | None = None, port: bool = True, cwd: Path | None = None, preexec_fn=None,
              binary: str | None = None) -> Reactord:
        args = list(flags)
        if port and "--port" not in args:
            args = ["--port", "0", *args]
        server = Reactord(args, env, cwd, tmp_path, preexec_fn, binary)
        started.append(server)
        return server

    yield start

    failures = []
    for server in started:
        try:
            code = server.stop()
            if server.killed:
                continue
            if code != server.expected_exit:
                failures.append(f"reactord {server.args[1:]} exited with {code}, not {server.expected_exit}:\n{server.log()}")
        finally:
            server.close()
    if failures:
        pytest.fail("\n".join(failures))


@pytest.fixture
def server(reactord) -> Reactord:
    """A default server: no tokens, empty state, ephemeral port."""
    return reactord()


def run_reactord(*args: str, env: dict[str, str] | None = None, timeout: float = 10) -> subprocess.CompletedProcess:
    """Runs reactord expecting it to refuse to start; returns the finished process."""
    try:
        return subprocess.run(
            [REACTORD_BIN, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=clean_environment(env),
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"reactord {args} kept running; it was expected to refuse to start") from error


def free_port() -> int:
    """A port nothing listens on right now (for tests that must name a port)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def wait_until(condition, timeout: float = 10, interval: float = 0.02, message: str = "condition"):
    """Polls `condition()` every `interval` s until it returns something truthy, and returns that;
    raises AssertionError naming `message` once `timeout` s have passed without it."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{message} not reached within {timeout} s")
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------
# Responses, whichever client got them


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    reason: str = ""
    version: str = "HTTP/1.1"
    interim: list[int] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def header_all(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError as error:
            raise AssertionError(f"body is not JSON ({error}): {self.body[:500]!r}") from None

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.headers} {self.body[:300]!r}>"


def assert_problem(response: Response, status: int, kind: str) -> dict:
    """An RFC 9457 problem: status, `application/problem+json`, type /problems/<kind>, and the members."""
    assert response.status == status, response
    assert response.header("Content-Type") == "application/problem+json", response
    problem = response.json()
    assert problem.get("type") == f"/problems/{kind}", problem
    assert problem.get("status") == status, problem
    assert isinstance(problem.get("title"), str) and problem["title"], problem
    assert isinstance(problem.get("detail"), str) and problem["detail"], problem
    return problem


# ---------------------------------------------------------------------------------------------
# Python's http.client


def request(server: Reactord, method: str, path: str, body=None, headers: dict | None = None, timeout: float = 5) -> Response:
    """One request on a fresh http.client connection. `body` may be bytes, str, or JSON-able."""
    headers = dict(headers or {})
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
        headers.setdefault("Content-Type", "application/json")
    if isinstance(body, str):
        body = body.encode("utf-8")
    connection = http.client.HTTPConnection(HOST, server.port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return Response(answer.status, answer.getheaders(), answer.read(), answer.reason, f"HTTP/{answer.version / 10:.1f}")
    finally:
        connection.close()


def post_events(server: Reactord, events, path: str = "/events", headers: dict | None = None) -> Response:
    """POSTs events (JSON-able, or a str/bytes body sent as is) as application/json."""
    return request(server, "POST", path, body=events, headers={"Content-Type": "application/json", **(headers or {})})


def get_state(server: Reactord, path: str = "/state", headers: dict | None = None):
    """The state's JSON (asserting a 200)."""
    answer = request(server, "GET", path, headers=headers)
    assert answer.status == 200, answer
    return answer.json()


# ---------------------------------------------------------------------------------------------
# curl


def curl(*args: str, input: bytes | None = None, timeout: float = 10, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["curl", "-sS", "--max-time", "5", *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def curl_response(url: str, *args: str, input: bytes | None = None) -> Response:
    """curl -i: the final response, parsed (interim 1xx responses are listed in `interim`)."""
    done = curl("-i", *args, url, input=input)
    assert done.returncode == 0, f"curl failed ({done.returncode}): {done.stderr.decode(errors='replace')}"
    rest = done.stdout
    interim: list[int] = []
    while True:
        head, separator, rest = rest.partition(b"\r\n\r\n")
        assert separator, f"no complete head in curl's output: {done.stdout[:500]!r}"
        lines = head.decode("latin-1").split("\r\n")
        version, status, *reason = lines[0].split(" ", 2)
        if 100 <= int(status) < 200:
            interim.append(int(status))
            continue
        headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:]]
        return Response(int(status), headers, rest, reason[0] if reason else "", version, interim)


# ---------------------------------------------------------------------------------------------
# Raw sockets, for what HTTP libraries hide (pipelining, broken requests, timeouts)


class RawConnection:
    """A TCP connection to the server that sends exactly the bytes given and parses what comes back."""

    def __init__(self, port: int, timeout: float = 5):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes | str) -> None:
        self.sock.sendall(data.encode("latin-1") if isinstance(data, str) else data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            if not self._fill():
                raise ConnectionError(f"connection closed before {marker!r}; got {self.buffer!r}")
        data, _, self.buffer = self.buffer.partition(marker)
        return data + marker

    def read_exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            if not self._fill():
                raise ConnectionError(f"connection closed after {len(self.buffer)} of {count} bytes")
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def read_head(self) -> tuple[str, int, str, list[tuple[str, str]]]:
        head = self.read_until(b"\r\n\r\n").decode("latin-1")
        lines = head[:-4].split("\r\n")
        version, status, *reason = lines[0].split(" ", 2)
        headers = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.append((name, value.strip()))
        return version, int(status), reason[0] if reason else "", headers

    def read_response(self, head_request: bool = False) -> Response:
        """The next final response; 1xx responses before it are noted in `interim`."""
        interim = []
        while True:
            version, status, reason, headers = self.read_head()
            if 100 <= status < 200:
                interim.append(status)
                continue
            break
        response = Response(status, headers, b"", reason, version, interim)
        length = response.header("Content-Length")
        if not head_request and status not in (204, 304) and length is not None:
            response.body = self.read_exactly(int(length))
        return response

    def is_closed(self, timeout: float = 3) -> bool:
        """True if the server closes the connection (EOF or reset) within `timeout`, with nothing more to read."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return not self.buffer
                self.buffer += chunk
        except (ConnectionResetError, BrokenPipeError):
            return not self.buffer
        except socket.timeout:
            return False


def raw(server: Reactord, timeout: float = 5) -> RawConnection:
    return RawConnection(server.port, timeout)


def http_request(method: str, target: str, body: bytes | str | None = None, headers: dict | None = None, version: str = "HTTP/1.1") -> bytes:
    """The bytes of one request; Host and (with a body) Content-Length are added unless given."""
    if isinstance(body, str):
        body = body.encode()
    headers = dict(headers or {})
    if version == "HTTP/1.1":
        headers.setdefault("Host", "127.0.0.1")
    if body is not None and "Transfer-Encoding" not in headers:
        headers.setdefault("Content-Length", str(len(body)))
    head = f"{method} {target} {version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode("latin-1") + (body or b"")


def event_request(event, target: str = "/events", headers: dict | None = None) -> bytes:
    return http_request("POST", target, json.dumps(event), {"Content-Type": "application/json", **(headers or {})})
