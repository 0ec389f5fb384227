"""Operations: `reactord config check` and `config defaults`, event and connection rate limits, the
graceful shutdown sequence, and the installation (deploy/install.sh, deploy/reactord.service).

Settings precedence (file < environment < flags) is in test_config.py; the metrics in test_metrics.py.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (
    HOST,
    RawConnection,
    REACTORD_BIN,
    REPO,
    assert_problem,
    get_state,
    http_request,
    post_events,
    raw,
    request,
    run_reactord,
)
from prometheus import scrape
from subscriptions import OP_CLOSE, RawWebSocket, handshake_request, next_json, read_handshake_response, subscribe

INCREMENT = {"type": "increment", "path": "/n"}
DOCS = REPO / "docs"
DEPLOY = REPO / "deploy"


def write_config(tmp_path: Path, settings, name: str = "reactord.json") -> Path:
    path = tmp_path / name
    path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
    return path


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def kebab(key: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "-" + m.group(1).lower(), key)


# ---------------------------------------------------------------------------------------------
# reactord config check


def test_config_check_accepts_a_good_file(tmp_path):
    path = write_config(tmp_path, {
        "host": "0.0.0.0",
        "port": 7070,
        "logLevel": "notice",
        "tokens": [
            {"name": "dashboard", "secret": "d4sh", "scopes": ["read"]},
            {"name": "ci", "secret": "c1", "scopes": ["read", "fire"], "eventTypes": ["increment"], "eventsPerSecond": 20, "burst": 40},
        ],
        "corsOrigins": ["https://dash.example"],
        "maxConnections": 5000,
        "maxConnectionRate": 100,
        "eventRateLimit": 50,
        "eventRateBurst": 100,
        "dataDir": str(tmp_path / "data"),
        "fsync": "always",
        "snapshotEvents": 1000,
        "segmentBytes": 1 << 20,
    })
    done = run_reactord("config", "check", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ok: {path}", done.stdout
    assert done.stderr == ""
    assert not (tmp_path / "data").exists(), "config check created the data directory"


BAD_FILES = [
    ({"port": "seventy"}, "port"),
    ({"port": 70000}, "port"),
    ({"logLevel": "loud"}, "logLevel"),
    ({"insecure": "yes"}, "insecure"),
    ({"corsOrigins": "https://a.example"}, "corsOrigins"),
    ({"maxConnections": 0}, "maxConnections"),
    ({"maxHeaderBytes": 100}, "maxHeaderBytes"),
    ({"requestTimeout": 0}, "requestTimeout"),
    ({"idleTimeout": "forever"}, "idleTimeout"),
    ({"slowConsumer": "drop"}, "slowConsumer"),
    ({"pingInterval": -1}, "pingInterval"),
    ({"maxConnectionRate": 0}, "maxConnectionRate"),
    ({"eventRateLimit": -5}, "eventRateLimit"),
    ({"eventRateLimit": 5, "eventRateBurst": 0.5}, "eventRateBurst"),
    ({"eventRateBurst": 10}, "eventRateBurst"),
    ({"fsync": "sometimes"}, "fsync"),
    ({"dataDir": "/var/lib/reactord", "segmentBytes": 100}, "segmentBytes"),
    ({"dataDir": "/var/lib/reactord", "snapshotEvents": 0}, "snapshotEvents"),
    ({"tokens": "ci:s:read"}, "tokens"),
    ({"tokens": [{"name": "a", "secret": "b", "scopes": ["write"]}]}, "write"),
    ({"tokens": [{"name": "a", "secret": "b", "scopes": ["fire"], "eventsPerSecond": 0}]}, "eventsPerSecond"),
    ({"tokens": [{"name": "a", "secret": "b", "scopes": ["fire"], "eventsPerSecond": 1, "burst": 0}]}, "burst"),
    ({"tokens": [{"name": "a", "secret": "b", "scopes": ["read"]}, {"name": "a", "secret": "c", "scopes": ["read"]}]}, "same name"),
]


@pytest.mark.parametrize("settings, key", BAD_FILES, ids=[f"{k}" for _, k in BAD_FILES])
def test_config_check_names_the_bad_key(tmp_path, settings, key):
    path = write_config(tmp_path, settings)
    done = run_reactord("config", "check", str(path))
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert key in done.stderr or kebab(key) in done.stderr, done.stderr
    assert "ok" not in done.stdout


def test_config_check_checks_journal_settings_without_a_data_directory(tmp_path):
    # The data directory may come from the environment or a flag later (the systemd unit passes
    # --data-dir): a bad journal setting in the file must not wait until then to be found.
    for settings, key in [({"segmentBytes": 100}, "segmentBytes"), ({"snapshotEvents": 0}, "snapshotEvents"),
                          ({"snapshotBytes": -1}, "snapshotBytes")]:
        path = write_config(tmp_path, settings)
        done = run_reactord("config", "check", str(path))
        assert done.returncode == 1 and (key in done.stderr or kebab(key) in done.stderr), (settings, done.stdout, done.stderr)


@pytest.mark.parametrize("content, message", [
    ('{"port": 0,', "not valid JSON"),
    ("[]", "JSON object"),
    ("", "not valid JSON"),
])
def test_config_check_refuses_what_is_not_a_json_object(tmp_path, content, message):
    path = write_config(tmp_path, content)
    done = run_reactord("config", "check", str(path))
    assert done.returncode == 1
    assert message in done.stderr and str(path) in done.stderr, done.stderr


def test_config_check_of_a_missing_file(tmp_path):
    done = run_reactord("config", "check", str(tmp_path / "absent.json"))
    assert done.returncode == 1
    assert "absent.json" in done.stderr, done.stderr


def test_config_check_warns_about_unknown_keys_and_passes(tmp_path):
    path = write_config(tmp_path, {"port": 7070, "colour": "blue", "maxConections": 3, "tokens": []})
    done = run_reactord("config", "check", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ok: {path}"
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2, done.stderr
    assert any('"colour"' in line for line in warnings) and any('"maxConections"' in line for line in warnings), done.stderr


def test_config_check_ignores_the_environment(tmp_path):
    # It checks the file; the environment is the service's business (and may hold secrets).
    path = write_config(tmp_path, {"port": 7070})
    done = run_reactord("config", "check", str(path), env={"REACTORD_PORT": "not-a-port", "REACTORD_HOST": "0.0.0.0"})
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------------------------------
# reactord config defaults


def config_defaults() -> dict:
    done = run_reactord("config", "defaults")
    assert done.returncode == 0, done.stderr
    defaults = json.loads(done.stdout)
    assert isinstance(defaults, dict)
    return defaults


def documented_settings() -> dict[str, str]:
    """docs/configuration.md's table: config file key -> documented default."""
    rows = {}
    for line in (DOCS / "configuration.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("setting",) or set(cells[0]) <= {"-"}:
            continue
        keys = re.findall(r"`([^`]+)`", cells[3])
        if keys:
            assert len(keys) == 1, line
            rows[keys[0]] = cells[4]
    assert len(rows) > 20, f"could not read the table of docs/configuration.md: {rows}"
    return rows


def test_config_defaults_is_json_that_config_check_accepts(tmp_path):
    done = run_reactord("config", "defaults")
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)
    path = write_config(tmp_path, done.stdout, "defaults.json")
    checked = run_reactord("config", "check", str(path))
    assert checked.returncode == 0, checked.stderr
    assert checked.stderr == "", f"config defaults writes keys config check does not know:\n{checked.stderr}"


