"""Hostile and out-of-range input: JSON Pointers and documents nested deeper than reactord keeps
(512 levels), data directories written before that limit and `reactord repair`, integers that do
not fit 64 bits, and HTTP requests that are not quite HTTP/1.1 (a transfer coding reactord does not
implement, bad Host values, a TLS handshake on the plain port, broken percent escapes).

Depth is counted as reactord counts it: each array or object is a level, the outermost is 1, a
scalar adds none. A value put n tokens down a JSON Pointer sits inside n containers, so the
document's depth is n plus the value's own nesting. A request body is read with the same limit, and
the event object around the value is its first level.

Every refused input gets an RFC 9457 problem, changes nothing, and leaves the server serving.
"""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path

import pytest

from conftest import (
    REACTORD_BIN,
    assert_problem,
    clean_environment,
    curl_response,
    http_request,
    post_events,
    raw,
    request,
    wait_until,
)
from journal import (
    encode_header,
    encode_record,
    fire,
    segment_path,
    snapshot_path,
    snapshot_versions,
    state_and_version,
)
from subscriptions import next_json, subscribe, without_history

LIMIT = 512


# ---------------------------------------------------------------------------------------------
# Helpers


def deep_path(tokens: int, root: str = "a", token: str = "a") -> str:
    """A pointer `tokens` tokens long: /root/token/token/..."""
    return "/" + root + f"/{token}" * (tokens - 1) if tokens else ""


def nested_arrays(levels: int, leaf: str = "1") -> str:
    """JSON text of `levels` arrays around `leaf` (`levels` = 0 is the leaf alone)."""
    return "[" * levels + leaf + "]" * levels


def nested_objects(levels: int, leaf: str = "1", key: str = "a") -> str:
    """JSON text of `levels` objects {"a":{"a":...leaf}} (`levels` = 0 is the leaf alone)."""
    return f'{{"{key}":' * levels + leaf + "}" * levels


