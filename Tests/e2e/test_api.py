"""The events and state API, mostly through curl, the way users call it."""

from __future__ import annotations

import http.client
import json
import threading

from conftest import HOST, assert_problem, curl, curl_response, get_state, post_events, request


def fire(server, events, query: str = "", *args: str):
    """curl -X POST /events with a JSON body; the parsed response."""
    return curl_response(
        f"{server.base_url}/events{query}",
        "-H", "Content-Type: application/json",
        "--data-binary", "@-",
        *args,
        input=json.dumps(events).encode(),
    )


def read(server, target: str = "/state", *args: str):
    return curl_response(f"{server.base_url}{target}", *args)


def state(server):
    answer = read(server)
    assert answer.status == 200, answer
    return answer.json()


# --- single events -------------------------------------------------------------------------------


def test_set_creates_missing_intermediate_objects(server):
    answer = fire(server, {"type": "set", "path": "/a/b/c", "value": 1})
    assert answer.status == 200, answer
    assert answer.header("Content-Type") == "application/json"
    assert answer.json() == {"version": 1}
    got = read(server)
    assert got.json() == {"a": {"b": {"c": 1}}}
    assert got.header("ETag") == '"1"'


def test_set_whole_document_null_and_array_values(server):
    assert fire(server, {"type": "set", "path": "", "value": {"list": [1, 2, 3], "n": None}}).status == 200
    assert fire(server, {"type": "set", "path": "/list/1", "value": "two"}).status == 200
    assert fire(server, {"type": "set", "path": "/list/-", "value": 4}).status == 200
    assert state(server) == {"list": [1, "two", 3, 4], "n": None}


def test_values_round_trip_unicode_and_64_bit_integers(server):
    value = {"text": "héllo ✓ 😀 \"quoted\" \\ \n", "max": 9223372036854775807, "min": -9223372036854775808, "pi": 3.14159, "t": True}
    assert fire(server, {"type": "set", "path": "/v", "value": value}).status == 200
    assert state(server) == {"v": value}


def test_merge_follows_rfc_7386(tmp_path, reactord):
    initial = tmp_path / "initial.json"
    initial.write_text(json.dumps({"user": {"name": "Ayla", "age": 3, "tags": ["x"], "address": {"city": "Oslo", "zip": "0150"}}}))
    server = reactord("--initial-state", str(initial))
    answer = fire(server, {"type": "merge", "path": "/user", "value": {"age": None, "tags": ["y"], "address": {"zip": None, "street": "Storgata"}}})
    assert answer.status == 200, answer
    assert state(server) == {"user": {"name": "Ayla", "tags": ["y"], "address": {"city": "Oslo", "street": "Storgata"}}}
    # A missing target counts as null and is created.
    assert fire(server, {"type": "merge", "path": "/new/thing", "value": {"a": 1}}).status == 200
    assert state(server)["new"] == {"thing": {"a": 1}}


def test_remove_needs_an_existing_target(server):
    fire(server, {"type": "set", "path": "/a", "value": {"b": 1, "c": 2}})
    assert fire(server, {"type": "remove", "path": "/a/b"}).json() == {"version": 2}
    assert state(server) == {"a": {"c": 2}}
    problem = assert_problem(fire(server, {"type": "remove", "path": "/a/b"}), 422, "event-rejected")
    assert "/a/b" in problem["detail"]
    assert read(server).header("ETag") == '"2"'


def test_increment_defaults_and_amounts(server):
    assert fire(server, {"type": "increment", "path": "/counters/hits"}).json() == {"version": 1}
    assert fire(server, {"type": "increment", "path": "/counters/hits", "by": 41}).json() == {"version": 2}
    assert fire(server, {"type": "increment", "path": "/counters/hits", "by": -2}).json() == {"version": 3}
    assert fire(server, {"type": "increment", "path": "/ratio", "by": 0.5}).status == 200
    assert state(server) == {"counters": {"hits": 40}, "ratio": 0.5}


def test_increment_of_a_string_is_rejected_and_changes_nothing(server):
    fire(server, {"type": "set", "path": "/name", "value": "Ayla"})
    problem = assert_problem(fire(server, {"type": "increment", "path": "/name"}), 422, "event-rejected")
    assert "index" not in problem
    got = read(server)
    assert got.json() == {"name": "Ayla"}
    assert got.header("ETag") == '"1"'


def test_increment_overflow_is_rejected(server):
    fire(server, {"type": "set", "path": "/n", "value": 9223372036854775807})
    assert_problem(fire(server, {"type": "increment", "path": "/n"}), 422, "event-rejected")
    assert state(server) == {"n": 9223372036854775807}


