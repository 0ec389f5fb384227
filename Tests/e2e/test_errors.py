"""Every error is an RFC 9457 problem: application/problem+json with type, title, status and detail."""

from __future__ import annotations

import json

import pytest

from conftest import assert_problem, curl_response, get_state, post_events, request

KNOWN_TYPES = ["append", "increment", "merge", "patch", "remove", "set"]


def test_unknown_path_is_not_found(server):
    for method, target in (("GET", "/nope"), ("POST", "/event"), ("GET", "/state/a"), ("GET", "/assets/nope.js")):
        problem = assert_problem(request(server, method, target), 404, "not-found")
        assert target.split("?")[0] in problem["detail"]


def test_a_path_with_escaped_unreserved_characters_is_the_same_path(server):
    """RFC 3986 §6.2.2.2: `%73` is `s`, so `/%73tate` names /state (curl sends it as written); an
    escaped reserved character stays what it is: `/%2Fstate` names no route."""
    for target in ("/%73tate", "/st%61te", "/%73%74%61%74%65"):
        answer = curl_response(f"{server.base_url}{target}", "--path-as-is")
        assert answer.status == 200 and answer.header("ETag"), (target, answer)
    assert_problem(request(server, "GET", "/%2Fstate"), 404, "not-found")
    assert_problem(request(server, "GET", "/%53tate"), 404, "not-found")  # /State: paths are case-sensitive


@pytest.mark.parametrize(
    "method, target, allow",
    [
        ("DELETE", "/state", "GET, HEAD, OPTIONS"),
        ("POST", "/state", "GET, HEAD, OPTIONS"),
        ("PUT", "/livez", "GET, HEAD, OPTIONS"),
        ("GET", "/events", "POST, OPTIONS"),
        ("PATCH", "/events", "POST, OPTIONS"),
    ],
)
def test_wrong_method_is_405_with_allow(server, method, target, allow):
    answer = request(server, method, target)
    problem = assert_problem(answer, 405, "method-not-allowed")
    assert answer.header("Allow") == allow
    assert method in problem["detail"]


def test_options_lists_the_methods(server):
    for target, allow in (("/state", "GET, HEAD, OPTIONS"), ("/events", "POST, OPTIONS"), ("/readyz", "GET, HEAD, OPTIONS")):
        answer = curl_response(f"{server.base_url}{target}", "-X", "OPTIONS")
        assert answer.status == 204, answer
        assert answer.header("Allow") == allow
        assert answer.body == b""


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"])
def test_events_need_json_content_type(server, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    answer = request(server, "POST", "/events", body=b'{"type":"set","path":"/a","value":1}', headers=headers)
    problem = assert_problem(answer, 415, "unsupported-media-type")
    assert "application/json" in problem["detail"]
    assert answer.header("Accept-Post") == "application/json"
    assert get_state(server) == {}


def test_curl_default_form_content_type_is_refused(server):
    # `curl -d` sends application/x-www-form-urlencoded: a common mistake, answered 415.
    answer = curl_response(f"{server.base_url}/events", "-d", '{"type":"set","path":"/a","value":1}')
    assert_problem(answer, 415, "unsupported-media-type")


@pytest.mark.parametrize(
    "body, line, column",
    [
        ('{\n  "type": "set",\n  "path": x}', 3, 11),
        ('{"type": "set", "path": "/a", "value": 1,}', 1, 41),  # the trailing comma itself
        ('{"type": "set"', 1, 15),
        ("", 1, 1),
        ('{"type":"set","path":"/a","value":1} trailing', 1, 38),
        ("[1, 2\n\n  oops]", 3, 3),
    ],
)
def test_malformed_json_reports_line_and_column(server, body, line, column):
    problem = assert_problem(post_events(server, body), 400, "malformed-json")
    assert (problem["line"], problem["column"]) == (line, column), problem
    assert get_state(server) == {}


def test_malformed_json_through_curl(server):
    answer = curl_response(f"{server.base_url}/events", "-H", "Content-Type: application/json", "--data-binary", "{nope")
    problem = assert_problem(answer, 400, "malformed-json")
    assert problem["line"] == 1 and problem["column"] == 2


def test_unknown_event_type_lists_the_known_ones(server):
    problem = assert_problem(post_events(server, {"type": "explode", "path": "/a"}), 422, "unknown-event-type")
    assert problem["knownTypes"] == KNOWN_TYPES
    assert "explode" in problem["detail"]
    assert "index" not in problem


@pytest.mark.parametrize(
    "event",
    [
        42,
        "set",
        None,
        {"path": "/a", "value": 1},
        {"type": 7, "path": "/a"},
        {"type": "set", "value": 1},
        {"type": "set", "path": "/a"},
        {"type": "set", "path": "no-slash", "value": 1},
        {"type": "set", "path": 5, "value": 1},
        {"type": "increment", "path": "/a", "by": "2"},
        {"type": "patch"},
        {"type": "patch", "ops": {"op": "add"}},
        {"type": "patch", "ops": [{"op": "frobnicate", "path": "/a"}]},
        {"type": "patch", "ops": [{"op": "add", "path": "/a"}]},
    ],
)
def test_invalid_events_are_422(server, event):
    problem = assert_problem(post_events(server, json.dumps(event)), 422, "invalid-event")
    assert problem["detail"]
    assert get_state(server) == {}


def test_state_rejection_is_422_and_changes_nothing(server):
    post_events(server, {"type": "set", "path": "/name", "value": "Ayla"})
    for event in (
        {"type": "increment", "path": "/name"},
        {"type": "append", "path": "/name", "value": 1},
        {"type": "remove", "path": "/age"},
        {"type": "remove", "path": ""},
        {"type": "set", "path": "/name/first", "value": "A"},
        {"type": "patch", "ops": [{"op": "replace", "path": "/missing", "value": 1}]},
    ):
        assert_problem(post_events(server, event), 422, "event-rejected")
    answer = request(server, "GET", "/state")
    assert answer.json() == {"name": "Ayla"}
    assert answer.header("ETag") == '"1"'


def test_precondition_failed_is_409(server):
    problem = assert_problem(
        post_events(server, {"type": "patch", "ops": [{"op": "test", "path": "", "value": {"x": 1}}]}), 409, "precondition-failed"
    )
    assert "test" in problem["detail"]


def test_errors_on_head_have_no_body(server):
    answer = request(server, "HEAD", "/state?path=/missing")
    assert answer.status == 404
    assert answer.header("Content-Type") == "application/problem+json"
    assert answer.body == b""