def depth(value) -> int:
    """How deep a parsed JSON value nests, counted without recursion (arrays and objects only)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, above = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, above + 1)
            stack.extend((child, above + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def etag_version(server) -> int:
    answer = request(server, "GET", "/state")
    assert answer.status == 200, answer
    return int(answer.header("ETag").strip('"'))


def assert_serving(server, version: int | None = None) -> None:
    """The process is alive and answers a fresh client; the state is still at `version`."""
    assert server.process.poll() is None, f"reactord exited with {server.process.returncode}:\n{server.log()[-3000:]}"
    live = request(server, "GET", "/livez")
    assert live.status == 200 and live.json() == {"status": "live"}, live
    if version is not None:
        assert etag_version(server) == version


def assert_too_deep(answer) -> dict:
    problem = assert_problem(answer, 422, "too-deep")
    assert problem.get("limit") == LIMIT, problem
    assert str(LIMIT) in problem["detail"], problem
    return problem


def post_text(server, text: str):
    """POSTs JSON text as it is (for values json.dumps would not write, or would write otherwise)."""
    return post_events(server, text.encode())


def event_text(kind: str, path: str, member: str | None = None, value_text: str | None = None) -> str:
    text = f'{{"type":"{kind}","path":{json.dumps(path)}'
    if member is not None:
        text += f',"{member}":{value_text}'
    return text + "}"


# ---------------------------------------------------------------------------------------------
# A. Deep JSON Pointers and deep values are refused with 422 too-deep, and the server lives on


def test_a_30000_token_pointer_is_422_too_deep_and_the_server_lives(server, tmp_path):
    fire(server, {"type": "set", "path": "/keep", "value": 1})
    body = tmp_path / "deep.json"
    body.write_text(json.dumps({"type": "set", "path": "/a" * 30000, "value": 1}))
    answer = curl_response(f"{server.base_url}/events", "-H", "Content-Type: application/json", "--data-binary", f"@{body}")
    problem = assert_too_deep(answer)
    assert "index" not in problem
    assert_serving(server, version=1)
    assert state_and_version(server) == ({"keep": 1}, 1)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "set", "path": "/a" * 30000, "value": 1},
        {"type": "append", "path": "/a" * 30000, "value": 1},
        {"type": "increment", "path": "/a" * 30000},
        {"type": "increment", "path": "/a" * 30000, "by": 2},
        {"type": "merge", "path": "/a" * 30000, "value": {"k": 1}},
        {"type": "patch", "ops": [{"op": "add", "path": "/a" * 30000, "value": 1}]},
        {"type": "patch", "ops": [{"op": "replace", "path": "", "value": {}}, {"op": "add", "path": "/a" * 2000, "value": 1}]},
    ],
    ids=["set", "append", "increment", "increment-by", "merge", "patch-add", "patch-second-op"],
)
def test_deep_pointers_in_every_event_type_are_422_too_deep(server, event):
    fire(server, {"type": "set", "path": "/keep", "value": [1, 2]})
    assert_too_deep(post_events(server, event))
    # Also inside an array of events: the whole array is refused, nothing of it applied.
    answer = post_events(server, [{"type": "set", "path": "/first", "value": 1}, event])
    problem = assert_too_deep(answer)
    assert problem.get("index") == 1, problem
    assert_serving(server, version=1)
    assert state_and_version(server) == ({"keep": [1, 2]}, 1)


def test_a_deep_pointer_over_a_websocket_fire_is_an_error_and_the_connection_lives(server):
    with subscribe(server) as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 0, "state": {}}
        ws.send(json.dumps({"type": "fire", "id": "deep", "event": {"type": "set", "path": "/a" * 30000, "value": 1}}))
        error = next_json(ws)
        assert error["type"] == "error" and error["id"] == "deep", error
        assert error["problem"]["type"] == "/problems/too-deep", error
        assert error["problem"]["status"] == 422 and error["problem"]["limit"] == LIMIT, error
        ws.send(json.dumps({"type": "fire", "id": "patch", "event": {"type": "patch", "ops": [{"op": "add", "path": "/b" * 5000, "value": 1}]}}))
        error = next_json(ws)
        assert (error["type"], error["id"], error["problem"]["type"]) == ("error", "patch", "/problems/too-deep"), error
        # A message that itself nests too deep: refused as a message, the connection stays.
        ws.send('{"type":"fire","id":1,"event":{"type":"set","path":"/x","value":' + nested_arrays(600) + "}}")
        error = next_json(ws)
        assert error["type"] == "error" and error["problem"]["type"] == "/problems/too-deep", error
        # The same connection still fires.
        ws.send(json.dumps({"type": "fire", "id": "ok", "event": {"type": "increment", "path": "/n"}}))
        assert next_json(ws) == {"type": "patch", "version": 1, "ops": [{"op": "add", "path": "/n", "value": 1}]}
        assert next_json(ws) == {"type": "ack", "id": "ok", "version": 1}
    assert_serving(server, version=1)


def test_a_body_nesting_deeper_than_512_is_422_too_deep_not_400(server):
    # A body may wrap a value at the limit (it is read with a few levels to spare for its own
    # envelope); the document would then nest 513 levels, which the event is refused for.
    body = '{"type":"set","path":"/x","value":' + nested_arrays(LIMIT) + "}"
    assert_too_deep(post_text(server, body))
    # Far deeper: refused where the body is read, saying where, and never a crash.
    problem = assert_too_deep(post_text(server, '{"type":"set","path":"/x","value":' + nested_arrays(100_000) + "}"))
    assert problem["line"] == 1 and isinstance(problem["column"], int), problem
    assert_too_deep(post_text(server, "[" * 100_000))
    assert_serving(server, version=0)


@pytest.mark.parametrize(
    "path_tokens, value_levels",
    [(1, LIMIT - 1), (0, LIMIT - 1), (LIMIT, 0), (LIMIT - 1, 1), (LIMIT - 2, 2)],
    ids=["x-and-511", "root-and-511", "512-tokens", "511-tokens-and-1", "510-tokens-and-2"],
)
def test_a_set_that_makes_the_document_exactly_512_deep_is_accepted(server, path_tokens, value_levels):
    path = deep_path(path_tokens, root="x")
    answer = post_text(server, event_text("set", path, "value", nested_arrays(value_levels)))
    assert answer.status == 200, answer
    assert answer.json() == {"version": 1}
    state, version = state_and_version(server)
    assert version == 1
    assert depth(state) == path_tokens + value_levels
    # The value reads back at its path.
    read = request(server, "GET", f"/state?path={path}")
    assert read.status == 200, read
    assert depth(read.json()) == value_levels


@pytest.mark.parametrize(
    "path_tokens, value_levels",
    [(LIMIT + 1, 0), (LIMIT, 1), (LIMIT - 1, 2), (2, LIMIT - 1)],
    ids=["513-tokens", "512-tokens-and-1", "511-tokens-and-2", "2-tokens-and-511"],
)
def test_a_set_one_level_past_512_is_422_too_deep(server, path_tokens, value_levels):
    answer = post_text(server, event_text("set", deep_path(path_tokens, root="x"), "value", nested_arrays(value_levels)))
    assert_too_deep(answer)
    assert state_and_version(server) == ({}, 0)


def test_append_increment_and_merge_stop_at_512(server):
    # append puts the value inside an array at the path: one level more than the path.
    ok = post_text(server, event_text("append", deep_path(LIMIT - 1, root="ap"), "value", "1"))
    assert ok.status == 200, ok
    assert_too_deep(post_text(server, event_text("append", deep_path(LIMIT, root="aq"), "value", "1")))
    assert_too_deep(post_text(server, event_text("append", deep_path(LIMIT - 1, root="ar"), "value", "[]")))
    # increment puts a number at the path.
    ok = post_text(server, event_text("increment", deep_path(LIMIT, root="in")))
    assert ok.status == 200, ok
    assert_too_deep(post_text(server, event_text("increment", deep_path(LIMIT + 1, root="io"), "by", "5")))
    # merge puts the value's members below the path.
    ok = post_text(server, event_text("merge", deep_path(LIMIT - 1, root="me"), "value", '{"k":1}'))
    assert ok.status == 200, ok
    assert_too_deep(post_text(server, event_text("merge", deep_path(LIMIT, root="mf"), "value", '{"k":1}')))
    assert_too_deep(post_text(server, event_text("merge", deep_path(LIMIT - 1, root="mg"), "value", '{"k":{"j":1}}')))
    state, version = state_and_version(server)
    assert version == 3
    assert sorted(state) == ["ap", "in", "me"]
    assert depth(state) == LIMIT
    assert request(server, "GET", "/state?path=" + deep_path(LIMIT, root="in")).json() == 1


def test_a_patch_copy_past_512_is_422_too_deep_and_changes_nothing(server):
    fire(server, [
        {"type": "set", "path": "/src", "value": json.loads(nested_objects(250))},
        {"type": "set", "path": deep_path(301, root="dst"), "value": {}},
    ])
    before = state_and_version(server)
    assert before[1] == 2 and depth(before[0]) == 302
    target = deep_path(301, root="dst")
    # From /src/a*50 (200 levels) to 302 tokens down: 502 levels, accepted.
    fits = post_events(server, {"type": "patch", "ops": [{"op": "copy", "from": deep_path(51, root="src"), "path": target + "/t"}]})
    assert fits.status == 200, fits
    state, version = state_and_version(server)
    assert version == 3 and depth(state) == 502
    # From /src (250 levels) there: 552 levels, refused, and the operation before it with it.
    too_deep = post_events(server, {"type": "patch", "ops": [
        {"op": "add", "path": "/marker", "value": 1},
        {"op": "copy", "from": "/src", "path": target + "/u"},
    ]})
    assert_too_deep(too_deep)
    # A move that would nest too deep as well.
    assert_too_deep(post_events(server, {"type": "patch", "ops": [{"op": "move", "from": "/src", "path": target + "/v"}]}))
    assert state_and_version(server) == (state, 3)
    assert_serving(server, version=3)


# ---------------------------------------------------------------------------------------------
# B. An accepted event never makes the data directory unloadable; old directories are repaired


def stop(server) -> None:
    code = server.stop()
    assert code == 0, f"reactord exited with {code} on SIGTERM, not 0:\n{server.log()[-3000:]}"


def reactord_tool(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """`reactord check|repair ...`: the finished process (text output)."""
    return subprocess.run(
        [REACTORD_BIN, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=clean_environment(), timeout=timeout
    )


def refuse_to_start(data_dir: Path, timeout: float = 10) -> str:
    """Runs `reactord serve` on `data_dir`, which must refuse to start: its standard error."""
    args = [REACTORD_BIN, "serve", "--port", "0", "--data-dir", str(data_dir)]
    try:
        done = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=clean_environment(), timeout=timeout)
    except subprocess.TimeoutExpired as running:
        log = running.stderr.decode(errors="replace") if isinstance(running.stderr, bytes) else (running.stderr or "")
        raise AssertionError(f"reactord started on {data_dir} instead of refusing to:\n{log}") from None
    assert done.returncode != 0, done
    return done.stderr


def write_old_directory(data_dir: Path, snapshot_version: int, state_text: str, events: list[str]) -> None:
    """A data directory as an older reactord (without the depth limit) could have left it: a snapshot
    of `state_text` at `snapshot_version`, and a segment of `events` (JSON texts) after it."""
    (data_dir / "journal").mkdir(parents=True)
    (data_dir / "snapshots").mkdir()
    snapshot_path(data_dir, snapshot_version).write_bytes(
        encode_header(b"RSNP", snapshot_version, format=1) + encode_record(snapshot_version, state_text.encode())
    )
    first = snapshot_version + 1
    segment_path(data_dir, first).write_bytes(
        encode_header(b"RJNL", first, format=1) + b"".join(encode_record(first + i, text.encode()) for i, text in enumerate(events))
    )


@pytest.mark.time_limit(60)
def test_the_directory_only_ever_holds_states_that_load_again(reactord, tmp_path):
    data_dir = tmp_path / "data"
    server = reactord("--data-dir", str(data_dir), "--snapshot-events", "1")
    # What an older reactord accepted, journaled, and then could not load again: refused now.
    assert_too_deep(post_events(server, {"type": "set", "path": "/deep" + "/a" * 1000, "value": 1}))
    assert_too_deep(post_text(server, event_text("set", "/deep", "value", nested_arrays(LIMIT))))
    # Exactly 512 levels: accepted, snapshotted.
    assert fire(server, {"type": "set", "path": "/deep" + "/a" * (LIMIT - 2), "value": []}) == 1
    wait_until(lambda: 1 in snapshot_versions(data_dir), message="a snapshot at version 1")
    assert fire(server, {"type": "increment", "path": "/n"}) == 2
    before = request(server, "GET", "/state")
    assert before.status == 200 and before.header("ETag") == '"2"'
    assert depth(before.json()) == LIMIT
    stop(server)

    check = reactord_tool("check", "--data-dir", str(data_dir))
    assert check.returncode == 0, check
    assert check.stdout.startswith("ok:"), check

    again = reactord("--data-dir", str(data_dir), "--snapshot-events", "1")
    after = request(again, "GET", "/state")
    assert after.status == 200
    assert after.header("ETag") == before.header("ETag")
    assert after.body == before.body
    # And it keeps going from there.
    assert fire(again, {"type": "increment", "path": "/n"}) == 3


@pytest.mark.time_limit(60)
def test_events_at_the_limit_replay_from_the_journal_after_a_crash(reactord, tmp_path):
    data_dir = tmp_path / "data"
    server = reactord("--data-dir", str(data_dir))
    events = [
        event_text("set", "/x", "value", nested_arrays(LIMIT - 1)),
        event_text("set", deep_path(LIMIT, root="p"), "value", '"leaf"'),
        event_text("append", deep_path(LIMIT - 1, root="q"), "value", "1"),
        # The body's event, ops array and operation are 3 levels: the value may nest 509.
        '{"type":"patch","ops":[{"op":"add","path":"/r","value":' + nested_arrays(LIMIT - 3) + "}]}",
        json.dumps({"type": "patch", "ops": [{"op": "copy", "from": "/x", "path": "/copy"}]}),
    ]
    for number, text in enumerate(events, start=1):
        answer = post_text(server, text)
        assert answer.status == 200, (text[:100], answer)
        assert answer.json() == {"version": number}
    before = request(server, "GET", "/state")
    assert depth(before.json()) == LIMIT
    server.kill()  # no snapshot on the way out: the journal is replayed

    check = reactord_tool("check", "--data-dir", str(data_dir))
    assert check.returncode == 0, check
    again = reactord("--data-dir", str(data_dir))
    after = request(again, "GET", "/state")
    assert (after.header("ETag"), after.body) == (before.header("ETag"), before.body)


def old_directory_from_journal(data_dir: Path) -> None:
    write_old_directory(data_dir, 0, "{}", [
        json.dumps({"type": "set", "path": "/deep" + "/a" * 1000, "value": 1}),
        json.dumps({"type": "increment", "path": "/n"}),
    ])


def old_directory_from_snapshot(data_dir: Path) -> None:
    write_old_directory(data_dir, 1, '{"deep":' + nested_objects(1000) + "}", [json.dumps({"type": "increment", "path": "/n"})])


@pytest.mark.time_limit(90)
@pytest.mark.parametrize("build", [old_directory_from_journal, old_directory_from_snapshot], ids=["deep-journal-event", "deep-snapshot"])
def test_a_directory_from_before_the_limit_is_refused_then_repaired(reactord, tmp_path, build):
    data_dir = tmp_path / "data"
    build(data_dir)

    check = reactord_tool("check", "--data-dir", str(data_dir))
    assert check.returncode == 1, check
    assert "beyond reactord's limits" in check.stderr, check.stderr
    assert "reactord repair" in check.stderr, check.stderr
    assert str(LIMIT) in check.stderr, check.stderr

    refusal = refuse_to_start(data_dir)
    assert "reactord repair" in refusal, refusal

    repair = reactord_tool("repair", "--data-dir", str(data_dir))
    assert repair.returncode == 0, repair
    assert repair.stdout.startswith("repaired"), repair.stdout
    assert "version 2" in repair.stdout, repair.stdout
    pointers = [line.strip() for line in repair.stdout.splitlines()[1:]]
    assert len(pointers) == 1 and pointers[0].startswith("/deep/a/a/a/a"), repair.stdout

    check = reactord_tool("check", "--data-dir", str(data_dir))
    assert check.returncode == 0, check
    assert check.stdout.startswith("ok:") and "last version 2" in check.stdout, check.stdout

    server = reactord("--data-dir", str(data_dir))
    state, version = state_and_version(server)
    assert version == 2
    assert state["n"] == 1
    assert depth(state) == LIMIT
    # Down to the deepest allowed level the objects are as they were; there the rest is JSON text.
    folded_at = "/deep" + "/a" * (LIMIT - 1)
    assert pointers[0] == folded_at or (pointers[0].endswith("…") and folded_at.startswith(pointers[0][:-1])), pointers
    folded = request(server, "GET", f"/state?path={folded_at}")
    assert folded.status == 200, folded
    text = folded.json()
    assert isinstance(text, str), text[:200] if isinstance(text, str) else text
    rest = json.loads(text)
    assert depth(rest) == 1000 - (LIMIT - 1)
    levels = 0
    while isinstance(rest, dict):
        assert list(rest) == ["a"], rest
        rest = rest["a"]
        levels += 1
    assert (levels, rest) == (1000 - (LIMIT - 1), 1)
    # Edits around it work, and the value can be restored by hand (shallower) from the text.
    assert fire(server, {"type": "increment", "path": "/n"}) == 3
    stop(server)

    again = reactord_tool("repair", "--data-dir", str(data_dir))
    assert again.returncode == 0, again
    assert again.stdout.startswith("nothing to repair"), again.stdout
    server = reactord("--data-dir", str(data_dir))
    assert state_and_version(server)[1] == 3


# ---------------------------------------------------------------------------------------------
# D. Integers outside 64 bits are refused, not rounded


@pytest.mark.parametrize(
    "body",
    [
        '{"type":"increment","path":"/c","by":18446744073709551616}',
        '{"type":"increment","path":"/c","by":9223372036854775808}',
        '{"type":"increment","path":"/c","by":1' + "0" * 100 + "}",
        '{"type":"increment","path":"/c","by":-9223372036854775809}',
        '{"type":"set","path":"/c","value":-9223372036854775809}',
        '{"type":"set","path":"/d","value":{"a":[1,2,99999999999999999999]}}',
        '{"type":"append","path":"/l","value":18446744073709551616}',
        '{"type":"merge","path":"","value":{"c":18446744073709551616}}',
        '{"type":"patch","ops":[{"op":"add","path":"/c","value":18446744073709551616}]}',
        '{"type":"patch","ops":[{"op":"test","path":"/c","value":-1' + "0" * 30 + "}]}",
        '[{"type":"increment","path":"/c"},{"type":"increment","path":"/c","by":18446744073709551616}]',
    ],
    ids=["by-2^64", "by-2^63", "by-10^100", "by-below-min", "set-below-min", "nested-in-set", "append", "merge", "patch-add", "patch-test", "in-an-array"],
)
def test_an_integer_outside_64_bits_is_422_integer_out_of_range(server, body):
    fire(server, {"type": "set", "path": "/c", "value": 5})
    problem = assert_problem(post_text(server, body), 422, "integer-out-of-range")
    assert problem["line"] == 1 and isinstance(problem["column"], int), problem
    answer = request(server, "GET", "/state")
    assert answer.body == b'{"c":5}', answer  # unchanged, and still an integer (not 5.0)
    assert answer.header("ETag") == '"1"'
    assert type(answer.json()["c"]) is int


def test_an_integer_outside_64_bits_over_a_websocket_is_an_error_and_the_connection_lives(server):
    fire(server, {"type": "set", "path": "/c", "value": 5})
    with subscribe(server) as ws:
        assert next_json(ws)["type"] == "snapshot"
        ws.send('{"type":"fire","id":1,"event":{"type":"increment","path":"/c","by":18446744073709551616}}')
        error = next_json(ws)
        assert error["type"] == "error", error
        assert error["problem"]["type"] == "/problems/integer-out-of-range" and error["problem"]["status"] == 422, error
        ws.send('{"type":"fire","id":2,"event":{"type":"increment","path":"/c","by":2}}')
        assert next_json(ws) == {"type": "patch", "version": 2, "ops": [{"op": "replace", "path": "/c", "value": 7}]}
        assert next_json(ws) == {"type": "ack", "id": 2, "version": 2}
    assert request(server, "GET", "/state").body == b'{"c":7}'


def test_the_64_bit_extremes_are_kept_exactly(server):
    assert post_text(server, '{"type":"increment","path":"/max","by":9223372036854775807}').status == 200
    assert post_text(server, '{"type":"increment","path":"/min","by":-9223372036854775808}').status == 200
    assert post_text(server, '{"type":"set","path":"/set","value":[-9223372036854775808,9223372036854775807]}').status == 200
    answer = request(server, "GET", "/state")
    assert answer.body == b'{"max":9223372036854775807,"min":-9223372036854775808,"set":[-9223372036854775808,9223372036854775807]}', answer
    state = answer.json()
    assert state["max"] == 2**63 - 1 and type(state["max"]) is int
    assert state["min"] == -(2**63) and type(state["min"]) is int


def test_an_exponent_is_a_double_and_accepted(server):
    fire(server, {"type": "set", "path": "/c", "value": 5})
    answer = post_text(server, '{"type":"increment","path":"/c","by":1e100}')
    assert answer.status == 200, answer
    value = request(server, "GET", "/state?path=/c").json()
    assert type(value) is float and value == 1e100
    answer = post_text(server, '{"type":"set","path":"/big","value":18446744073709551616.0}')
    assert answer.status == 200, answer
    value = request(server, "GET", "/state?path=/big").json()
    assert type(value) is float and value == 2.0**64


# ---------------------------------------------------------------------------------------------
# C. HTTP strictness, over raw sockets (HTTP libraries would not send these)


def chunked(body: bytes) -> bytes:
    return b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"


def chunked_event(event, transfer_encoding: str) -> bytes:
    head = (
        "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: {transfer_encoding}\r\n\r\n"
    )
    return head.encode() + chunked(json.dumps(event).encode())


@pytest.mark.parametrize("coding", ["gzip, chunked", "deflate, chunked", "gzip,chunked"])
def test_a_transfer_coding_other_than_chunked_is_501_and_nothing_is_applied(server, coding):
    with raw(server) as conn:
        conn.send(chunked_event({"type": "increment", "path": "/n"}, coding))
        problem = assert_problem(conn.read_response(), 501, "not-implemented")
        assert conn.is_closed()
    assert "Transfer-Encoding" in problem["detail"], problem
    assert state_and_version(server) == ({}, 0)
    assert_serving(server, version=0)


def test_plain_chunked_still_works(server):
    with raw(server) as conn:
        conn.send(chunked_event({"type": "increment", "path": "/n"}, "chunked"))
        answer = conn.read_response()
        assert answer.status == 200, answer
        assert answer.json() == {"version": 1}
    assert state_and_version(server) == ({"n": 1}, 1)


CHUNK_HEAD = b"POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
EVENT = b'{"type":"increment","path":"/c"}'


@pytest.mark.parametrize(
    "body",
    [
        b"2\r\n{}XX0\r\n\r\n",  # two bytes other than CRLF after a chunk's data
        b"20\rX" + EVENT + b"\r\n0\r\n\r\n",  # CR and another byte ending a chunk-size line
        b"20\r\n" + EVENT + b"\r\n0\rX\r\n",  # ... the last chunk's line
        b"20\r\n" + EVENT + b"\r\n0\r\n\rX",  # ... the blank line that ends the body
    ],
    ids=["after-data", "size-line", "last-chunk", "final-line"],
)
def test_chunked_framing_without_its_crlf_is_400_and_what_follows_is_not_served(server, body):
    """RFC 9112 §7.1: chunk-size CRLF chunk-data CRLF. A server lenient about these bytes reads a
    body's end elsewhere than a strict proxy in front of it: the request smuggler's opening."""
    with raw(server) as conn:
        conn.send(CHUNK_HEAD + body + b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()
    assert state_and_version(server) == ({}, 0)
    assert_serving(server, version=0)


@pytest.mark.parametrize(
    "head",
    [
        "GET /livez HTTP/1.1\r\nHost: a b\r\n\r\n",
        "GET /livez HTTP/1.1\r\nHost: a/b@c\r\n\r\n",
        "GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n: x\r\n\r\n",
    ],
    ids=["host-with-space", "host-with-slash-and-at", "empty-header-name"],
)
def test_a_bad_host_or_an_empty_header_name_is_400(server, head):
    with raw(server) as conn:
        conn.send(head)
        assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()
    assert_serving(server)


@pytest.mark.parametrize(
    "head",
    [
        b"Content-Type: application/json\r\nContent-Type: text/plain\r\n",
        b"Content-Type: application/json\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n",
        b"Content-Type: application/json\r\nIdempotency-Key: one\r\nIdempotency-Key: two\r\n",
    ],
    ids=["content-type", "authorization", "idempotency-key"],
)
def test_a_header_a_request_carries_once_given_twice_is_400_and_nothing_is_applied(server, head):
    """Which value the client meant cannot be known, and a proxy in front may have read the
    other: once the first was taken silently (a retry with the second key alone applied again)."""
    body = b'{"type":"increment","path":"/n"}'
    with raw(server) as conn:
        conn.send(b"POST /events HTTP/1.1\r\nHost: localhost\r\n" + head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()
    assert state_and_version(server) == ({}, 0)


def test_transfer_encoding_in_an_http_1_0_request_is_400(server):
    """RFC 9112 §6.1: faulty framing, whatever llhttp would make of it."""
    with raw(server) as conn:
        conn.send(b"POST /events HTTP/1.0\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"20\r\n{\"type\":\"increment\",\"path\":\"/n\"}\r\n0\r\n\r\n")
        assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()
    assert state_and_version(server) == ({}, 0)


@pytest.mark.parametrize("content_type", ["application/json;charset=UTF-16", "application/json; charset=\"latin1\"", "text/json"])
def test_a_body_announced_in_another_charset_is_415(server, content_type):
    answer = post_events(server, {"type": "increment", "path": "/n"}, headers={"Content-Type": content_type})
    assert_problem(answer, 415, "unsupported-media-type")
    assert state_and_version(server) == ({}, 0)


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "application/json;CHARSET=\"UTF-8\"", "application/merge+json"])
def test_json_in_utf_8_is_taken_however_it_is_labelled(server, content_type):
    assert post_events(server, {"type": "increment", "path": "/n"}, headers={"Content-Type": content_type}).status == 200


@pytest.mark.parametrize("host", ["example.com:8080", "[::1]:7070", "127.0.0.1", "localhost", "xn--bcher-kva.example"])
def test_valid_hosts_are_still_accepted(server, host):
    with raw(server) as conn:
        conn.send(f"GET /livez HTTP/1.1\r\nHost: {host}\r\n\r\n")
        answer = conn.read_response()
    assert answer.status == 200, answer
    assert answer.json() == {"status": "live"}


def test_bytes_that_are_not_a_method_are_400_not_501(server):
    with raw(server) as conn:
        conn.send("GE(T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()
    assert_serving(server)


def test_an_unknown_well_formed_method_is_still_501(server):
    with raw(server) as conn:
        conn.send("FOO / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert_problem(conn.read_response(), 501, "not-implemented")
        assert conn.is_closed()
    assert_serving(server)


@pytest.mark.parametrize("target", ["/state?path=/%FF", "/state?path=/%C3%28", "/history?since=%ED%A0%80", "/%FF"])
def test_escapes_that_decode_to_bytes_that_are_not_utf8_are_400(server, target):
    # Taken as U+FFFD, /state?path=/%FF would read another member than the one asked for.
    with raw(server) as conn:
        conn.send(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        problem = assert_problem(conn.read_response(), 400, "malformed-request")
        assert "UTF-8" in problem["detail"], problem
    assert_serving(server)


def test_escaped_utf8_in_a_query_is_still_read(server):
    assert post_events(server, {"type": "set", "path": "/é", "value": 1}).status == 200
    answer = request(server, "GET", "/state?path=/%C3%A9")
    assert (answer.status, answer.json()) == (200, 1), answer


@pytest.mark.parametrize("line", ["CONNECT example.com:443 HTTP/1.1", "TRACE /nowhere HTTP/1.1"])
def test_connect_and_trace_to_no_route_are_501_not_404(server, line):
    with raw(server) as conn:
        conn.send(f"{line}\r\nHost: example.com\r\n\r\n")
        assert_problem(conn.read_response(), 501, "not-implemented")
    assert_serving(server)


def test_options_asterisk_says_what_the_server_allows(server):
    with raw(server) as conn:
        conn.send("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = conn.read_response()
    assert answer.status == 204, answer
    allowed = {method.strip() for method in answer.header("Allow").split(",")}
    assert {"GET", "HEAD", "POST", "OPTIONS"} <= allowed, answer


def client_hello() -> bytes:
    """The first flight of a real TLS client (a ClientHello record), from Python's ssl module."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    assert hello[:1] == b"\x16" and hello[5:6] == b"\x01", hello[:8]  # handshake record, ClientHello
    return hello