def test_append_creates_and_extends_arrays(server):
    assert fire(server, {"type": "append", "path": "/log", "value": {"msg": "a"}}).status == 200
    assert fire(server, {"type": "append", "path": "/log", "value": None}).status == 200
    assert state(server) == {"log": [{"msg": "a"}, None]}
    fire(server, {"type": "set", "path": "/count", "value": 1})
    assert_problem(fire(server, {"type": "append", "path": "/count", "value": 2}), 422, "event-rejected")


def test_patch_applies_rfc_6902_operations_atomically(server):
    fire(server, {"type": "set", "path": "", "value": {"a": 1, "list": [1, 2]}})
    ops = [
        {"op": "test", "path": "/a", "value": 1},
        {"op": "replace", "path": "/a", "value": 2},
        {"op": "add", "path": "/list/0", "value": 0},
        {"op": "copy", "from": "/a", "path": "/b"},
        {"op": "move", "from": "/b", "path": "/c"},
        {"op": "remove", "path": "/list/2"},
    ]
    assert fire(server, {"type": "patch", "ops": ops}).json() == {"version": 2}
    assert state(server) == {"a": 2, "list": [0, 1], "c": 2}
    # A failing test after a change: 409, and the change before it is not applied either.
    failing = [{"op": "replace", "path": "/a", "value": 99}, {"op": "test", "path": "/a", "value": 1}]
    assert_problem(fire(server, {"type": "patch", "ops": failing}), 409, "precondition-failed")
    got = read(server)
    assert got.json() == {"a": 2, "list": [0, 1], "c": 2}
    assert got.header("ETag") == '"2"'


def test_patch_test_gives_optimistic_concurrency(server):
    fire(server, {"type": "set", "path": "/stock", "value": 5})
    take = {"type": "patch", "ops": [{"op": "test", "path": "/stock", "value": 5}, {"op": "replace", "path": "/stock", "value": 4}]}
    assert fire(server, take).status == 200
    assert_problem(fire(server, take), 409, "precondition-failed")  # someone else already took it
    assert state(server) == {"stock": 4}


def test_unknown_members_are_rejected(server):
    problem = assert_problem(fire(server, {"type": "set", "path": "/a", "valeu": 1}), 422, "invalid-event")
    assert "valeu" in problem["detail"]
    assert_problem(fire(server, {"type": "increment", "path": "/a", "step": 1}), 422, "invalid-event")
    assert state(server) == {}


def test_content_type_with_parameters_is_json(server):
    answer = curl_response(
        f"{server.base_url}/events",
        "-H", "Content-Type: application/json; charset=utf-8",
        "--data-binary", '{"type":"set","path":"/ok","value":true}',
    )
    assert answer.status == 200, answer


# --- batches -------------------------------------------------------------------------------------


def test_batch_applies_every_event(server):
    events = [
        {"type": "set", "path": "/a", "value": 1},
        {"type": "increment", "path": "/a", "by": 2},
        {"type": "append", "path": "/l", "value": "x"},
    ]
    answer = fire(server, events)
    assert answer.status == 200, answer
    assert answer.json() == {"version": 3, "applied": 3}
    assert state(server) == {"a": 3, "l": ["x"]}


def test_batch_is_all_or_nothing(server):
    fire(server, {"type": "set", "path": "/a", "value": 1})
    events = [
        {"type": "increment", "path": "/a"},
        {"type": "set", "path": "/b", "value": "text"},
        {"type": "increment", "path": "/b"},  # rejected by the state
        {"type": "set", "path": "/c", "value": 3},
    ]
    problem = assert_problem(fire(server, events), 422, "event-rejected")
    assert problem["index"] == 2
    got = read(server)
    assert got.json() == {"a": 1}
    assert got.header("ETag") == '"1"'


def test_batch_with_an_undecodable_event_applies_nothing(server):
    events = [{"type": "set", "path": "/a", "value": 1}, {"type": "set", "path": "/b", "value": 2}, {"type": "explode"}]
    problem = assert_problem(fire(server, events), 422, "unknown-event-type")
    assert problem["index"] == 2
    assert state(server) == {}


def test_batch_conflict_reports_its_index(server):
    events = [{"type": "set", "path": "/a", "value": 1}, {"type": "patch", "ops": [{"op": "test", "path": "/a", "value": 2}]}]
    problem = assert_problem(fire(server, events), 409, "precondition-failed")
    assert problem["index"] == 1
    assert state(server) == {}


def test_strict_mode_is_the_default(server):
    events = [{"type": "set", "path": "/a", "value": 1}, {"type": "remove", "path": "/missing"}]
    assert_problem(fire(server, events, "?mode=strict"), 422, "event-rejected")
    assert state(server) == {}


