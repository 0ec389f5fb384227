"""GET /subscribe over WebSocket, with Python's `websockets` library as an independent client:
snapshot then patches, path selections, mode=state, resume, fire over the socket, auth, echo."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from conftest import assert_problem, get_state, post_events, request
from subscriptions import (
    EventGenerator,
    apply_patch,
    assert_same_json,
    assert_silent,
    close_code,
    next_json,
    strict_equal,
    subscribe,
    without_history,
)


def fire(server, event) -> int:
    answer = post_events(server, event)
    assert answer.status == 200, answer
    return answer.json()["version"]


def increment(server, path="/n", by=1) -> int:
    return fire(server, {"type": "increment", "path": path, "by": by})


def state_and_version(server, path=None):
    answer = request(server, "GET", "/state" + (f"?path={path}" if path else ""))
    assert answer.status == 200, answer
    return answer.json(), int(answer.header("ETag").strip('"'))


# ---------------------------------------------------------------------------------------------
# Snapshot, then patches that rebuild the state exactly


@pytest.mark.parametrize("seed", [6902, 7386, 6901])
def test_snapshot_then_patches_rebuild_the_state_after_random_events(server, seed):
    generator = EventGenerator(seed)
    fire(server, {"type": "set", "path": "", "value": {"players": [{"name": "Ayla", "level": 1}], "n": 0}})
    with subscribe(server, subprotocols=["reactor.v1"]) as ws:
        assert ws.subprotocol == "reactor.v1"
        snapshot = next_json(ws)
        expected, version = state_and_version(server)
        assert without_history(snapshot) == {"type": "snapshot", "version": version, "state": snapshot["state"]}
        assert_same_json(snapshot["state"], expected, "the snapshot differs from GET /state")
        mirror, mirror_version = snapshot["state"], version
        counts = {kind: 0 for kind in EventGenerator.TYPES}
        for step in range(200):
            event = generator.event(expected)
            answer = post_events(server, event)
            if answer.status != 200:
                assert answer.status in (404, 409, 422), (event, answer)
                continue
            counts[event["type"]] += 1
            new_version = answer.json()["version"]
            assert new_version > mirror_version
            new_state, etag_version = state_and_version(server)
            assert etag_version == new_version
            if strict_equal(new_state, expected):
                # No change, no message: the next message (if any) is for a later version.
                expected = new_state
                continue
            expected = new_state
            message = next_json(ws)
            assert message["type"] == "patch", message
            assert message["version"] == new_version, (event, message)
            assert set(message) == {"type", "version", "ops"}
            mirror = apply_patch(mirror, message["ops"])
            mirror_version = message["version"]
            assert_same_json(mirror, expected, f"step {step}: after {json.dumps(event)} and {json.dumps(message['ops'])}")
        assert all(count >= 10 for count in counts.values()), counts
        assert_silent(ws, 0.3)


def test_a_patch_per_event_in_an_array_of_events(server):
    with subscribe(server) as ws:
        assert next_json(ws)["version"] == 0
        events = [{"type": "increment", "path": "/n"}, {"type": "append", "path": "/log", "value": "a"}, {"type": "set", "path": "/x/y", "value": [1, {"z": None}]}]
        assert post_events(server, events).json() == {"version": 3, "applied": 3}
        mirror = {}
        for version in (1, 2, 3):
            message = next_json(ws)
            assert (message["type"], message["version"]) == ("patch", version)
            mirror = apply_patch(mirror, message["ops"])
        assert_same_json(mirror, get_state(server))


def test_many_subscribers_on_one_selection_get_the_same_messages(server):
    sockets = [subscribe(server, path="/a") for _ in range(5)]
    try:
        for ws in sockets:
            assert without_history(next_json(ws)) == {"type": "snapshot", "version": 0, "state": None}
        fire(server, {"type": "set", "path": "/a", "value": {"b": 1}})
        messages = [ws.recv(timeout=5) for ws in sockets]
        assert len(set(messages)) == 1, messages
        assert json.loads(messages[0])["version"] == 1
    finally:
        for ws in sockets:
            ws.close()


# ---------------------------------------------------------------------------------------------
# Path selections


def test_path_selection_patches_are_relative_and_unrelated_changes_send_nothing(server):
    fire(server, {"type": "set", "path": "", "value": {"players": [{"name": "Ayla", "level": 1}], "other": 0}})
    with subscribe(server, path="/players/0") as ws:
        snapshot = next_json(ws)
        assert without_history(snapshot) == {"type": "snapshot", "version": 1, "state": {"name": "Ayla", "level": 1}}
        mirror = snapshot["state"]

        version = increment(server, "/players/0/level")
        message = next_json(ws)
        assert message["version"] == version and message["type"] == "patch"
        assert all(op["path"].startswith("/level") for op in message["ops"]), message
        mirror = apply_patch(mirror, message["ops"])
        assert_same_json(mirror, get_state(server, "/state?path=/players/0"))

        increment(server, "/other")
        fire(server, {"type": "set", "path": "/players/1", "value": {"name": "Bo"}})
        fire(server, {"type": "set", "path": "/players/0/level", "value": 2})  # the same value: no change
        assert_silent(ws, 0.7)

        version = fire(server, {"type": "merge", "path": "/players/0", "value": {"name": "Ayla B.", "tags": ["x"]}})
        message = next_json(ws)
        assert message["version"] == version
        mirror = apply_patch(mirror, message["ops"])
        assert_same_json(mirror, get_state(server, "/state?path=/players/0"))


@pytest.mark.parametrize("path", ["", "/game"])
def test_a_change_of_spelling_alone_is_pushed(server, path):
    """1 and 1.0, or a string and a canonically equivalent one, are equal values, but a subscriber
    that kept the old spelling would read otherwise than GET /state: each change is pushed, and a
    set to the very same text is not."""
    fire(server, {"type": "set", "path": "/game", "value": {"score": 1, "name": "\u00e9", "ratio": 2}})
    with subscribe(server, path=path) as ws:
        mirror = next_json(ws)["state"]
        for event in ({"type": "set", "path": "/game/score", "value": 1.0},
                      {"type": "set", "path": "/game/name", "value": "e\u0301"},
                      {"type": "merge", "path": "/game", "value": {"ratio": 2.0}}):
            version = fire(server, event)
            message = next_json(ws)
            assert (message["type"], message["version"]) == ("patch", version), message
            mirror = apply_patch(mirror, message["ops"])
            assert_same_json(mirror, get_state(server, "/state" + (f"?path={path}" if path else "")), json.dumps(event))
        fire(server, {"type": "set", "path": "/game/name", "value": "e\u0301"})
        assert_silent(ws, 0.5)


def test_an_event_naming_a_member_in_another_spelling_is_refused(server):
    """"\u00e9" and "e\u0301" are two names to JSON and to a subscriber, one key to the server's
    objects: an event that names an existing member in the other spelling would be pushed under a
    name subscribers do not hold (or, as an add, give them a second member). It is refused, 422."""
    fire(server, {"type": "set", "path": "/t", "value": {"e\u0301": 1}})
    with subscribe(server) as ws:
        mirror = next_json(ws)["state"]
        for event in ({"type": "patch", "ops": [{"op": "add", "path": "/t/\u00e9", "value": 2}]},
                      {"type": "set", "path": "/t/\u00e9", "value": 2},
                      {"type": "increment", "path": "/t/\u00e9"},
                      {"type": "merge", "path": "/t", "value": {"\u00e9": 2}},
                      {"type": "remove", "path": "/t/\u00e9"}):
            answer = post_events(server, event)
            assert_problem(answer, 422, "event-rejected")
            assert "another spelling" in answer.json()["detail"], answer.json()
        assert_silent(ws, 0.3)
        # Named as it is spelled, it is edited, and the patch applies.
        version = fire(server, {"type": "set", "path": "/t/e\u0301", "value": 3})
        message = next_json(ws)
        assert message["version"] == version
        mirror = apply_patch(mirror, message["ops"])
        assert_same_json(mirror, get_state(server))
        assert get_state(server) == {"t": {"e\u0301": 3}}


def test_a_missing_selection_reads_as_null(server):
    with subscribe(server, path="/nothing/here") as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 0, "state": None}
        fire(server, {"type": "set", "path": "/nothing", "value": {"else": 1}})
        assert_silent(ws, 0.5)
        version = fire(server, {"type": "set", "path": "/nothing/here", "value": {"at": ["last"]}})
        message = next_json(ws)
        assert message["version"] == version
        mirror = apply_patch(None, message["ops"])
        assert_same_json(mirror, get_state(server, "/state?path=/nothing/here"))
        version = fire(server, {"type": "remove", "path": "/nothing"})
        message = next_json(ws)
        assert message["version"] == version
        assert apply_patch(mirror, message["ops"]) is None
        assert request(server, "GET", "/state?path=/nothing/here").status == 404


def test_an_insertion_above_a_selection_in_an_array_is_a_change(server):
    fire(server, {"type": "set", "path": "/list", "value": ["a", "b", "c"]})
    with subscribe(server, path="/list/1") as ws:
        assert next_json(ws)["state"] == "b"
        fire(server, {"type": "patch", "ops": [{"op": "add", "path": "/list/0", "value": "z"}]})
        message = next_json(ws)
        assert apply_patch("b", message["ops"]) == "a" == get_state(server, "/state?path=/list/1")


def test_escaped_pointer_selection(server):
    fire(server, {"type": "set", "path": "/a~1b/c~0d", "value": 1})
    with subscribe(server, path="/a~1b/c~0d") as ws:
        assert next_json(ws)["state"] == 1
        increment(server, "/a~1b/c~0d", 2)
        message = next_json(ws)
        assert apply_patch(1, message["ops"]) == 3


# ---------------------------------------------------------------------------------------------
# mode=state


def test_mode_state_sends_the_whole_selection_on_every_change(server):
    fire(server, {"type": "set", "path": "/game", "value": {"score": 0, "name": "g"}})
    with subscribe(server, path="/game", mode="state") as ws, subscribe(server, mode="state") as whole:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 1, "state": {"score": 0, "name": "g"}}
        assert next_json(whole)["type"] == "snapshot"
        for expected_score in (5, 10):
            version = increment(server, "/game/score", 5)
            assert next_json(ws) == {"type": "state", "version": version, "state": {"score": expected_score, "name": "g"}}
            assert next_json(whole) == {"type": "state", "version": version, "state": get_state(server)}
        increment(server, "/elsewhere")
        assert next_json(whole)["state"] == get_state(server)
        assert_silent(ws, 0.5)


# ---------------------------------------------------------------------------------------------
# Resume with since=N


def test_resume_within_the_window_sends_every_missed_version_in_order(server):
    fire(server, {"type": "set", "path": "/doc", "value": {"items": []}})
    with subscribe(server) as ws:
        snapshot = next_json(ws)
    mirror, since = snapshot["state"], snapshot["version"]
    events = [
        {"type": "append", "path": "/doc/items", "value": {"i": 0}},
        {"type": "increment", "path": "/n"},
        {"type": "merge", "path": "/doc", "value": {"title": "t", "items": None}},
        {"type": "set", "path": "/doc/deep/er", "value": [1, 2, 3]},
        {"type": "remove", "path": "/doc/deep/er/1"},
        {"type": "patch", "ops": [{"op": "move", "from": "/doc/title", "path": "/title"}, {"op": "copy", "from": "/doc/deep", "path": "/copy"}]},
    ] + [{"type": "increment", "path": "/n", "by": i} for i in range(1, 15)]
    versions = [fire(server, event) for event in events]
    with subscribe(server, since=since) as ws:
        for version in versions:
            message = next_json(ws)
            assert (message["type"], message["version"]) == ("patch", version), message
            mirror = apply_patch(mirror, message["ops"])
        assert_same_json(mirror, get_state(server))
        assert_silent(ws, 0.5)
        # Live patches follow the replayed ones.
        version = increment(server, "/n")
        assert next_json(ws)["version"] == version


def test_resume_at_the_current_version_sends_nothing_until_the_next_change(server):
    version = increment(server)
    with subscribe(server, since=version) as ws:
        assert_silent(ws, 0.5)
        version = increment(server)
        message = next_json(ws)
        assert message["type"] == "patch" and message["version"] == version


def test_resume_beyond_the_window_gets_a_snapshot_with_resumed_false(reactord):
    server = reactord("--resume-window", "5")
    with subscribe(server) as ws:
        since = next_json(ws)["version"]
    for _ in range(20):
        increment(server)
    with subscribe(server, since=since) as ws:
        message = next_json(ws)
        state, version = state_and_version(server)
        assert without_history(message) == {"type": "snapshot", "version": version, "state": state, "resumed": False}
        assert version == since + 20
        assert_silent(ws, 0.3)


def test_resume_window_edge(reactord):
    server = reactord("--resume-window", "5")
    for _ in range(10):
        increment(server)
    # Versions 6..10 are held: since=5 is served from the window, since=4 is not.
    with subscribe(server, since=5) as ws:
        assert [next_json(ws)["version"] for _ in range(5)] == [6, 7, 8, 9, 10]
        assert_silent(ws, 0.3)
    with subscribe(server, since=4) as ws:
        message = next_json(ws)
        assert message["type"] == "snapshot" and message["resumed"] is False and message["version"] == 10


def test_resume_from_the_future_gets_a_snapshot_with_resumed_false(server):
    increment(server)
    with subscribe(server, since=100) as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 1, "state": {"n": 1}, "resumed": False}


def test_resume_a_path_selection_gets_one_replace_at_the_current_version(server):
    fire(server, {"type": "set", "path": "", "value": {"a": {"x": 1}, "b": 0}})
    with subscribe(server, path="/a") as ws:
        snapshot = next_json(ws)
    since = snapshot["version"]
    increment(server, "/a/x")
    fire(server, {"type": "set", "path": "/a/y", "value": [1]})
    last = increment(server, "/b")
    with subscribe(server, path="/a", since=since) as ws:
        message = next_json(ws)
        assert message == {"type": "patch", "version": last, "ops": [{"op": "replace", "path": "", "value": {"x": 2, "y": [1]}}]}
        assert apply_patch(snapshot["state"], message["ops"]) == get_state(server, "/state?path=/a")
        assert_silent(ws, 0.3)
    # Only unrelated changes since: nothing to send.
    increment(server, "/b")
    with subscribe(server, path="/a", since=last) as ws:
        assert_silent(ws, 0.5)
    with subscribe(server, path="/a", mode="state", since=since) as ws:
        state, version = state_and_version(server, "/a")
        assert next_json(ws) == {"type": "state", "version": version, "state": state}
        assert_silent(ws, 0.3)


@pytest.mark.parametrize("query", ["mode=bogus", "since=abc", "since=-1", "path=no-slash", "path=/a~2"])
def test_bad_query_parameters_are_400_before_the_upgrade(server, query):
    from subscriptions import RawWebSocket, handshake_request
    from conftest import raw

    with raw(server) as connection:
        connection.send(handshake_request(f"/subscribe?{query}"))
        answer = connection.read_response()
    problem = assert_problem(answer, 400, "invalid-parameter")
    assert problem["parameter"] == query.split("=")[0]


# ---------------------------------------------------------------------------------------------
# Firing over the socket


def test_fire_over_websocket_acks_after_the_subscribers_own_patch(server):
    with subscribe(server) as ws, subscribe(server) as other:
        next_json(ws), next_json(other)
        ws.send(json.dumps({"type": "fire", "id": "e-1", "event": {"type": "increment", "path": "/n", "by": 3}}))
        patch = next_json(ws)
        assert patch == {"type": "patch", "version": 1, "ops": patch["ops"]}
        assert apply_patch({}, patch["ops"]) == {"n": 3}
        assert next_json(ws) == {"type": "ack", "id": "e-1", "version": 1}
        assert next_json(other)["version"] == 1
        # Ids are echoed whatever their JSON type; many fires in a row keep their order.
        for i in range(20):
            ws.send(json.dumps({"type": "fire", "id": i, "event": {"type": "append", "path": "/log", "value": i}}))
        for i in range(20):
            patch, ack = next_json(ws), next_json(ws)
            assert patch["type"] == "patch" and ack == {"type": "ack", "id": i, "version": patch["version"]}
            assert patch["version"] == 2 + i
        assert get_state(server) == {"n": 3, "log": list(range(20))}


def assert_ws_problem(message, id, status, kind):
    assert message["type"] == "error" and message["id"] == id, message
    problem = message["problem"]
    assert problem["type"] == f"/problems/{kind}" and problem["status"] == status, problem
    assert problem.get("title") and problem.get("detail"), problem
    return problem


@pytest.mark.parametrize(
    "message, status, kind",
    [
        ({"type": "fire", "id": "r", "event": {"type": "remove", "path": "/missing"}}, 422, "event-rejected"),
        ({"type": "fire", "id": "r", "event": {"type": "teleport", "path": "/x"}}, 422, "unknown-event-type"),
        ({"type": "fire", "id": "r", "event": {"type": "set", "path": "/x", "value": 1, "extra": 2}}, 422, "invalid-event"),
        ({"type": "fire", "id": "r"}, 422, "invalid-event"),
        ({"type": "fire", "id": "r", "event": {"type": "patch", "ops": [{"op": "test", "path": "/x", "value": 1}]}}, None, None),
        ({"type": "subscribe", "id": "r"}, 400, "invalid-parameter"),
        ({"id": "r"}, 400, "invalid-parameter"),
    ],
)
def test_fire_errors_over_websocket(server, message, status, kind):
    with subscribe(server) as ws:
        next_json(ws)
        ws.send(json.dumps(message))
        reply = next_json(ws)
        if status is None:  # a failed JSON Patch test: 409 precondition-failed, or 422 if the path is missing
            assert reply["type"] == "error" and reply["id"] == "r" and reply["problem"]["status"] in (409, 422), reply
        else:
            assert_ws_problem(reply, "r", status, kind)
        # The connection stays usable, and nothing was applied.
        ws.send(json.dumps({"type": "fire", "id": "ok", "event": {"type": "increment", "path": "/n"}}))
        assert next_json(ws)["type"] == "patch"
        assert next_json(ws) == {"type": "ack", "id": "ok", "version": 1}


def test_malformed_json_over_websocket_is_an_error_with_a_null_id(server):
    with subscribe(server) as ws:
        next_json(ws)
        ws.send('{"type": "fire", "id": "x", ')
        assert_ws_problem(next_json(ws), None, 400, "malformed-json")
        ws.send("not json at all")
        assert_ws_problem(next_json(ws), None, 400, "malformed-json")


def test_the_unknown_event_type_problem_lists_the_known_types(server):
    with subscribe(server) as ws:
        next_json(ws)
        ws.send(json.dumps({"type": "fire", "id": 7, "event": {"type": "nope"}}))
        problem = assert_ws_problem(next_json(ws), 7, 422, "unknown-event-type")
        assert set(problem["knownTypes"]) >= {"set", "merge", "remove", "increment", "append", "patch"}


def test_a_ping_is_answered_with_a_pong_after_what_was_queued_whatever_the_token(reactord):
    server = reactord("--token", "reader:r3ad-s3cret:read", "--token", "firer:f1re-s3cret:fire")
    fire_token = {"Authorization": "Bearer f1re-s3cret"}
    with subscribe(server, headers={"Authorization": "Bearer r3ad-s3cret"}) as ws:
        assert next_json(ws)["type"] == "snapshot"
        for id in ("p-1", 7, {"a": [1]}):
            ws.send(json.dumps({"type": "ping", "id": id}))
            assert next_json(ws) == {"type": "pong", "id": id}
        ws.send(json.dumps({"type": "ping"}))
        assert next_json(ws) == {"type": "pong", "id": None}
        # Behind the patch already queued: a pong says everything before it was sent.
        assert post_events(server, {"type": "increment", "path": "/n"}, headers=fire_token).status == 200
        ws.send(json.dumps({"type": "ping", "id": "after"}))
        assert [next_json(ws)["type"], next_json(ws)] == ["patch", {"type": "pong", "id": "after"}]
        ws.send(json.dumps({"type": "pong", "id": "x"}))
        error = next_json(ws)
        assert (error["type"], error["id"], error["problem"]["status"]) == ("error", "x", 400), error
        assert get_state(server, "/state", headers={"Authorization": "Bearer r3ad-s3cret"}) == {"n": 1}


def test_a_binary_message_closes_with_1003(server):
    with subscribe(server) as ws:
        next_json(ws)
        ws.send(b'{"type":"fire"}')
        assert close_code(ws) == 1003


# ---------------------------------------------------------------------------------------------
# Tokens


TOKENS = [
    "--token", "reader:r3ad-s3cret:read",
    "--token", "firer:f1re-s3cret:fire",
    "--token", "both:b0th-s3cret:read+fire",
    "--token", "counter:c0unt-s3cret:read+fire:increment+append",
    "--token", "root:r00t-s3cret:admin",
]


@pytest.fixture
def secured(reactord):
    return reactord(*TOKENS)


def test_subscribe_without_a_token_is_401_at_the_handshake(secured):
    with pytest.raises(InvalidStatus) as refused:
        subscribe(secured)
    assert refused.value.response.status_code == 401
    assert refused.value.response.headers["WWW-Authenticate"].startswith('Bearer realm="reactord"')
    assert json.loads(refused.value.response.body)["type"] == "/problems/unauthorized"


def test_subscribe_with_a_bad_token_or_without_the_read_scope(secured):
    with pytest.raises(InvalidStatus) as refused:
        subscribe(secured, access_token="wrong")
    assert refused.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as refused:
        subscribe(secured, headers={"Authorization": "Bearer f1re-s3cret"})
    assert refused.value.response.status_code == 403


def test_token_in_the_query_or_the_header(secured):
    with subscribe(secured, access_token="r3ad-s3cret") as ws:
        assert next_json(ws)["type"] == "snapshot"
    with subscribe(secured, headers={"Authorization": "Bearer b0th-s3cret"}) as ws:
        assert next_json(ws)["type"] == "snapshot"
    with subscribe(secured, access_token="r00t-s3cret") as ws:
        assert next_json(ws)["type"] == "snapshot"


def test_fire_over_websocket_needs_the_fire_scope(secured):
    with subscribe(secured, access_token="r3ad-s3cret") as ws:
        next_json(ws)
        ws.send(json.dumps({"type": "fire", "id": "f", "event": {"type": "increment", "path": "/n"}}))
        assert_ws_problem(next_json(ws), "f", 403, "forbidden")
    with subscribe(secured, access_token="b0th-s3cret") as ws:
        next_json(ws)
        ws.send(json.dumps({"type": "fire", "id": "f", "event": {"type": "increment", "path": "/n"}}))
        assert next_json(ws)["type"] == "patch"
        assert next_json(ws) == {"type": "ack", "id": "f", "version": 1}


def test_fire_over_websocket_obeys_the_event_type_allow_list(secured):
    with subscribe(secured, headers={"Authorization": "Bearer c0unt-s3cret"}) as ws:
        next_json(ws)
        ws.send(json.dumps({"type": "fire", "id": "no", "event": {"type": "set", "path": "/n", "value": 100}}))
        assert_ws_problem(next_json(ws), "no", 403, "forbidden")
        ws.send(json.dumps({"type": "fire", "id": "yes", "event": {"type": "append", "path": "/l", "value": 1}}))
        assert next_json(ws)["type"] == "patch"
        assert next_json(ws) == {"type": "ack", "id": "yes", "version": 1}
    assert get_state(secured, headers={"Authorization": "Bearer r3ad-s3cret"}) == {"l": [1]}


# ---------------------------------------------------------------------------------------------
# /echo


def test_echo_is_404_without_the_flag(server):
    with pytest.raises(InvalidStatus) as refused:
        subscribe(server, "/echo")
    assert refused.value.response.status_code == 404


def test_echo_echoes_text_and_binary(reactord):
    server = reactord("--websocket-echo")
    with subscribe(server, "/echo") as ws:
        ws.send("héllo")
        assert ws.recv(timeout=5) == "héllo"
        ws.send(bytes(range(256)) * 300)
        assert ws.recv(timeout=5) == bytes(range(256)) * 300
        ws.send(["frag", "mented"])
        assert ws.recv(timeout=5) == "fragmented"