def test_a_tls_client_hello_on_the_plain_port_is_400_saying_plain_http(server):
    with raw(server) as conn:
        conn.send(client_hello())
        problem = assert_problem(conn.read_response(), 400, "malformed-request")
        assert conn.is_closed()
    assert "plain HTTP" in problem["detail"], problem
    assert_serving(server)


def test_curl_over_https_to_the_plain_port_fails_and_the_server_lives(server):
    # What an operator would see: curl cannot make a TLS session of the 400 answer.
    done = subprocess.run(
        ["curl", "-sS", "--max-time", "5", "-k", f"https://127.0.0.1:{server.port}/livez"],
        capture_output=True, timeout=10,
    )
    assert done.returncode != 0
    assert_serving(server)
    assert any(" 400 " in line or "status=400" in line for line in server.request_lines()), server.log()[-2000:]


@pytest.mark.parametrize("target", ["/state?path=/a%2", "/state?path=/a%zz", "/state?path=/a%", "/state?path=%G0"])
def test_a_broken_percent_escape_is_400(server, target):
    fire(server, {"type": "set", "path": "/a", "value": {"b": 1}})
    with raw(server) as conn:
        conn.send(http_request("GET", target))
        assert_problem(conn.read_response(), 400, "malformed-request")
    # A well-formed escape still decodes.
    assert request(server, "GET", "/state?path=/a/b").json() == 1
    assert request(server, "GET", "/state?path=%2Fa%2Fb").json() == 1
    assert_serving(server, version=1)