def test_prune_mode_applies_the_valid_events(server):
    events = [
        {"type": "set", "path": "/a", "value": 1},
        {"type": "remove", "path": "/missing"},  # rejected by the state
        {"type": "increment", "path": "/a"},
        {"type": "nope"},  # unknown type
        {"type": "set", "path": "/b", "valeu": 2},  # invalid member
        {"type": "append", "path": "/l", "value": 1},
    ]
    answer = fire(server, events, "?mode=prune")
    assert answer.status == 200, answer
    report = answer.json()
    assert report["version"] == 3
    assert report["applied"] == 3
    assert [entry["index"] for entry in report["rejected"]] == [1, 3, 4]
    kinds = [entry["problem"]["type"] for entry in report["rejected"]]
    assert kinds == ["/problems/event-rejected", "/problems/unknown-event-type", "/problems/invalid-event"]
    for entry in report["rejected"]:
        assert entry["problem"]["status"] == 422
        assert entry["problem"]["title"] and entry["problem"]["detail"]
    assert state(server) == {"a": 2, "l": [1]}


def test_prune_mode_with_everything_valid_rejects_nothing(server):
    answer = fire(server, [{"type": "set", "path": "/a", "value": 1}], "?mode=prune")
    assert answer.json() == {"version": 1, "applied": 1, "rejected": []}


def test_unknown_mode_is_an_invalid_parameter(server):
    problem = assert_problem(fire(server, [{"type": "set", "path": "/a", "value": 1}], "?mode=yolo"), 400, "invalid-parameter")
    assert "yolo" in problem["detail"]
    assert state(server) == {}


def test_empty_batch_applies_nothing(server):
    assert fire(server, []).json() == {"version": 0, "applied": 0}


# --- reading -------------------------------------------------------------------------------------


def test_initial_state_file_is_served_at_version_0(tmp_path, reactord):
    initial = tmp_path / "state.json"
    initial.write_text('{"players": [{"name": "Ayla", "level": 1}], "open": true}')
    server = reactord("--initial-state", str(initial))
    got = read(server)
    assert got.json() == {"players": [{"name": "Ayla", "level": 1}], "open": True}
    assert got.header("ETag") == '"0"'
    assert read(server, "/readyz").json() == {"status": "ready", "version": 0}


def test_sub_tree_by_json_pointer(tmp_path, reactord):
    initial = tmp_path / "state.json"
    initial.write_text(json.dumps({"players": [{"name": "Ayla"}, {"name": "Bo"}], "a/b": {"c~d": 7}, "s": "x"}))
    server = reactord("--initial-state", str(initial))
    assert read(server, "/state?path=/players/1").json() == {"name": "Bo"}
    assert read(server, "/state?path=/players/0/name").json() == "Ayla"
    assert read(server, "/state?path=/s").json() == "x"
    # RFC 6901 escapes (~1 is /, ~0 is ~), percent-encoded by curl.
    answer = curl_response(f"{server.base_url}/state", "-G", "--data-urlencode", "path=/a~1b/c~0d")
    assert answer.status == 200, answer
    assert answer.json() == 7
    assert answer.header("ETag") == '"0"'
    # An empty pointer is the whole document.
    assert read(server, "/state?path=").json()["s"] == "x"


def test_missing_sub_tree_is_path_not_found(server):
    fire(server, {"type": "set", "path": "/a", "value": [1]})
    for pointer in ("/b", "/a/5", "/a/x", "/a/0/deeper"):
        problem = assert_problem(read(server, f"/state?path={pointer}"), 404, "path-not-found")
        assert pointer in problem["detail"]


def test_invalid_pointer_is_an_invalid_parameter(server):
    problem = assert_problem(read(server, "/state?path=players"), 400, "invalid-parameter")
    assert problem.get("parameter") == "path"


def test_a_parameter_given_twice_is_an_invalid_parameter(server):
    fire(server, {"type": "set", "path": "/a", "value": {"b": 1}})
    targets = ("/state?path=/a&path=/a/b", "/state?version=1&path=/a&version=0", "/subscribe?since=0&since=1")
    for target in targets:
        problem = assert_problem(read(server, target), 400, "invalid-parameter")
        assert problem["detail"].startswith(problem["parameter"] + " is given more than once"), problem
    problem = assert_problem(fire(server, {"type": "set", "path": "/c", "value": 1}, "?mode=strict&mode=prune"), 400, "invalid-parameter")
    assert problem["parameter"] == "mode"
    assert state(server) == {"a": {"b": 1}}
    # The endpoint still answers once the query names each parameter once; one it does not read
    # may come any number of times.
    assert read(server, "/state?path=/a/b").json() == 1
    assert read(server, "/state?path=/a/b&x=1&x=2").json() == 1