def test_config_defaults_has_every_documented_key_and_no_other():
    defaults = config_defaults()
    documented = documented_settings()
    missing = sorted(documented.keys() - defaults.keys())
    assert not missing, f"documented in docs/configuration.md but not in `config defaults`: {missing}"
    undocumented = sorted(defaults.keys() - documented.keys())
    assert not undocumented, f"in `config defaults` but not in docs/configuration.md's table: {undocumented}"


def test_config_defaults_agree_with_the_documented_defaults():
    defaults = config_defaults()
    disagreements = []
    for key, documented in documented_settings().items():
        value = defaults.get(key)
        plain = documented.replace("`", "")
        if key == "initialState":  # documented as the state it means, {}; the key is a file path
            expected_ok = value is None
        elif re.fullmatch(r"\d+(\.\d+)?", plain.replace(",", "")):
            expected_ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == float(plain.replace(",", ""))
        elif documented.startswith("none") or documented == "any":
            expected_ok = value in (None, [])
        elif documented == "off":
            expected_ok = value is False
        elif re.fullmatch(r"`[^`]+`", documented):
            expected_ok = value == plain
        else:
            continue
        if not expected_ok:
            disagreements.append(f"{key}: documented {documented!r}, `config defaults` says {value!r}")
    assert not disagreements, "\n".join(disagreements)


def test_reactord_starts_with_the_defaults_file(reactord, tmp_path):
    path = write_config(tmp_path, json.dumps(config_defaults()), "defaults.json")
    server = reactord("--config", str(path))  # the fixture's --port 0 overrides the file's 7070
    assert request(server, "GET", "/livez").status == 200
    assert post_events(server, INCREMENT).json() == {"version": 1}
    assert get_state(server) == {"n": 1}
    assert "unknown keys" not in server.log()
    assert "memory only" in server.log()  # dataDir null: not set


def test_the_defaults_file_edited_for_production_starts(reactord, tmp_path):
    # What an operator does with it: tokens, a data directory, a rate limit; then check, then start.
    settings = config_defaults()
    settings.update({
        "tokens": [{"name": "ops", "secret": "0ps-s3cret", "scopes": ["admin"], "eventsPerSecond": 100, "burst": 200}],
        "dataDir": str(tmp_path / "data"),
        "eventRateLimit": 10,
        "maxConnectionRate": 1000,
    })
    path = write_config(tmp_path, settings)
    assert run_reactord("config", "check", str(path)).returncode == 0
    server = reactord("--config", str(path))
    assert_problem(request(server, "GET", "/state"), 401, "unauthorized")
    assert post_events(server, INCREMENT, headers=bearer("0ps-s3cret")).status == 200
    assert (tmp_path / "data" / "journal").is_dir()


# ---------------------------------------------------------------------------------------------
# Event rate limits


def fire_until_limited(server, headers: dict, most: int = 30) -> int:
    """Fires one event at a time until one is refused; how many passed. The refusal is checked."""
    for passed in range(most):
        answer = post_events(server, INCREMENT, headers=headers)
        if answer.status != 200:
            assert_problem(answer, 429, "rate-limited")
            return passed
    raise AssertionError(f"{most} events passed: no limit")


