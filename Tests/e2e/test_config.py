"""Settings from a JSON config file, REACTORD_* variables and flags: file < environment < flags."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from conftest import REACTORD_BIN, assert_problem, free_port, post_events, raw, request, run_reactord
from prometheus import scrape


def write_config(tmp_path, settings: dict, name: str = "reactord.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(settings))
    return str(path)


def test_port_from_the_config_file(reactord, tmp_path):
    port = free_port()
    server = reactord("--config", write_config(tmp_path, {"port": port}), port=False)
    assert server.port == port
    assert request(server, "GET", "/livez").status == 200


def test_environment_overrides_the_config_file(reactord, tmp_path):
    file_port, env_port = free_port(), free_port()
    server = reactord("--config", write_config(tmp_path, {"port": file_port}), env={"REACTORD_PORT": str(env_port)}, port=False)
    assert server.port == env_port


def test_flags_override_the_environment_and_the_config_file(reactord, tmp_path):
    file_port, env_port, flag_port = free_port(), free_port(), free_port()
    server = reactord(
        "--config", write_config(tmp_path, {"port": file_port}), "--port", str(flag_port),
        env={"REACTORD_PORT": str(env_port)},
    )
    assert server.port == flag_port


def test_log_level_precedence(reactord, tmp_path):
    config = write_config(tmp_path, {"logLevel": "info"})
    # File alone: info, so requests are logged.
    server = reactord("--config", config)
    request(server, "GET", "/livez")
    server.wait_for_log(r"path=/livez")
    # Environment over file: notice, so they are not.
    quiet = reactord("--config", config, env={"REACTORD_LOG_LEVEL": "notice"})
    request(quiet, "GET", "/livez")
    # Flag over environment: info again.
    loud = reactord("--config", config, "--log-level", "info", env={"REACTORD_LOG_LEVEL": "notice"})
    request(loud, "GET", "/livez")
    loud.wait_for_log(r"path=/livez")
    quiet.stop()
    assert quiet.request_lines() == [], quiet.log()


def test_tokens_precedence(reactord, tmp_path):
    config = write_config(tmp_path, {"tokens": [{"name": "filetok", "secret": "file-secret", "scopes": ["read"]}]})
    by_file = reactord("--config", config)
    assert request(by_file, "GET", "/state", headers={"Authorization": "Bearer file-secret"}).status == 200

    by_env = reactord("--config", config, env={"REACTORD_TOKENS": "envtok:env-secret:read"})
    assert request(by_env, "GET", "/state", headers={"Authorization": "Bearer env-secret"}).status == 200
    assert request(by_env, "GET", "/state", headers={"Authorization": "Bearer file-secret"}).status == 401

    by_flag = reactord("--config", config, "--token", "flagtok:flag-secret:read", env={"REACTORD_TOKENS": "envtok:env-secret:read"})
    assert request(by_flag, "GET", "/state", headers={"Authorization": "Bearer flag-secret"}).status == 200
    assert request(by_flag, "GET", "/state", headers={"Authorization": "Bearer env-secret"}).status == 401


def test_config_file_tokens_with_event_types(reactord, tmp_path):
    config = write_config(tmp_path, {"tokens": [
        {"name": "bot", "secret": "b0t-secret", "scopes": ["fire"], "eventTypes": ["increment"]},
        {"name": "ops", "secret": "0ps-secret", "scopes": ["admin"]},
    ]})
    server = reactord("--config", config)
    bot = {"Authorization": "Bearer b0t-secret"}
    assert post_events(server, {"type": "increment", "path": "/n"}, headers=bot).status == 200
    assert_problem(post_events(server, {"type": "set", "path": "/n", "value": 0}, headers=bot), 403, "forbidden")
    assert request(server, "GET", "/state", headers={"Authorization": "Bearer 0ps-secret"}).json() == {"n": 1}


def test_every_config_file_key(reactord, tmp_path):
    initial = tmp_path / "initial.json"
    initial.write_text('{"from": "file"}')
    config = write_config(tmp_path, {
        "host": "127.0.0.1",
        "port": 0,
        "logLevel": "info",
        "initialState": str(initial),
        "insecure": False,
        "corsOrigins": ["http://example.test"],
        "maxConnections": 5,
        "requestTimeout": 5,
        "idleTimeout": 30.5,
        "maxBodyBytes": 64,
        "maxHeaderBytes": 2048,
    })
    server = reactord("--config", config, port=False)
    assert request(server, "GET", "/state").json() == {"from": "file"}
    assert request(server, "GET", "/livez", headers={"Origin": "http://example.test"}).header("Access-Control-Allow-Origin") == "http://example.test"
    assert_problem(post_events(server, {"type": "set", "path": "/long", "value": "x" * 64}), 413, "body-too-large")
    assert_problem(request(server, "GET", "/livez", headers={"X-Fill": "a" * 3000}), 431, "headers-too-large")
    assert "unknown keys" not in server.log()


def test_limits_from_the_environment(reactord):
    server = reactord(env={"REACTORD_MAX_BODY_BYTES": "64", "REACTORD_MAX_HEADER_BYTES": "2048"})
    assert_problem(post_events(server, {"type": "set", "path": "/long", "value": "x" * 64}), 413, "body-too-large")
    assert_problem(request(server, "GET", "/livez", headers={"X-Fill": "a" * 3000}), 431, "headers-too-large")


def test_flag_limit_overrides_the_file(reactord, tmp_path):
    server = reactord("--config", write_config(tmp_path, {"maxBodyBytes": 64}), "--max-body-bytes", "1000")
    assert post_events(server, {"type": "set", "path": "/long", "value": "x" * 64}).status == 200


def test_max_connections_from_the_environment(reactord):
    server = reactord(env={"REACTORD_MAX_CONNECTIONS": "1"})
    with raw(server) as first:
        first.send(b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert first.read_response().status == 200
        with raw(server) as second:
            assert_problem(second.read_response(), 503, "too-many-connections")


def test_unknown_config_keys_are_named_in_a_warning(reactord, tmp_path):
    config = write_config(tmp_path, {"port": 0, "colour": "blue", "maxConections": 3})
    server = reactord("--config", config, port=False)
    line = server.wait_for_log(r"warning .*unknown keys.*").group(0)
    assert "colour" in line and "maxConections" in line
    assert request(server, "GET", "/livez").status == 200


def test_initial_state_path_from_the_environment(reactord, tmp_path):
    initial = tmp_path / "s.json"
    initial.write_text("[1, 2, 3]")
    server = reactord(env={"REACTORD_INITIAL_STATE": str(initial)})
    assert request(server, "GET", "/state").json() == [1, 2, 3]


def keyed_increment(server, key: str):
    answer = post_events(server, {"type": "increment", "path": "/n"}, headers={"Idempotency-Key": key})
    assert answer.status == 200, answer.body
    return answer.json()["version"], answer.header("Idempotent-Replayed")


@pytest.mark.parametrize("layer", ["flag", "environment", "file"])
def test_the_idempotency_window_and_key_count_are_settings(reactord, tmp_path, layer):
    if layer == "environment":
        server = reactord(env={"REACTORD_IDEMPOTENCY_WINDOW": "2", "REACTORD_IDEMPOTENCY_KEYS": "2"})
    elif layer == "file":
        server = reactord("--config", write_config(tmp_path, {"idempotencyWindow": 2, "idempotencyKeys": 2}))
    else:
        server = reactord("--idempotency-window", "2", "--idempotency-keys", "2")
    # Two keys are remembered; a third makes the oldest forgotten, and its retry applies again.
    assert keyed_increment(server, "a") == (1, None)
    assert keyed_increment(server, "b") == (2, None)
    assert keyed_increment(server, "a") == (1, "true")
    assert keyed_increment(server, "c") == (3, None)
    assert keyed_increment(server, "b") == (2, "true")
    assert keyed_increment(server, "a") == (4, None)
    # Two seconds on, every key has expired.
    time.sleep(2.2)
    assert keyed_increment(server, "c") == (5, None)


def test_a_restart_remembers_as_many_keys_as_the_setting_says(reactord, tmp_path):
    data_dir = tmp_path / "data"
    flags = ("--data-dir", str(data_dir), "--idempotency-keys", "2", "--snapshot-events", "3")
    server = reactord(*flags)
    for key in "abc":
        keyed_increment(server, key)
    assert server.stop() == 0
    server = reactord(*flags)
    # The newest two, from the snapshot at version 3 and the records.
    assert keyed_increment(server, "b") == (2, "true")
    assert keyed_increment(server, "c") == (3, "true")
    assert keyed_increment(server, "a") == (4, None)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"port": "seventy"}, "port"),
        ({"logLevel": "loud"}, "logLevel"),
        ({"tokens": [{"name": "a", "secret": "b", "scopes": ["write"]}]}, "write"),
        ({"maxHeaderBytes": 100}, "max-header-bytes"),
        ({"requestTimeout": 0}, "request-timeout"),
        ({"idempotencyWindow": 0}, "idempotency-window"),
        ({"idempotencyWindow": 0.5}, "idempotency-window"),
        ({"idempotencyWindow": 604801}, "idempotency-window"),
        ({"idempotencyKeys": 0}, "idempotency-keys"),
        ({"idempotencyKeys": "many"}, "idempotencyKeys"),
    ],
)
def test_bad_config_values_are_refused(tmp_path, settings, message):
    done = run_reactord("--config", write_config(tmp_path, settings))
    assert done.returncode != 0
    assert message in done.stderr, done.stderr


def test_config_file_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"port": 0,')
    done = run_reactord("--config", str(path))
    assert done.returncode != 0
    assert "not valid JSON" in done.stderr and str(path) in done.stderr, done.stderr


def test_missing_config_file_is_refused(tmp_path):
    done = run_reactord("--config", str(tmp_path / "absent.json"))
    assert done.returncode != 0
    assert "absent.json" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--port", "70000"], {}, "port"),
        (["--port", "0", "--log-level", "loud"], {}, "log-level"),
        (["--port", "0", "--max-connections", "0"], {}, "max-connections"),
        ([], {"REACTORD_PORT": "abc"}, "REACTORD_PORT"),
        (["--port", "0", "--idempotency-window", "-5"], {}, "idempotency-window"),
        ([], {"REACTORD_PORT": "0", "REACTORD_IDEMPOTENCY_KEYS": "0"}, "idempotency-keys"),
        ([], {"REACTORD_PORT": "0", "REACTORD_LOG_LEVEL": "loud"}, "REACTORD_LOG_LEVEL"),
        (["--port", "0", "--initial-state", "/nonexistent/state.json"], {}, "/nonexistent/state.json"),
    ],
)
def test_bad_settings_are_refused(args, env, message):
    done = run_reactord(*args, env=env)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--request-timeout", "1e30"], {}, "request-timeout"),
        (["--idle-timeout", "inf"], {}, "idle-timeout"),
        (["--ping-interval", "1e-9"], {}, "ping-interval"),
        (["--event-rate-limit", "inf"], {}, "event-rate-limit"),
        (["--event-rate-limit", "5", "--event-rate-burst", "1e300"], {}, "event-rate-burst"),
        (["--max-connection-rate", "1e300"], {}, "max-connection-rate"),
        (["--redis", "redis://127.0.0.1:6379", "--redis-timeout", "1e30"], {}, "redis-timeout"),
        (["--redis", "redis://127.0.0.1:6379"], {"REACTORD_REDIS_TIMEOUT": "inf"}, "redis-timeout"),
        (["--redis", "redis://127.0.0.1:6379", "--redis-timeout", "0.0001"], {}, "redis-timeout"),
        (["--redis", "redis://127.0.0.1:6379/5"], {}, "database 0"),
        (["--redis", "redis://127.0.0.1:70000"], {}, "1 to 65535"),
        (["--redis", "redis://[::1]:0"], {}, "1 to 65535"),
    ],
)
def test_out_of_range_settings_are_configuration_errors(args, env, message):
    """Values a number parses to but no timer or port can hold are refused as configuration
    (exit 64), never a crash (`inf` or `1e30` seconds once trapped converting to milliseconds)."""
    done = run_reactord("--port", "0", *args, env=env)
    assert done.returncode == 64, (done.returncode, done.stderr[-500:])
    assert message in done.stderr, done.stderr


def test_config_check_checks_the_cluster_settings(tmp_path):
    done = subprocess.run([REACTORD_BIN, "config", "check", write_config(tmp_path, {"redis": "redis://127.0.0.1:6379", "redisTimeout": 1e300})],
                          capture_output=True, text=True, timeout=10)
    assert done.returncode == 1 and "redis-timeout" in done.stderr, (done.returncode, done.stderr)


def test_initial_state_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("{oops")
    done = run_reactord("--port", "0", "--initial-state", str(path))
    assert done.returncode != 0
    assert "not valid JSON" in done.stderr, done.stderr


def test_port_in_use_is_refused(server):
    done = run_reactord("--port", str(server.port))
    assert done.returncode != 0
    assert str(server.port) in done.stderr, done.stderr


# ---------------------------------------------------------------------------------------------
# Precedence, setting by setting: each layer gives its own value and the server's behaviour says
# which one won. A layer that sets only some keys leaves the others to the layer below.


LAYERS = ["file", "file+env", "file+env+flags"]


def layered(tmp_path, layers: str, file: dict, env: dict, flags: list[str]) -> tuple[list[str], dict]:
    args = ["--config", write_config(tmp_path, file)]
    if "flags" in layers:
        args += flags
    return args, (env if "env" in layers else {})


def events_until_limited(server, headers: dict, most: int = 10) -> int:
    for passed in range(most):
        answer = post_events(server, {"type": "increment", "path": "/n"}, headers=headers)
        if answer.status != 200:
            assert_problem(answer, 429, "rate-limited")
            return passed
    return most


@pytest.mark.parametrize("layers, expected", zip(LAYERS, [1, 2, 3]))
def test_event_rate_precedence(reactord, tmp_path, layers, expected):
    # The rate comes from the file in every case (0.01/s: no refill during the test); only the
    # burst is overridden, so the layers merge key by key.
    args, env = layered(
        tmp_path, layers,
        file={"eventRateLimit": 0.01, "eventRateBurst": 1},
        env={"REACTORD_EVENT_RATE_BURST": "2"},
        flags=["--event-rate-burst", "3"],
    )
    server = reactord(*args, "--token", "a:s3cret:fire", env=env)
    assert events_until_limited(server, {"Authorization": "Bearer s3cret"}) == expected


@pytest.mark.parametrize("layers, expected", zip(LAYERS, [1, 2, 3]))
def test_connection_rate_precedence(reactord, tmp_path, layers, expected):
    # Bursts of twice the rate: 0.5 -> 1, 1 -> 2, 1.5 -> 3 connections before a 429.
    args, env = layered(
        tmp_path, layers,
        file={"maxConnectionRate": 0.5},
        env={"REACTORD_MAX_CONNECTION_RATE": "1"},
        flags=["--max-connection-rate", "1.5"],
    )
    server = reactord(*args, env=env)
    statuses = [request(server, "GET", "/livez").status for _ in range(6)]
    assert statuses == [200] * expected + [429] * (6 - expected), statuses


@pytest.mark.parametrize("layers, expected", zip(LAYERS, [1, 2, 3]))
def test_max_connections_precedence(reactord, tmp_path, layers, expected):
    args, env = layered(
        tmp_path, layers,
        file={"maxConnections": 1},
        env={"REACTORD_MAX_CONNECTIONS": "2"},
        flags=["--max-connections", "3"],
    )
    server = reactord(*args, env=env)
    held = []
    try:
        while len(held) <= 4:
            conn = raw(server)
            held.append(conn)
            conn.send(b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
            answer = conn.read_response()
            if answer.status == 503:
                assert_problem(answer, 503, "too-many-connections")
                break
            assert answer.status == 200, answer
        assert len(held) - 1 == expected
    finally:
        for conn in held:
            conn.close()


@pytest.mark.parametrize("layers, expected", zip(LAYERS, [("file", 3), ("env", 4), ("flag", 5)]))
def test_data_dir_and_snapshot_events_precedence(reactord, tmp_path, layers, expected):
    # A snapshot every 3, 4 or 5 events: after 5 events there is one, at 3, 4 or 5.
    args, env = layered(
        tmp_path, layers,
        file={"dataDir": str(tmp_path / "file"), "snapshotEvents": 3},
        env={"REACTORD_DATA_DIR": str(tmp_path / "env"), "REACTORD_SNAPSHOT_EVENTS": "4"},
        flags=["--data-dir", str(tmp_path / "flag"), "--snapshot-events", "5"],
    )
    server = reactord(*args, env=env)
    directory, newest = expected
    for _ in range(5):
        assert post_events(server, {"type": "increment", "path": "/n"}).status == 200
    deadline = time.monotonic() + 5
    while scrape(server).value("reactor_snapshot_version") != newest:
        assert time.monotonic() < deadline, f"no snapshot at {newest}:\n{scrape(server).text}"
        time.sleep(0.02)
    assert server.stop() == 0
    used = [name for name in ("file", "env", "flag") if (tmp_path / name).exists()]
    assert used == [directory], used
    snapshots = sorted(path.name for path in (tmp_path / directory / "snapshots").glob("*.snapshot"))
    assert snapshots[-1] == f"{newest:020d}.snapshot", snapshots


@pytest.mark.parametrize("entry, message", [
    ({"eventTypes": "increment"}, '"eventTypes" must be an array'),
    ({"eventTypes": ["increment", 3]}, '"eventTypes" must be an array'),
    ({"eventtypes": ["increment"]}, 'unknown member "eventtypes"'),
    ({"eventsPerSec": 1}, 'unknown member "eventsPerSec"'),
    ({"eventsPerSecond": 1, "burst": "3"}, '"burst" must be a number'),
    ({"burst": 3}, '"burst" needs "eventsPerSecond"'),
    ({"scopes": ["fire", 1]}, '"scopes" must be an array of strings'),
])
def test_a_token_entry_that_would_lose_a_restriction_is_refused(tmp_path, entry, message):
    """A misspelt or mistyped restriction must not leave the token unrestricted."""
    token = {"name": "bot", "secret": "b0t-secret", "scopes": ["fire"], **entry}
    path = write_config(tmp_path, {"tokens": [token]})
    done = subprocess.run([REACTORD_BIN, "config", "check", path], capture_output=True, text=True, timeout=10)
    assert done.returncode == 1 and message in done.stderr, (done.returncode, done.stderr)
    served = run_reactord("--port", "0", "--config", path)
    assert served.returncode == 64 and message in served.stderr, (served.returncode, served.stderr[-500:])


def test_a_redis_password_holding_a_slash_is_never_printed(tmp_path):
    secret = "Tr0ub4dor/CorrectHorseBattery"
    for args in (["config", "check", write_config(tmp_path, {"redis": f"redis://:{secret}@127.0.0.1:6379"})],
                 ["--port", "0", "--redis", f"redis://:{secret}@127.0.0.1:6379"]):
        done = subprocess.run([REACTORD_BIN, *args], capture_output=True, text=True, timeout=10)
        assert done.returncode != 0, done
        output = done.stdout + done.stderr
        assert "percent-encoded" in output, output
        assert "Tr0ub4dor" not in output and "CorrectHorseBattery" not in output, output


def test_a_config_file_with_secrets_that_others_may_read_is_warned_of(reactord, tmp_path):
    path = write_config(tmp_path, {"tokens": [{"name": "ops", "secret": "0ps-s3cret", "scopes": ["read"]}]})
    os.chmod(path, 0o644)
    server = reactord("--config", path)
    server.wait_for_log(r"holds token secrets and other users may read it")
    assert "0ps-s3cret" not in server.log()
    private = write_config(tmp_path, {"tokens": [{"name": "ops", "secret": "0ps-s3cret", "scopes": ["read"]}]}, name="private.json")
    os.chmod(private, 0o600)
    quiet = reactord("--config", private)
    assert "other users may read it" not in quiet.log()
