"""Bearer tokens and scopes; the refusal to serve a non-loopback address without them."""

from __future__ import annotations

import json
import time

import pytest

from conftest import assert_problem, curl_response, post_events, raw, request, run_reactord

TOKENS = [
    "--token", "reader:r3ad-s3cret:read",
    "--token", "firer:f1re-s3cret:fire",
    "--token", "both:b0th-s3cret:read+fire",
    "--token", "root:r00t-s3cret:admin",
    "--token", "counter:c0unt-s3cret:fire:increment+append",
]


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def secured(reactord):
    return reactord(*TOKENS)


INCREMENT = {"type": "increment", "path": "/n"}


def test_health_needs_no_token(secured):
    assert request(secured, "GET", "/livez").status == 200
    assert request(secured, "GET", "/readyz").json() == {"status": "ready", "version": 0}


@pytest.mark.parametrize("method, target", [("GET", "/state"), ("HEAD", "/state"), ("POST", "/events")])
def test_missing_token_is_401_with_challenge(secured, method, target):
    body = json.dumps(INCREMENT) if method == "POST" else None
    answer = request(secured, method, target, body=body, headers={"Content-Type": "application/json"})
    assert answer.status == 401
    assert answer.header("WWW-Authenticate") == 'Bearer realm="reactord"'
    if method != "HEAD":
        assert_problem(answer, 401, "unauthorized")


@pytest.mark.parametrize(
    "authorization",
    ["Bearer wrong", "Bearer r3ad-s3cre", "Bearer r3ad-s3cret2", "Bearer reader", "Bearer R3AD-S3CRET"],
)
def test_bad_token_is_401_invalid_token(secured, authorization):
    answer = request(secured, "GET", "/state", headers={"Authorization": authorization})
    assert_problem(answer, 401, "unauthorized")
    challenge = answer.header("WWW-Authenticate")
    assert challenge.startswith('Bearer realm="reactord"')
    assert 'error="invalid_token"' in challenge


@pytest.mark.parametrize("authorization", ["Basic cmVhZGVyOnIzYWQtczNjcmV0", "Bearer", "r3ad-s3cret"])
def test_other_schemes_count_as_no_token(secured, authorization):
    # RFC 6750 §3.1: a request without bearer credentials gets the challenge without an error code.
    answer = request(secured, "GET", "/state", headers={"Authorization": authorization})
    assert_problem(answer, 401, "unauthorized")
    assert answer.header("WWW-Authenticate") == 'Bearer realm="reactord"'


def test_read_scope(secured):
    assert request(secured, "GET", "/state", headers=bearer("r3ad-s3cret")).status == 200
    problem = assert_problem(post_events(secured, INCREMENT, headers=bearer("r3ad-s3cret")), 403, "forbidden")
    assert "fire" in problem["detail"]
    assert request(secured, "GET", "/readyz").json()["version"] == 0


def test_fire_scope(secured):
    assert post_events(secured, INCREMENT, headers=bearer("f1re-s3cret")).json() == {"version": 1}
    problem = assert_problem(request(secured, "GET", "/state", headers=bearer("f1re-s3cret")), 403, "forbidden")
    assert "read" in problem["detail"]


def test_several_scopes(secured):
    assert post_events(secured, INCREMENT, headers=bearer("b0th-s3cret")).status == 200
    assert request(secured, "GET", "/state", headers=bearer("b0th-s3cret")).json() == {"n": 1}


def test_admin_implies_every_scope(secured):
    assert post_events(secured, INCREMENT, headers=bearer("r00t-s3cret")).status == 200
    assert request(secured, "GET", "/state", headers=bearer("r00t-s3cret")).json() == {"n": 1}


def test_access_token_query_parameter(secured):
    assert request(secured, "GET", "/state?access_token=r3ad-s3cret").status == 200
    assert request(secured, "GET", "/state?path=/n&access_token=r3ad-s3cret").status == 404  # authorized; nothing there
    assert post_events(secured, INCREMENT, path="/events?access_token=f1re-s3cret").status == 200
    assert_problem(request(secured, "GET", "/state?access_token=nope"), 401, "unauthorized")
    # Given twice, which one was meant cannot be known: a bad parameter, as any other given twice.
    assert_problem(request(secured, "GET", "/state?access_token=r3ad-s3cret&access_token=r3ad-s3cret"), 400, "invalid-parameter")


def test_scheme_name_is_case_insensitive(secured):
    assert request(secured, "GET", "/state", headers={"Authorization": "bearer r3ad-s3cret"}).status == 200
    assert request(secured, "GET", "/state", headers={"Authorization": "BEARER r3ad-s3cret"}).status == 200


def test_with_curl(secured):
    answer = curl_response(f"{secured.base_url}/state", "-H", "Authorization: Bearer r3ad-s3cret")
    assert answer.status == 200 and answer.json() == {}
    answer = curl_response(f"{secured.base_url}/state", "--oauth2-bearer", "r00t-s3cret")
    assert answer.status == 200
    answer = curl_response(f"{secured.base_url}/state")
    assert answer.status == 401 and answer.header("WWW-Authenticate") == 'Bearer realm="reactord"'