def test_event_rate_limit_answers_429_with_retry_after(reactord):
    server = reactord("--token", "a:s3cret:read+fire", "--event-rate-limit", "5", "--event-rate-burst", "5")
    token = bearer("s3cret")
    started = time.monotonic()
    versions = [post_events(server, INCREMENT, headers=token).json()["version"] for _ in range(5)]
    assert versions == [1, 2, 3, 4, 5]
    refused = post_events(server, INCREMENT, headers=token)
    assert time.monotonic() - started < 0.15, "too slow to test a burst of 5 at 5 per second"
    problem = assert_problem(refused, 429, "rate-limited")
    retry_after = refused.header("Retry-After")
    assert retry_after is not None and re.fullmatch(r"[1-9][0-9]*", retry_after), refused
    assert problem.get("retryAfter") == int(retry_after), problem
    assert "5 events per second" in problem["detail"] and "token a " in problem["detail"], problem
    # Nothing was applied, and no version was taken.
    assert get_state(server, headers=token) == {"n": 5}
    time.sleep(int(retry_after))
    assert post_events(server, INCREMENT, headers=token).json() == {"version": 6}
    # Reads are not limited.
    for _ in range(10):
        assert request(server, "GET", "/state", headers=token).status == 200


def test_the_rate_refills_over_time(reactord):
    server = reactord("--token", "a:s3cret:fire", "--event-rate-limit", "10", "--event-rate-burst", "1")
    token = bearer("s3cret")
    assert post_events(server, INCREMENT, headers=token).status == 200
    assert post_events(server, INCREMENT, headers=token).status == 429
    time.sleep(0.15)  # a token every 0.1 s
    assert post_events(server, INCREMENT, headers=token).status == 200


def test_a_batch_takes_one_token_per_event_and_is_refused_whole(reactord):
    server = reactord("--token", "a:s3cret:read+fire", "--event-rate-limit", "0.01", "--event-rate-burst", "5")
    token = bearer("s3cret")
    assert post_events(server, [INCREMENT] * 3, headers=token).json()["version"] == 3
    assert_problem(post_events(server, [INCREMENT] * 3, headers=token), 429, "rate-limited")
    assert get_state(server, headers=token) == {"n": 3}, "part of a refused batch was applied"


def test_per_token_limits_from_the_config_file_override_the_default(reactord, tmp_path):
    path = write_config(tmp_path, {
        "eventRateLimit": 0.01,
        "eventRateBurst": 3,
        "tokens": [
            {"name": "tight", "secret": "t1ght", "scopes": ["fire"], "eventsPerSecond": 0.01, "burst": 1},
            {"name": "roomy", "secret": "r00my", "scopes": ["fire"], "eventsPerSecond": 0.01, "burst": 6},
            {"name": "plain", "secret": "pl4in", "scopes": ["fire"]},
            {"name": "noburst", "secret": "n0burst", "scopes": ["fire"], "eventsPerSecond": 2},
        ],
    })
    server = reactord("--config", str(path))
    assert fire_until_limited(server, bearer("t1ght")) == 1
    assert fire_until_limited(server, bearer("r00my")) == 6
    assert fire_until_limited(server, bearer("pl4in")) == 3  # the default
    assert fire_until_limited(server, bearer("n0burst")) == 2  # the burst is the rate when not given


def test_per_token_limits_apply_without_a_default(reactord, tmp_path):
    path = write_config(tmp_path, {"tokens": [
        {"name": "limited", "secret": "l1m", "scopes": ["fire"], "eventsPerSecond": 0.01, "burst": 2},
        {"name": "free", "secret": "fr33", "scopes": ["fire"]},
    ]})
    server = reactord("--config", str(path))
    assert fire_until_limited(server, bearer("l1m")) == 2
    for _ in range(20):
        assert post_events(server, INCREMENT, headers=bearer("fr33")).status == 200


def test_each_token_has_a_bucket_of_its_own(reactord):
    server = reactord("--token", "a:s3cret-a:fire", "--token", "b:s3cret-b:fire",
                      "--event-rate-limit", "0.01", "--event-rate-burst", "2")
    assert fire_until_limited(server, bearer("s3cret-a")) == 2
    assert post_events(server, INCREMENT, headers=bearer("s3cret-a")).status == 429
    assert fire_until_limited(server, bearer("s3cret-b")) == 2


def test_without_tokens_events_are_not_rate_limited(reactord):
    # The limit is per token: with none configured there is nobody to hold to it.
    server = reactord("--event-rate-limit", "1", "--event-rate-burst", "1")
    for version in range(1, 11):
        assert post_events(server, INCREMENT).json() == {"version": version}


def test_websocket_fires_share_the_token_bucket(reactord):
    server = reactord("--token", "a:s3cret:read+fire", "--event-rate-limit", "0.01", "--event-rate-burst", "3")
    token = bearer("s3cret")
    assert post_events(server, INCREMENT, headers=token).status == 200  # one of three, over HTTP
    with subscribe(server, headers=token) as ws:
        assert next_json(ws)["type"] == "snapshot"
        for ident in ("e-1", "e-2"):
            ws.send(json.dumps({"type": "fire", "id": ident, "event": INCREMENT}))
            assert next_json(ws)["type"] == "patch"
            ack = next_json(ws)
            assert ack["type"] == "ack" and ack["id"] == ident, ack
        ws.send(json.dumps({"type": "fire", "id": "e-3", "event": INCREMENT}))
        error = next_json(ws)
        assert error["type"] == "error" and error["id"] == "e-3", error
        problem = error["problem"]
        assert problem["type"] == "/problems/rate-limited" and problem["status"] == 429, problem
        assert isinstance(problem.get("retryAfter"), int) and problem["retryAfter"] >= 1, problem
        # The connection stays open and the state is unchanged; HTTP is refused too.
        assert_problem(post_events(server, INCREMENT, headers=token), 429, "rate-limited")
        assert get_state(server, headers=token) == {"n": 3}
        ws.send(json.dumps({"type": "fire", "id": "e-4", "event": INCREMENT}))
        assert next_json(ws)["type"] == "error"