# --- Events whose cost is far beyond their size --------------------------------------------------


def doubling_patch(levels: int) -> dict:
    """A patch that copies each level twice into the next: 2**levels copies of a 1,000-byte string
    from a few kilobytes of request."""
    ops = [{"op": "add", "path": "/t0", "value": "x" * 1000}]
    for level in range(1, levels + 1):
        ops.append({"op": "add", "path": f"/t{level}", "value": {}})
        ops.append({"op": "copy", "from": f"/t{level - 1}", "path": f"/t{level}/p"})
        ops.append({"op": "copy", "from": f"/t{level - 1}", "path": f"/t{level}/q"})
    return {"type": "patch", "ops": ops}


@pytest.mark.parametrize("levels", [22, 40])
def test_a_patch_that_copies_past_a_bodys_worth_is_422_and_the_server_lives(server, levels):
    fire(server, {"type": "set", "path": "/keep", "value": 1})
    answer = post_events(server, doubling_patch(levels))
    problem = assert_problem(answer, 422, "too-much-growth")
    assert "copy" in problem["detail"] and str(1024 * 1024) in problem["detail"], problem
    assert state_and_version(server) == ({"keep": 1}, 1)
    assert_serving(server, version=1)


def test_copies_across_requests_grow_the_state_by_a_body_at_most_each(server):
    fire(server, {"type": "set", "path": "/a", "value": "x" * 300_000})
    # Each request copies what the last one made twice: 600 KB of new JSON is accepted, 1.2 MB is not.
    fire(server, {"type": "patch", "ops": [
        {"op": "copy", "from": "/a", "path": "/b"}, {"op": "copy", "from": "/a", "path": "/c"}]})
    refused = post_events(server, {"type": "patch", "ops": [
        {"op": "add", "path": "/d", "value": {}},
        {"op": "copy", "from": "/b", "path": "/d/p"}, {"op": "copy", "from": "/c", "path": "/d/q"},
        {"op": "copy", "from": "/b", "path": "/d/r"}, {"op": "copy", "from": "/c", "path": "/d/s"}]})
    assert_problem(refused, 422, "too-much-growth")
    assert sorted(state_and_version(server)[0]) == ["a", "b", "c"]
    assert_serving(server, version=2)


