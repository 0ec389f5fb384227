"""The scripts in Clients/curl, run as users run them against a live server."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import CURL_EXAMPLES, get_state, post_events, request
from subscriptions import without_history

SCRIPTS = [
    "health.sh", "fire-event.sh", "fire-batch.sh", "fire-prune.sh", "read-state.sh", "read-path.sh",
    "conditional-get.sh", "idempotent-retry.sh", "optimistic-update.sh", "with-token.sh",
    "history.sh", "time-travel.sh", "stream.sh",
]
TOKEN = "ex4mple-s3cret"


def run(script: str, *args: str, server=None, token: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REACTORD_")}
    if server is not None:
        env["REACTORD_URL"] = server.base_url
    if token is not None:
        env["REACTORD_TOKEN"] = token
    done = subprocess.run([str(CURL_EXAMPLES / script), *args], capture_output=True, text=True, env=env, timeout=20)
    if check:
        assert done.returncode == 0, f"{script} exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return done


def lines(done: subprocess.CompletedProcess) -> list[str]:
    return done.stdout.splitlines()


@pytest.fixture
def secured(reactord):
    return reactord("--token", f"examples:{TOKEN}:admin", "--token", "viewer:v1ew-only:read")


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_is_executable_bash_and_documented(script):
    path = CURL_EXAMPLES / script
    assert path.is_file()
    assert os.access(path, os.X_OK), f"{script} is not executable"
    text = path.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "${REACTORD_URL:-http://127.0.0.1:7070}" in text
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, timeout=10).returncode == 0
    assert f"`{script}" in (CURL_EXAMPLES / "README.md").read_text(), f"{script} is not in Clients/curl/README.md"


def test_every_script_is_tested():
    assert sorted(p.name for p in CURL_EXAMPLES.glob("*.sh")) == sorted(SCRIPTS)


def test_examples_in_order_with_a_token(secured):
    s = secured
    assert lines(run("health.sh", server=s)) == ['{"status":"live"}', '{"status":"ready","version":0}']

    assert lines(run("fire-event.sh", server=s, token=TOKEN)) == ['{"version":1}']
    assert lines(run("fire-event.sh", '{"type":"set","path":"/motd","value":"hello"}', server=s, token=TOKEN)) == ['{"version":2}']

    assert lines(run("fire-batch.sh", server=s, token=TOKEN)) == ['{"version":5,"applied":3}']

    prune = json.loads(run("fire-prune.sh", server=s, token=TOKEN).stdout)
    assert prune["version"] == 7 and prune["applied"] == 2
    assert [(r["index"], r["problem"]["type"]) for r in prune["rejected"]] == [(1, "/problems/event-rejected")]

    expected = {"counter": 3, "motd": "hello", "player": {"name": "Ayla", "level": 2}, "log": ["Ayla reached level 2"]}
    assert json.loads(run("read-state.sh", server=s, token=TOKEN).stdout) == expected

    assert lines(run("read-path.sh", server=s, token=TOKEN)) == ["3"]
    assert lines(run("read-path.sh", "/player/name", server=s, token=TOKEN)) == ['"Ayla"']
    missing = run("read-path.sh", "/nope", server=s, token=TOKEN, check=False)
    assert missing.returncode != 0
    assert json.loads(missing.stdout)["type"] == "/problems/path-not-found"

    assert lines(run("conditional-get.sh", server=s, token=TOKEN)) == ['ETag: "7"', 'If-None-Match: "7" -> 304 Not Modified']

    assert lines(run("idempotent-retry.sh", "order-1", server=s, token=TOKEN)) == [
        'first: 200 {"version":8}',
        'retry: 200 {"version":8} Idempotent-Replayed: true',
    ]
    assert lines(run("idempotent-retry.sh", server=s, token=TOKEN))[1] == 'retry: 200 {"version":9} Idempotent-Replayed: true'

    assert lines(run("optimistic-update.sh", server=s, token=TOKEN)) == ['/counter: 5 -> 6 {"version":10}']
    assert lines(run("optimistic-update.sh", "/player/level", server=s, token=TOKEN)) == ['/player/level: 2 -> 3 {"version":11}']

    state = request(s, "GET", "/state", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert state["counter"] == 6 and state["player"]["level"] == 3

    out = lines(run("with-token.sh", server=s, token="v1ew-only"))
    assert out[0] == 'without a token: 401 Bearer realm="reactord"'
    assert out[1].startswith("Authorization: Bearer: 200 ") and json.loads(out[1].split(" 200 ", 1)[1]) == state
    assert out[2].startswith("?access_token=: 200 ") and json.loads(out[2].split(" 200 ", 1)[1]) == state


def test_scripts_fail_loudly_without_the_token(secured):
    done = run("fire-event.sh", server=secured, check=False)
    assert done.returncode != 0
    assert json.loads(done.stdout)["type"] == "/problems/unauthorized"
    done = run("with-token.sh", server=secured, check=False)
    assert done.returncode != 0 and "REACTORD_TOKEN" in done.stderr


def test_scripts_without_tokens_configured(server):
    assert lines(run("fire-event.sh", server=server)) == ['{"version":1}']
    assert lines(run("read-state.sh", server=server)) == ['{"counter":1}']
    assert lines(run("conditional-get.sh", server=server)) == ['ETag: "1"', 'If-None-Match: "1" -> 304 Not Modified']


def test_batch_script_failure_applies_nothing(server):
    done = run("fire-batch.sh", '[{"type":"increment","path":"/a"},{"type":"remove","path":"/b"}]', server=server, check=False)
    assert done.returncode != 0
    problem = json.loads(done.stdout)
    assert problem["type"] == "/problems/event-rejected" and problem["index"] == 1
    assert get_state(server) == {}


def test_read_path_escapes_pointer_tokens(server):
    post_events(server, {"type": "set", "path": "/a~1b", "value": {"c d": 1}})
    assert lines(run("read-path.sh", "/a~1b/c d", server=server)) == ["1"]


def test_optimistic_update_retries_after_a_conflict(server, tmp_path):
    # A stand-in for curl that lets another client bump /counter right after the script reads it,
    # the first time only: the script's first patch must then fail its test and be retried.
    post_events(server, {"type": "set", "path": "/counter", "value": 10})
    marker = tmp_path / "raced"
    fake = tmp_path / "bin" / "curl"
    fake.parent.mkdir()
    fake.write_text(
        "#!/usr/bin/env bash\n"
        'out=$(command -p curl "$@"); rc=$?; printf "%s" "$out"\n'
        f'if [ ! -e {marker} ] && [[ " $* " == *" -G "* ]]; then touch {marker}; '
        f"command -p curl -s -o /dev/null -H 'Content-Type: application/json' "
        f"--data-binary '{{\"type\":\"increment\",\"path\":\"/counter\"}}' {server.base_url}/events; fi\n"
        "exit $rc\n"
    )
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REACTORD_")}
    env.update(REACTORD_URL=server.base_url, PATH=f"{fake.parent}:{env['PATH']}")
    done = subprocess.run([str(CURL_EXAMPLES / "optimistic-update.sh")], capture_output=True, text=True, env=env, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["/counter: 10 changed meanwhile (409), retrying", '/counter: 11 -> 12 {"version":3}']
    assert get_state(server) == {"counter": 12}


@pytest.fixture
def journaled(reactord, tmp_path):
    return reactord("--data-dir", str(tmp_path / "data"))


def test_history_lists_events_after_a_version(journaled):
    for value in ("a", "b", "c"):
        post_events(journaled, {"type": "append", "path": "/log", "value": value} if value != "a" else {"type": "set", "path": "/log", "value": ["a"]})
    events = [json.loads(line) for line in lines(run("history.sh", server=journaled))]
    assert [event["version"] for event in events] == [1, 2, 3]
    assert events[1]["event"] == {"type": "append", "path": "/log", "value": "b"}
    assert [json.loads(line)["version"] for line in lines(run("history.sh", "1", "1", server=journaled))] == [2]


def test_time_travel_reads_a_past_state_and_explains_a_future_one(journaled):
    for _ in range(3):
        post_events(journaled, {"type": "increment", "path": "/counter"})
    assert lines(run("time-travel.sh", "2", server=journaled)) == ['{"counter":2}']
    assert lines(run("time-travel.sh", "1", "/counter", server=journaled)) == ["1"]
    future = run("time-travel.sh", "9", server=journaled, check=False)
    assert future.returncode != 0
    assert json.loads(future.stdout)["type"] == "/problems/version-not-found"


def test_stream_prints_a_snapshot_then_patches(server):
    post_events(server, {"type": "set", "path": "/counter", "value": 1})
    stream = subprocess.Popen([str(CURL_EXAMPLES / "stream.sh"), "", "3"], stdout=subprocess.PIPE, text=True,
                              env={**{k: v for k, v in os.environ.items() if not k.startswith("REACTORD_")}, "REACTORD_URL": server.base_url})
    try:
        first = stream.stdout.readline()
        while not first.startswith("data:"):
            first = stream.stdout.readline()
        assert without_history(json.loads(first[5:])) == {"type": "snapshot", "version": 1, "state": {"counter": 1}}
        post_events(server, {"type": "increment", "path": "/counter"})
        line = stream.stdout.readline()
        while not line.startswith("data:"):
            line = stream.stdout.readline()
        assert json.loads(line[5:]) == {"type": "patch", "version": 2, "ops": [{"op": "replace", "path": "/counter", "value": 2}]}
        assert stream.wait(10) == 0, "a stream bounded by its seconds ends with status 0"
    finally:
        stream.kill()
        stream.wait(5)