# ---------------------------------------------------------------------------------------------
# The connection rate limit


def test_connection_rate_limit_refuses_with_429_and_serves_the_others(reactord):
    server = reactord("--max-connection-rate", "5")  # bursts of 10
    # Accepted before the flood: a kept-alive connection is not held back by the connection rate.
    keeper = raw(server)
    keeper.send(http_request("GET", "/livez"))
    assert keeper.read_response().status == 200

    sockets = [socket.create_connection((HOST, server.port), timeout=5) for _ in range(30)]
    try:
        # A refused connection is answered at once, unasked; an accepted one waits for a request.
        time.sleep(0.3)
        poller = select.poll()  # (select.select fails on descriptors past 1024)
        for sock in sockets:
            poller.register(sock, select.POLLIN)
        readable = {fd for fd, _ in poller.poll(0)}
        refused = [sock for sock in sockets if sock.fileno() in readable]
        accepted = [sock for sock in sockets if sock.fileno() not in readable]
        assert 15 <= len(refused) <= 21, (len(refused), len(accepted))
        for sock in refused:
            data = b""
            while chunk := sock.recv(65536):
                data += chunk  # to the end: the server closes it
            head, _, body = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 429 "), data
            retry = re.search(rb"\r\nRetry-After: (\d+)", head)
            assert retry and int(retry.group(1)) >= 1, head
            assert b"\r\nConnection: close" in head, head
            problem = json.loads(body)
            assert problem["type"] == "/problems/rate-limited" and problem["status"] == 429, problem
        for sock in accepted:
            sock.sendall(http_request("GET", "/livez"))
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 "), "an accepted connection was not served"
    finally:
        for sock in sockets:
            sock.close()
    for _ in range(20):
        keeper.send(http_request("GET", "/livez"))
        assert keeper.read_response().status == 200
    keeper.close()
    # A second later there are tokens again.
    time.sleep(1.1)
    assert request(server, "GET", "/livez").status == 200
    assert server.process.poll() is None


def test_connection_rate_limit_with_http_clients(reactord):
    server = reactord("--max-connection-rate", "2")
    statuses = [request(server, "GET", "/livez").status for _ in range(10)]
    assert set(statuses) == {200, 429} and statuses[:4] == [200] * 4, statuses
    answer = request(server, "GET", "/state")
    assert_problem(answer, 429, "rate-limited")
    assert int(answer.header("Retry-After")) >= 1


# ---------------------------------------------------------------------------------------------
# Graceful shutdown