def test_head_gives_the_headers_of_get_without_the_body(server):
    fire(server, {"type": "set", "path": "/a", "value": "some text"})
    got = read(server)
    head = read(server, "/state", "-I")
    assert head.status == 200
    assert head.body == b""
    assert head.header("Content-Length") == got.header("Content-Length") == str(len(got.body))
    assert head.header("ETag") == got.header("ETag") == '"1"'
    assert head.header("Content-Type") == "application/json"


def test_conditional_get_with_etag(server):
    fire(server, {"type": "set", "path": "/a", "value": 1})
    first = read(server)
    etag = first.header("ETag")
    assert etag == '"1"'
    same = read(server, "/state", "-H", f"If-None-Match: {etag}")
    assert same.status == 304
    assert same.body == b""
    assert same.header("ETag") == etag
    # Weak comparison, lists and * (RFC 9110).
    assert read(server, "/state", "-H", 'If-None-Match: "7", W/"1"').status == 304
    assert read(server, "/state", "-H", "If-None-Match: *").status == 304
    fire(server, {"type": "increment", "path": "/a"})
    changed = read(server, "/state", "-H", f"If-None-Match: {etag}")
    assert changed.status == 200
    assert changed.header("ETag") == '"2"'
    assert changed.json() == {"a": 2}


def test_sub_tree_conditional_get(server):
    fire(server, {"type": "set", "path": "/a", "value": {"b": 1}})
    assert read(server, "/state?path=/a", "-H", 'If-None-Match: "1"').status == 304


def test_rejected_events_do_not_change_the_version(server):
    fire(server, {"type": "set", "path": "/a", "value": "x"})
    fire(server, {"type": "increment", "path": "/a"})
    fire(server, {"type": "bogus"})
    fire(server, [{"type": "set", "path": "/b", "value": 1}, {"type": "remove", "path": "/zz"}])
    assert read(server, "/readyz").json() == {"status": "ready", "version": 1}


def test_health_endpoints(server):
    live = read(server, "/livez")
    assert live.status == 200
    assert live.header("Content-Type") == "application/json"
    assert live.json() == {"status": "live"}
    assert read(server, "/readyz").json() == {"status": "ready", "version": 0}
    fire(server, [{"type": "increment", "path": "/n"}, {"type": "increment", "path": "/n"}])
    assert read(server, "/readyz").json() == {"status": "ready", "version": 2}


# --- with Python's http.client -------------------------------------------------------------------


def test_concurrent_clients_lose_no_increment(server):
    clients, per_client = 4, 50
    errors: list[str] = []

    def work():
        connection = http.client.HTTPConnection(HOST, server.port, timeout=5)
        try:
            for _ in range(per_client):
                connection.request("POST", "/events", body='{"type":"increment","path":"/n"}', headers={"Content-Type": "application/json"})
                answer = connection.getresponse()
                answer.read()
                if answer.status != 200:
                    errors.append(f"{answer.status}")
        except Exception as error:  # reported below, in the test's thread
            errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert not any(thread.is_alive() for thread in threads), "a client hung"
    assert errors == []
    assert get_state(server) == {"n": clients * per_client}
    assert request(server, "GET", "/readyz").json()["version"] == clients * per_client


def test_keep_alive_connection_serves_many_requests(server):
    connection = http.client.HTTPConnection(HOST, server.port, timeout=5)
    try:
        for expected in range(1, 21):
            connection.request("POST", "/events", body=json.dumps({"type": "append", "path": "/l", "value": expected}), headers={"Content-Type": "application/json"})
            answer = connection.getresponse()
            assert answer.status == 200
            assert json.loads(answer.read()) == {"version": expected}
            connection.request("GET", "/state?path=/l")
            answer = connection.getresponse()
            assert json.loads(answer.read())[-1] == expected
    finally:
        connection.close()


def test_curl_reuses_one_connection_for_several_urls(server):
    # curl reports each connection it opened; with keep-alive the second URL reuses the first's.
    done = curl("-w", "%{num_connects}\n", "-o", "/dev/null", "-o", "/dev/null", f"{server.base_url}/livez", f"{server.base_url}/readyz")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == ["1", "0"]


def test_large_state_round_trips(server):
    big = {f"key{i}": {"i": i, "text": "x" * 100} for i in range(2000)}  # ~250 KB
    answer = post_events(server, {"type": "set", "path": "/big", "value": big})
    assert answer.status == 200, answer
    assert get_state(server, "/state?path=/big") == big