def test_only_one_event_of_a_request_may_copy(server):
    copy = {"type": "patch", "ops": [{"op": "copy", "from": "/a", "path": "/b"}]}
    fire(server, {"type": "set", "path": "/a", "value": 1})
    for mode in ("", "?mode=prune"):
        answer = post_events(server, [copy, {"type": "increment", "path": "/n"}, copy], path="/events" + mode)
        problem = assert_problem(answer, 422, "too-much-growth")
        assert "one event of a request may copy" in problem["detail"], problem
    assert state_and_version(server) == ({"a": 1}, 1)
    # One copying event among others is fine.
    assert fire(server, [copy, {"type": "increment", "path": "/n"}]) == 3
    assert state_and_version(server)[0] == {"a": 1, "b": 1, "n": 1}


def test_a_copy_bomb_over_a_websocket_is_an_error_and_the_connection_lives(server):
    with subscribe(server) as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 0, "state": {}}
        ws.send(json.dumps({"type": "fire", "id": "bomb", "event": doubling_patch(40)}))
        error = next_json(ws)
        assert (error["type"], error["id"], error["problem"]["type"]) == ("error", "bomb", "/problems/too-much-growth"), error
        ws.send(json.dumps({"type": "fire", "id": "ok", "event": {"type": "increment", "path": "/n"}}))
        assert next_json(ws) == {"type": "patch", "version": 1, "ops": [{"op": "add", "path": "/n", "value": 1}]}
        assert next_json(ws) == {"type": "ack", "id": "ok", "version": 1}
    assert_serving(server, version=1)


def resident_kib(process) -> int:
    with open(f"/proc/{process.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_a_long_all_or_nothing_batch_into_a_wide_object_does_not_copy_it_per_event(server):
    # 20,000 members; each of 1,000 events edits one. Keeping every intermediate state would hold a
    # copy of the object per event (about 0.9 GB); checking first and applying again holds one.
    fire(server, {"type": "set", "path": "/k", "value": {f"m{i}": i for i in range(20_000)}})
    before = resident_kib(server.process)
    answer = post_events(server, [{"type": "set", "path": f"/k/m{i}", "value": -i} for i in range(1_000)])
    assert answer.status == 200 and answer.json() == {"version": 1001, "applied": 1000}, answer
    grown = resident_kib(server.process) - before
    assert grown < 100_000, f"resident memory grew by {grown} KiB for one batch"
    state = state_and_version(server)[0]
    assert state["k"]["m999"] == -999 and state["k"]["m1000"] == 1000
    assert_serving(server, version=1001)