def test_event_type_allow_list(secured):
    token = bearer("c0unt-s3cret")
    assert post_events(secured, INCREMENT, headers=token).json() == {"version": 1}
    assert post_events(secured, {"type": "append", "path": "/l", "value": 1}, headers=token).json() == {"version": 2}
    problem = assert_problem(post_events(secured, {"type": "set", "path": "/n", "value": 100}, headers=token), 403, "forbidden")
    assert "set" in problem["detail"]
    assert_problem(post_events(secured, {"type": "patch", "ops": [{"op": "remove", "path": "/n"}]}, headers=token), 403, "forbidden")
    assert request(secured, "GET", "/state", headers=bearer("r3ad-s3cret")).json() == {"n": 1, "l": [1]}
    assert request(secured, "GET", "/readyz").json()["version"] == 2


def test_event_type_allow_list_in_a_batch_is_all_or_nothing(secured):
    token = bearer("c0unt-s3cret")
    answer = post_events(secured, [INCREMENT, {"type": "remove", "path": "/n"}], headers=token)
    problem = assert_problem(answer, 403, "forbidden")
    assert problem["index"] == 1
    assert request(secured, "GET", "/state", headers=bearer("r3ad-s3cret")).json() == {}


def test_event_type_allow_list_in_prune_mode(secured):
    token = bearer("c0unt-s3cret")
    answer = post_events(secured, [INCREMENT, {"type": "set", "path": "/x", "value": 1}, INCREMENT], path="/events?mode=prune", headers=token)
    assert answer.status == 200, answer
    report = answer.json()
    assert report["applied"] == 2
    assert [(entry["index"], entry["problem"]["type"]) for entry in report["rejected"]] == [(1, "/problems/forbidden")]
    assert request(secured, "GET", "/state", headers=bearer("r3ad-s3cret")).json() == {"n": 2}


def test_auth_comes_before_body_validation(secured):
    # Without a token nothing about the body is revealed, malformed or not.
    answer = request(secured, "POST", "/events", body=b"{nope", headers={"Content-Type": "application/json"})
    assert_problem(answer, 401, "unauthorized")


HEAD_OF_A_BIG_POST = "POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n"


@pytest.mark.parametrize("authorization, status", [(None, 401), ("Bearer wrong", 401), ("Bearer r3ad-s3cret", 403)])
def test_a_request_the_token_cannot_make_is_refused_before_its_body_is_read(secured, authorization, status):
    """A client without the right token cannot make the server hold a body's worth of memory: its
    request is answered on its head, and the connection closes, the body unread."""
    with raw(secured, timeout=3) as connection:
        connection.send(HEAD_OF_A_BIG_POST + (f"Authorization: {authorization}\r\n" if authorization else "") + "\r\n" + "x" * 1000)
        answer = connection.read_response()
        assert_problem(answer, status, "unauthorized" if status == 401 else "forbidden")
        assert answer.header("Connection") == "close"
        assert connection.is_closed()
    assert request(secured, "GET", "/state", headers=bearer("r3ad-s3cret")).json() == {}


def test_expect_continue_without_a_token_is_answered_401_not_100(secured):
    with raw(secured, timeout=3) as connection:
        connection.send(HEAD_OF_A_BIG_POST + "Expect: 100-continue\r\n\r\n")
        answer = connection.read_response()
        assert answer.interim == [] and answer.status == 401, (answer.interim, answer.status)


def test_a_token_holder_s_body_sent_after_its_head_is_read_and_applied(secured):
    body = json.dumps(INCREMENT).encode()
    with raw(secured, timeout=3) as connection:
        connection.send(f"POST /events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer f1re-s3cret\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        time.sleep(0.2)
        connection.send(body)
        assert connection.read_response().status == 200
        connection.send(f"POST /events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer f1re-s3cret\r\n"
                        f"Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {len(body)}\r\n\r\n")
        assert connection.read_head()[1] == 100
        connection.send(body)
        assert connection.read_response().status == 200
    assert request(secured, "GET", "/state", headers=bearer("r3ad-s3cret")).json() == {"n": 2}


def test_unknown_paths_are_404_without_a_token(secured):
    assert_problem(request(secured, "GET", "/nope"), 404, "not-found")


def test_tokens_from_the_environment(reactord):
    server = reactord(env={"REACTORD_TOKENS": "a:alpha-secret:read,b:beta-secret:fire"})
    assert request(server, "GET", "/state", headers=bearer("alpha-secret")).status == 200
    assert post_events(server, INCREMENT, headers=bearer("beta-secret")).status == 200
    assert_problem(request(server, "GET", "/state"), 401, "unauthorized")


# --- startup refusals ----------------------------------------------------------------------------


def test_non_loopback_host_without_tokens_is_refused():
    done = run_reactord("--host", "0.0.0.0", "--port", "0")
    assert done.returncode != 0
    assert "--insecure" in done.stderr, done.stderr
    assert "listening" not in done.stderr


def test_non_loopback_host_from_the_environment_is_refused_too():
    done = run_reactord(env={"REACTORD_HOST": "0.0.0.0", "REACTORD_PORT": "0"})
    assert done.returncode != 0
    assert "--insecure" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "spec",
    ["justname", "name:secret", "name::read", ":secret:read", "name:secret:write", "name:secret:", "a:b:read:x:y"],
)
def test_malformed_token_specs_are_refused(spec):
    done = run_reactord("--port", "0", "--token", spec)
    assert done.returncode != 0
    assert "token" in done.stderr.lower(), done.stderr
    assert "listening" not in done.stderr


def test_duplicate_token_names_are_refused():
    done = run_reactord("--port", "0", "--token", "a:one:read", "--token", "a:two:fire")
    assert done.returncode != 0
    assert "same name" in done.stderr, done.stderr