def half_sent_event(server, event) -> tuple:
    """A raw connection with a POST whose head and half its body are sent; returns (conn, rest)."""
    body = json.dumps(event).encode()
    conn = raw(server)
    conn.send(f"POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[: len(body) // 2])
    time.sleep(0.2)  # the server has read it
    return conn, body[len(body) // 2:]


def assert_not_accepting(server) -> None:
    try:
        socket.create_connection((HOST, server.port), timeout=1).close()
    except ConnectionRefusedError:
        return
    raise AssertionError("reactord still accepts connections after SIGTERM")


def test_graceful_shutdown_sequence(reactord, tmp_path):
    data = tmp_path / "data"
    server = reactord("--data-dir", str(data))
    ws = RawWebSocket.connect(server)
    stream = raw(server)
    try:
        assert ws.recv_json()["type"] == "snapshot"
        stream.send(http_request("GET", "/stream"))
        assert stream.read_head()[1] == 200
        conn, rest = half_sent_event(server, {"type": "set", "path": "/saved", "value": "in flight"})

        server.signal(signal.SIGTERM)
        server.wait_for_log(r"stopping")
        # 1. Subscribers are told at once, while the request is still in flight.
        code, reason = ws.recv_close()
        assert code == 1001, (code, reason)
        ws.send_frame(OP_CLOSE, (1001).to_bytes(2, "big"))
        assert ws.is_closed(3)
        ws.close()  # (else the server lingers up to 2 s for this side to close)
        stream.sock.settimeout(3)
        while stream._fill():  # the event stream ends
            pass
        stream.close()
        # 2. No new connections.
        assert_not_accepting(server)
        # 3. The in-flight request is still waited for.
        time.sleep(0.3)
        assert server.process.poll() is None, "reactord exited with a request in flight"
        # 4. It is answered, journaled, and its connection closed.
        conn.send(rest)
        answer = conn.read_response()
        assert answer.status == 200, answer
        assert answer.json() == {"version": 1}
        assert answer.header("Connection") == "close", answer
        assert conn.is_closed()
        conn.close()
        # 5. Then the process exits 0.
        assert server.wait(5) == 0
        last = server.log().splitlines()[-1]
        assert "stopped" in last and "version=1" in last, server.log()
    finally:
        ws.close()
        stream.close()
    # The acknowledged event survived.
    again = reactord("--data-dir", str(data))
    assert get_state(again) == {"saved": "in flight"}
    assert scrape(again).value("reactor_state_version") == 1


def test_shutdown_is_not_held_up_by_subscribers(reactord):
    server = reactord()
    subscribers = [RawWebSocket.connect(server) for _ in range(6)]
    try:
        for ws in subscribers:
            assert ws.recv_json()["type"] == "snapshot"
        started = time.monotonic()
        server.signal(signal.SIGTERM)
        for index, ws in enumerate(subscribers):
            assert ws.recv_close()[0] == 1001
            if index % 2:  # half of them close properly; the others never answer nor close
                ws.send_frame(OP_CLOSE, (1001).to_bytes(2, "big"))
                assert ws.is_closed(2)
                ws.close()
        # A lingering close waits up to 2 s for the silent ones, then exits.
        assert server.wait(5) == 0
        assert time.monotonic() - started < 3, time.monotonic() - started
    finally:
        for ws in subscribers:
            ws.close()


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_second_signal_during_shutdown_exits_at_once(reactord, second):
    server = reactord()
    conn, rest = half_sent_event(server, INCREMENT)  # keeps the first shutdown waiting
    try:
        server.signal(signal.SIGTERM)
        server.wait_for_log(r"stopping")
        time.sleep(0.3)
        assert server.process.poll() is None, "the first SIGTERM did not wait for the request in flight"
        server.expected_exit = 1  # Daemon.run: exit(1) on the second signal
        started = time.monotonic()
        server.signal(second)
        assert server.wait(3) == 1
        assert time.monotonic() - started < 1
        assert "second signal" in server.log()
        # The request in flight is dropped with the process.
        assert conn.is_closed(2)
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# Installation


SHARE_FILES = [
    "Clients/dashboard/index.html",
    "Clients/dashboard/dashboard.css",
    "Clients/dashboard/dashboard.js",
    "Clients/js/reactor-client.js",
    "docs/openapi.yaml",
]


def install(tmp_path: Path, *args: str, prefix: Path | str, destdir: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("PREFIX", "DESTDIR", "UNITDIR")}
    environment.update({"PREFIX": str(prefix), "REACTORD_BIN": REACTORD_BIN, **env})
    if destdir:
        environment["DESTDIR"] = str(destdir)
    done = subprocess.run([str(DEPLOY / "install.sh"), *args], capture_output=True, text=True, env=environment, timeout=30)
    assert done.returncode == 0, f"install.sh failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_install_into_a_prefix_and_run_the_installed_binary(reactord, tmp_path):
    prefix = tmp_path / "prefix"
    install(tmp_path, prefix=prefix)
    binary = prefix / "bin" / "reactord"
    assert binary.stat().st_mode & stat.S_IXUSR
    share = prefix / "share" / "reactord"
    for relative in SHARE_FILES:
        assert (share / relative).read_bytes() == (REPO / relative).read_bytes(), relative
    # Served from the installation, not from the source tree this binary was built in: mark it.
    index = share / "Clients/dashboard/index.html"
    index.write_bytes(index.read_bytes() + b"\n<!-- installed copy -->\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = reactord(binary=str(binary), cwd=elsewhere)
    page = request(server, "GET", "/")
    assert page.status == 200 and page.header("Content-Type").startswith("text/html"), page
    assert page.body.endswith(b"<!-- installed copy -->\n"), "the dashboard was not served from <prefix>/share/reactord"
    description = request(server, "GET", "/openapi.json")
    assert description.status == 200 and description.header("Content-Type").startswith("application/json"), description
    assert description.json()["openapi"].startswith("3.1"), description.json().get("openapi")
    script = request(server, "GET", "/assets/reactor-client.js")
    assert script.status == 200 and script.body == (REPO / "Clients/js/reactor-client.js").read_bytes()
    assert "dashboard is not installed" not in server.log()

    # Through a symbolic link (/usr/bin/reactord -> /opt/reactord/bin/reactord) it still finds it.
    links = tmp_path / "links" / "bin"
    links.mkdir(parents=True)
    (links / "reactord").symlink_to(binary)
    linked = reactord(binary=str(links / "reactord"), cwd=elsewhere)
    assert request(linked, "GET", "/").body.endswith(b"<!-- installed copy -->\n")


def test_install_again_over_an_installation(tmp_path):
    prefix = tmp_path / "prefix"
    install(tmp_path, prefix=prefix)
    install(tmp_path, prefix=prefix)
    assert (prefix / "bin" / "reactord").read_bytes() == Path(REACTORD_BIN).read_bytes()


def test_install_with_destdir_and_systemd(tmp_path):
    stage = tmp_path / "stage"
    done = install(tmp_path, "--systemd", prefix="/opt/reactord", destdir=stage)
    assert "systemctl" not in done.stdout, "with DESTDIR the next steps are the packager's"
    binary = stage / "opt/reactord/bin/reactord"
    assert binary.is_file()
    for relative in SHARE_FILES:
        assert (stage / "opt/reactord/share/reactord" / relative).is_file(), relative
    unit = (stage / "etc/systemd/system/reactord.service").read_text()
    # Paths in the unit are the installed ones, without the staging root.
    assert "ExecStart=/opt/reactord/bin/reactord --config /etc/reactord/config.json --data-dir ${STATE_DIRECTORY}" in unit, unit
    assert str(stage) not in unit and "/usr/local" not in unit
    config = stage / "etc/reactord/config.json"
    assert run_reactord("config", "check", str(config)).returncode == 0
    env = stage / "etc/reactord/env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert "REACTORD_TOKENS" in env.read_text()
    # A second run keeps the operator's files.
    config.write_text('{"port": 8080}\n')
    env.write_text("REACTORD_TOKENS=ops:s3cret:admin\n")
    install(tmp_path, "--systemd", prefix="/opt/reactord", destdir=stage)
    assert config.read_text() == '{"port": 8080}\n'
    assert env.read_text() == "REACTORD_TOKENS=ops:s3cret:admin\n"


def test_install_refuses_a_missing_binary_or_a_relative_prefix(tmp_path):
    script = str(DEPLOY / "install.sh")
    base = {k: v for k, v in os.environ.items() if k not in ("PREFIX", "DESTDIR")}
    done = subprocess.run([script], capture_output=True, text=True, timeout=10,
                          env={**base, "PREFIX": str(tmp_path / "p"), "REACTORD_BIN": str(tmp_path / "nothing")})
    assert done.returncode != 0 and "nothing" in done.stderr, done.stderr
    assert not (tmp_path / "p").exists()
    done = subprocess.run([script], capture_output=True, text=True, timeout=10,
                          env={**base, "PREFIX": "relative/prefix", "REACTORD_BIN": REACTORD_BIN})
    assert done.returncode != 0 and "absolute" in done.stderr, done.stderr


def unit_settings(text: str) -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    section = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        settings.setdefault(f"{section}.{key}", []).append(value)
    return settings


def test_the_systemd_unit_has_the_hardening_and_limits():
    settings = unit_settings((DEPLOY / "reactord.service").read_text())

    def one(key):
        assert key in settings, f"{key} is not set"
        return settings[key][-1]

    assert one("Service.DynamicUser") == "yes"
    assert one("Service.StateDirectory") == "reactord"
    assert "--data-dir ${STATE_DIRECTORY}" in one("Service.ExecStart")
    assert "--config /etc/reactord/config.json" in one("Service.ExecStart")
    assert one("Service.EnvironmentFile") == "-/etc/reactord/env"
    for key in ("ProtectSystem",):
        assert one(f"Service.{key}") == "strict"
    for key in ("ProtectHome", "PrivateTmp", "NoNewPrivileges"):
        assert one(f"Service.{key}") == "yes", key
    assert one("Service.CapabilityBoundingSet") == ""
    assert set(one("Service.RestrictAddressFamilies").split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    assert "@system-service" in settings["Service.SystemCallFilter"]
    assert int(one("Service.LimitNOFILE")) >= 10000 + 1000
    assert one("Service.Restart") == "on-failure"
    assert one("Service.KillSignal") == "SIGTERM"
    # Longer than the server's own 10 s shutdown deadline, so it is not SIGKILLed while draining.
    assert int(one("Service.TimeoutStopSec").rstrip("s")) > 10
    assert one("Install.WantedBy") == "multi-user.target"


def test_the_systemd_unit_verifies(tmp_path):
    assert shutil.which("systemd-analyze"), "systemd-analyze is missing: scripts/setup.sh installs it (Debian's systemd)"
    prefix = tmp_path / "prefix"
    install(tmp_path, prefix=prefix)
    unit = tmp_path / "reactord.service"
    unit.write_text((DEPLOY / "reactord.service").read_text().replace("/usr/local/bin/reactord", str(prefix / "bin/reactord")))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    security = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=30", str(unit)],
                              capture_output=True, text=True, timeout=20)
    if "--offline" in security.stderr:  # an older systemd-analyze
        return
    assert security.returncode == 0, security.stdout[-2000:] + security.stderr
    level = re.search(r"Overall exposure level for \S+: ([0-9.]+)", security.stdout)
    assert level and float(level.group(1)) <= 2.0, security.stdout[-300:]


def test_the_unit_allows_the_system_calls_reactord_makes():
    # The unit allows @system-service less @privileged and @resources. These are the calls an
    # strace of a session (HTTP, WebSocket, SSE, journal, snapshots, shutdown) showed reactord
    # making, with a few of their relatives; a check of the filter, not of every code path.
    assert shutil.which("systemd-analyze"), "systemd-analyze is missing: scripts/setup.sh installs it (Debian's systemd)"
    listing = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, timeout=20).stdout
    groups: dict[str, list[str]] = {}
    current = None
    for line in listing.splitlines():
        stripped = line.strip()
        if stripped.startswith("@") and not line.startswith(" "):
            current = stripped.split()[0]
            groups[current] = []
        elif stripped and not stripped.startswith("#") and current:
            groups[current].append(stripped.split()[0])

    def expand(group):
        names = set()
        for item in groups.get(group, []):
            names |= expand(item) if item.startswith("@") else {item}
        return names

    allowed = expand("@system-service") - expand("@privileged") - expand("@resources")  # as the unit says
    needed = {"accept4", "epoll_wait", "epoll_ctl", "eventfd2", "fsync", "fdatasync", "flock", "rename", "openat",
              "pread64", "pwrite64", "writev", "futex", "clone3", "mmap", "mprotect", "rt_sigaction", "getrandom",
              "sched_getaffinity", "prlimit64", "setsockopt", "getdents64", "unlink", "listen", "bind"}
    assert not needed - allowed, sorted(needed - allowed)


# ---------------------------------------------------------------------------------------------
# Behind nginx (deploy/nginx/reactord.conf, as docs/operations.md shows it), when nginx is here


class Nginx:
    """nginx running deploy/nginx/reactord.conf in front of a reactord, on loopback ports, with a
    self-signed certificate; its own prefix, so it needs no root and touches nothing of the system's."""

    def __init__(self, tmp_path: Path, upstream_port: int | list[int], site_file: str = "reactord.conf"):
        self.dir = tmp_path / "nginx"
        self.dir.mkdir()
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=reactor.example.com",
             "-keyout", str(self.dir / "key.pem"), "-out", str(self.dir / "cert.pem")],
            check=True, capture_output=True, timeout=30,
        )
        self.http_port, self.https_port = free_ports(2)
        site = (DEPLOY / "nginx" / site_file).read_text()
        if isinstance(upstream_port, int):
            upstreams = {"server 127.0.0.1:7070;": f"server 127.0.0.1:{upstream_port};"}
        else:  # reactord-cluster.conf: its three nodes
            upstreams = {f"server 10.0.0.1{index + 1}:7070": f"server 127.0.0.1:{port}" for index, port in enumerate(upstream_port)}
        replacements = {
            **upstreams,
            "listen 80;": f"listen 127.0.0.1:{self.http_port};",
            "listen 443 ssl http2;": f"listen 127.0.0.1:{self.https_port} ssl http2;",
            "/etc/letsencrypt/live/reactor.example.com/fullchain.pem": str(self.dir / "cert.pem"),
            "/etc/letsencrypt/live/reactor.example.com/privkey.pem": str(self.dir / "key.pem"),
        }
        for old, new in replacements.items():
            assert old in site, f"deploy/nginx/{site_file} no longer has {old!r}"
            site = site.replace(old, new)
        # IPv6 may be missing here.
        site = "\n".join(line for line in site.splitlines() if "listen [::]" not in line)
        (self.dir / "site.conf").write_text(site)
        temp = "".join(f"{kind}_temp_path {self.dir / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (self.dir / "nginx.conf").write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"daemon off;\nworker_processes 1;\npid {self.dir / 'nginx.pid'};\nerror_log {self.dir / 'error.log'} info;\n"
            + "events { worker_connections 256; }\n"
            + f"http {{\naccess_log {self.dir / 'access.log'};\n{temp}include {self.dir / 'site.conf'};\n}}\n"
        )
        check = subprocess.run(["nginx", "-t", "-p", str(self.dir), "-c", str(self.dir / "nginx.conf")],
                               capture_output=True, text=True, timeout=20)
        assert check.returncode == 0, f"nginx -t refuses the documented config:\n{check.stderr}"
        self.process = subprocess.Popen(["nginx", "-p", str(self.dir), "-c", str(self.dir / "nginx.conf")],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((HOST, self.https_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise AssertionError(f"nginx did not start:\n{self.log()}")
                time.sleep(0.05)

    def log(self) -> str:
        path = self.dir / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def tls(self):
        import ssl

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def request(self, method: str, path: str, body=None, headers: dict | None = None):
        import http.client

        headers = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            headers.setdefault("Content-Type", "application/json")
        connection = http.client.HTTPSConnection(HOST, self.https_port, timeout=5, context=self.tls())
        try:
            connection.request(method, path, body=body, headers={"Host": "reactor.example.com", **headers})
            answer = connection.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read()
        finally:
            connection.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # graceful
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tls_websocket(proxy: Nginx, target: str = "/subscribe") -> RawWebSocket:
    """A RawWebSocket over TLS to the proxy, the handshake done."""
    sock = proxy.tls().wrap_socket(socket.create_connection((HOST, proxy.https_port), timeout=5),
                                   server_hostname="reactor.example.com")
    connection = RawConnection.__new__(RawConnection)
    connection.sock, connection.buffer = sock, b""
    ws = RawWebSocket.__new__(RawWebSocket)
    ws.conn, ws.sock = connection, sock
    connection.send(handshake_request(target, {"Host": "reactor.example.com"}))
    ws.response = read_handshake_response(connection)
    assert ws.response.status == 101, ws.response
    return ws


@pytest.fixture
def nginx(tmp_path):
    assert shutil.which("nginx") and shutil.which("openssl"), "nginx or openssl is missing: scripts/setup.sh installs them (nginx-light, openssl)"
    started = []

    def start(upstream_port: int) -> Nginx:
        proxy = Nginx(tmp_path, upstream_port)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()


def test_behind_nginx_http_websocket_and_sse_all_work(reactord, nginx):
    # Without tokens behind a proxy that passes its public name on: --insecure says so.
    server = reactord("--insecure")
    proxy = nginx(server.port)
    # Plain HTTP redirects to HTTPS.
    import http.client

    plain = http.client.HTTPConnection(HOST, proxy.http_port, timeout=5)
    plain.request("GET", "/state", headers={"Host": "reactor.example.com"})
    redirect = plain.getresponse()
    assert redirect.status == 301 and redirect.getheader("Location") == "https://reactor.example.com/state"
    plain.close()

    status, _, body = proxy.request("POST", "/events", INCREMENT)
    assert (status, json.loads(body)) == (200, {"version": 1}), (status, body)
    status, headers, body = proxy.request("GET", "/state")
    assert (status, json.loads(body)) == (200, {"n": 1})
    # A body over reactord's limit is refused by reactord (its problem), not by nginx (HTML).
    status, headers, body = proxy.request("POST", "/events", {"type": "set", "path": "/big", "value": "x" * 1_500_000})
    assert status == 413 and headers.get("Content-Type") == "application/problem+json", (status, headers, body[:200])

    # The WebSocket client here is single-threaded: a client that reads and writes one TLS
    # connection from two threads (as the websockets library's sync client does) can stall.
    ws = tls_websocket(proxy)
    try:
        snapshot = ws.recv_json()
        assert snapshot["type"] == "snapshot" and snapshot["state"] == {"n": 1}, snapshot
        # Event streams are not buffered: each record arrives as it is written.
        stream = proxy.tls().wrap_socket(socket.create_connection((HOST, proxy.https_port), timeout=5),
                                         server_hostname="reactor.example.com")
        try:
            stream.sendall(http_request("GET", "/stream", headers={"Host": "reactor.example.com"}))
            received = b""
            while b"snapshot" not in received:
                received += stream.recv(65536)
            assert received.startswith(b"HTTP/1.1 200"), received[:300]
            # Fired over the WebSocket, through nginx both ways.
            ws.send_json({"type": "fire", "id": 1, "event": INCREMENT})
            assert ws.recv_json()["type"] == "patch"
            assert ws.recv_json() == {"type": "ack", "id": 1, "version": 2}
            started = time.monotonic()
            while b'"version":2' not in received:
                received += stream.recv(65536)
            assert time.monotonic() - started < 1, "the event stream was buffered"
        finally:
            stream.close()
        # The shutdown's 1001 reaches the client through the proxy.
        server.signal(signal.SIGTERM)
        assert ws.recv_close()[0] == 1001
    finally:
        ws.close()
    assert server.wait(5) == 0
    access = (proxy.dir / "access.log").read_text()
    for line in ("GET /subscribe HTTP/1.1\" 101", "GET /stream HTTP/1.1\" 200", "POST /events HTTP/1.1\" 413"):
        assert line in access, access


# ---------------------------------------------------------------------------------------------
# Backups and restores, as docs/operations.md describes them


def fill(server, count: int = 5) -> None:
    for i in range(count):
        assert post_events(server, {"type": "append", "path": "/log", "value": i} if i else {"type": "set", "path": "/log", "value": []}).status == 200


def tool(*args: str) -> subprocess.CompletedProcess:
    done = run_reactord(*args)
    assert done.returncode == 0, f"reactord {args} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_offline_backup_with_export_and_restore_with_import(reactord, tmp_path):
    data = tmp_path / "data"
    server = reactord("--data-dir", str(data), "--snapshot-events", "3")
    fill(server, 5)
    state, history = get_state(server), request(server, "GET", "/history?since=0").body
    # While it runs, the tools refuse: the directory is locked.
    refused = run_reactord("export", "--data-dir", str(data), "-o", str(tmp_path / "early.jsonl"))
    assert refused.returncode != 0 and "LOCK" in refused.stderr, refused.stderr
    assert server.stop() == 0
    tool("check", "--data-dir", str(data))
    tool("export", "--data-dir", str(data), "-o", str(tmp_path / "backup.jsonl"))
    tool("import", "--data-dir", str(tmp_path / "restored"), str(tmp_path / "backup.jsonl"))
    restored = reactord("--data-dir", str(tmp_path / "restored"))
    assert get_state(restored) == state
    assert scrape(restored).value("reactor_state_version") == 5
    # History from the export's snapshot on (the snapshot at 3 was its start).
    assert request(restored, "GET", "/history?since=3").body == history.split(b"\n", 3)[3]


def test_offline_backup_with_compact_and_a_copy(reactord, tmp_path):
    data = tmp_path / "data"
    server = reactord("--data-dir", str(data))
    fill(server, 5)
    state = get_state(server)
    assert server.stop() == 0
    done = tool("compact", "--data-dir", str(data))
    assert "5" in done.stdout + done.stderr
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    assert [path.name for path in (copy / "snapshots").iterdir()] == [f"{5:020d}.snapshot"]
    restored = reactord("--data-dir", str(copy))
    assert get_state(restored) == state
    assert post_events(restored, INCREMENT).json()["version"] == 6


def test_online_backup_from_get_state_and_its_etag(reactord, tmp_path):
    # A consistent state at one version while reactord keeps serving: GET /state and its ETag
    # (the version) make a one-line export that `import` takes.
    server = reactord("--data-dir", str(tmp_path / "data"), "--token", "backup:b4ckup:read", "--token", "app:4pp:fire")
    for i in range(4):
        assert post_events(server, INCREMENT, headers=bearer("4pp")).status == 200
    answer = request(server, "GET", "/state", headers=bearer("b4ckup"))
    version = int(answer.header("ETag").strip('"'))
    assert version == 4
    dump = tmp_path / "online.jsonl"
    dump.write_text(json.dumps({"version": version, "state": answer.json()}) + "\n")
    assert post_events(server, INCREMENT, headers=bearer("4pp")).status == 200  # it goes on
    tool("import", "--data-dir", str(tmp_path / "restored"), str(dump))
    restored = reactord("--data-dir", str(tmp_path / "restored"))
    assert get_state(restored) == {"n": 4}
    assert post_events(restored, INCREMENT).json()["version"] == 5


def test_import_refuses_a_directory_that_holds_a_state(reactord, tmp_path):
    data = tmp_path / "data"
    server = reactord("--data-dir", str(data))
    fill(server, 2)
    assert server.stop() == 0
    tool("export", "--data-dir", str(data), "-o", str(tmp_path / "backup.jsonl"))
    done = run_reactord("import", "--data-dir", str(data), str(tmp_path / "backup.jsonl"))
    assert done.returncode != 0, "import overwrote a data directory that holds a state"


def config_lines(text: str) -> list[str]:
    """A configuration's directives: comments and blank lines left out, whitespace normalised."""
    lines = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.strip().startswith("#") else ""
        if line:
            lines.append(" ".join(line.split()))
    return lines


@pytest.mark.parametrize("heading, fence, path", [
    ("### nginx", "nginx", "nginx/reactord.conf"),
    ("### Caddy", "caddyfile", "caddy/Caddyfile"),
])
def test_the_proxy_configurations_in_the_docs_are_the_deployed_files(heading, fence, path):
    text = (DOCS / "operations.md").read_text()
    section = text[text.index(heading):]
    block = section[section.index(f"```{fence}\n") + len(fence) + 4:]
    block = block[:block.index("```")]
    assert config_lines(block) == config_lines((DEPLOY / path).read_text()), f"docs/operations.md and deploy/{path} differ"
