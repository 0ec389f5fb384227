"""docs/openapi.yaml, the HTTP API's contract, against real reactord processes.

- The file is a valid OpenAPI 3.1 document (openapi-spec-validator) naming every route.
- Schemathesis generates requests from the file, operation by operation, each against a fresh
  reactord with a data directory and some history (part of it already removed), then once more
  along the spec's links (stateful), with every check on (`--checks all`: status codes, content types, response schemas and
  headers, no 5xx, schema-violating requests refused and schema-valid ones accepted, undeclared
  methods answered 405 with `Allow`...). Any failure fails the test, with schemathesis's report.
  The same runs with tokens configured: without credentials (protected operations must answer 401
  with `WWW-Authenticate`, as the spec says) and with a token (the server must enforce it).
- What schemathesis cannot drive over plain HTTP, the WebSocket handshake of `/subscribe` and the
  records of the never-ending `/stream`, is checked against the file here by hand; so are a few
  answers that need a set-up (403 for a token without the scope).
- `GET /openapi.json` serves this file as JSON.

The schemathesis runs take a while (`REACTORD_OPENAPI_MAX_EXAMPLES`, default 30 per operation
and phase, sets how long); `REACTORD_OPENAPI_SEED` replays a run (the default seed is fixed, so a
run is reproducible; schemathesis prints the seed and a `curl` command for each failure).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import REPO, RawConnection, Response, http_request, post_events, request
from subscriptions import RawWebSocket, handshake_request, read_handshake_response, subscribe, next_json
from sse import id_version

# Installed by scripts/setup.sh from Tests/e2e/requirements.txt; a missing one fails the module.
import jsonschema  # noqa: E402
import schemathesis  # noqa: E402,F401
import yaml  # noqa: E402
from openapi_spec_validator import validate as validate_openapi  # noqa: E402

SPEC_PATH = REPO / "docs" / "openapi.yaml"
E2E = Path(__file__).resolve().parent
SCHEMATHESIS_CONFIG = E2E / "schemathesis.toml"
SPEC = yaml.safe_load(SPEC_PATH.read_text())

MAX_EXAMPLES = int(os.environ.get("REACTORD_OPENAPI_MAX_EXAMPLES", "30"))
SEED = os.environ.get("REACTORD_OPENAPI_SEED", "20261122")
# One schemathesis run, at most (it normally takes well under a minute per operation).
RUN_TIMEOUT = 600

TOKENS = [
    "--token", "root:r00t-s3cret:admin",
    "--token", "reader:r3ad-s3cret:read",
    "--token", "counter:c0unt-s3cret:fire:increment",
]

OPERATIONS = [
    (method.upper(), path, operation["operationId"])
    for path, item in SPEC["paths"].items()
    for method, operation in item.items()
    if method in {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
]


@pytest.fixture(autouse=True)
def _time_limit():
    """Overrides conftest's 30 s limit: a schemathesis run is bounded by RUN_TIMEOUT instead."""

    def expired(signum, frame):
        raise TimeoutError(f"test exceeded its time limit of {RUN_TIMEOUT + 60} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(RUN_TIMEOUT + 60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------
# The document itself


def test_spec_is_valid_openapi_3_1():
    assert SPEC["openapi"].startswith("3.1."), SPEC["openapi"]
    validate_openapi(SPEC)


def test_spec_names_every_route():
    routes = {(method, path) for method, path, _ in OPERATIONS}
    for route in [
        ("POST", "/events"), ("GET", "/state"), ("HEAD", "/state"), ("GET", "/history"),
        ("GET", "/subscribe"), ("GET", "/stream"), ("GET", "/livez"), ("GET", "/readyz"),
        ("GET", "/metrics"), ("GET", "/openapi.json"), ("GET", "/"), ("GET", "/assets/{file}"),
    ]:
        assert route in routes, f"{route} is not in docs/openapi.yaml"


def test_spec_lists_every_problem_type_of_api_md():
    """Every problem type docs/api.md tables appears in the spec, so the two do not drift apart."""
    table = (REPO / "docs" / "api.md").read_text()
    documented = set(re.findall(r"`(/problems/[a-z0-9-]+)`", table))
    text = SPEC_PATH.read_text()
    missing = sorted(kind for kind in documented if kind not in text and kind.split("/")[-1] not in text)
    assert not missing, f"problem types of docs/api.md that docs/openapi.yaml never mentions: {missing}"


def test_spec_event_types_are_the_servers(server):
    """The event schemas are exactly the types the server knows (its 422 lists them)."""
    answer = post_events(server, {"type": "no-such-type"})
    known = check_against_spec("POST", "/events", answer)["knownTypes"]
    spec_types = sorted(
        SPEC["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["const"]
        for ref in SPEC["components"]["schemas"]["Event"]["oneOf"]
    )
    assert spec_types == sorted(known)


# ---------------------------------------------------------------------------------------------
# Schemathesis


def schemathesis(spec: Path, base_url: str, *options: str, max_examples: int = MAX_EXAMPLES) -> subprocess.CompletedProcess:
    """`schemathesis run` with every check on; its exit status and report."""
    command = [
        sys.executable, "-m", "schemathesis.cli",
        "--config-file", str(SCHEMATHESIS_CONFIG),
        "run", str(spec),
        "--url", base_url,
        "--checks", "all",
        "--max-examples", str(max_examples),
        "--seed", SEED,
        "--workers", "1",
        "--request-timeout", "5",
        "--no-color",
        "--output-truncate", "false",
        # Test secrets only: print the requests as sent, so that each `curl` line reproduces its case.
        "--output-sanitize", "false",
        *options,
    ]
    env = {
        **os.environ,
        # The hooks teach schemathesis application/x-ndjson (GET /history).
        "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
        "PYTHONPATH": os.pathsep.join([str(E2E), os.environ.get("PYTHONPATH", "")]),
        # Hypothesis's caches (Unicode tables...) outside the work tree.
        "HYPOTHESIS_STORAGE_DIRECTORY": os.path.join(tempfile.gettempdir(), "reactord-e2e-hypothesis"),
    }
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env, cwd=str(E2E))
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"schemathesis ran longer than {RUN_TIMEOUT} s:\n{error.stdout}") from None


def assert_schemathesis_passed(done: subprocess.CompletedProcess, server) -> None:
    report = done.stdout + done.stderr
    if done.returncode != 0:
        pytest.fail(
            f"schemathesis exited with {done.returncode}:\n{report}\n--- reactord log (last 60 lines) ---\n"
            + "\n".join(server.log().splitlines()[-60:]),
            pytrace=False,
        )
    # Exit status 0 and a summary that says every operation was tested.
    assert re.search(r"Tested:\s+[1-9]", report), report


def journaled(reactord, tmp_path, *flags: str):
    """A reactord with a data directory that keeps little history: a snapshot every 20 events and
    small segments, so that `/history` and `/state?version=` meet both kept and removed versions."""
    return reactord("--data-dir", str(tmp_path / "data"), "--fsync", "never", "--snapshot-events", "20",
                    "--segment-bytes", "4096", *flags)


def history_event(value: int) -> dict:
    """An event of about 150 bytes that sets /n to `value`."""
    return {"type": "merge", "path": "", "value": {"n": value, "pad": "x" * 100}}


def fill_history(server, count: int) -> None:
    """Versions 1 to `count`, version V setting /n to V - 1. With journaled()'s settings the first
    journal segments (about 25 events each) are removed by then, with the snapshots before the last."""
    for value in range(count):
        answer = post_events(server, history_event(value))
        assert answer.status == 200, answer


@pytest.mark.parametrize("method, path, operation_id", OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_schemathesis(reactord, tmp_path, method, path, operation_id):
    server = journaled(reactord, tmp_path)
    fill_history(server, 50)
    # The stateful phase follows links between operations, so it runs on its own (below).
    done = schemathesis(SPEC_PATH, server.base_url, "--include-operation-id", operation_id,
                        "--phases", "examples,coverage,fuzzing")
    assert_schemathesis_passed(done, server)


def test_schemathesis_stateful(reactord, tmp_path):
    """Sequences along the spec's links: an event posted, then the state at the version it
    answered and the history up to it."""
    server = journaled(reactord, tmp_path)
    done = schemathesis(SPEC_PATH, server.base_url, "--phases", "stateful")
    assert_schemathesis_passed(done, server)


def spec_with_required_tokens(tmp_path: Path) -> Path:
    """The spec as a server with tokens configured sees it: no anonymous access (`{}`) where a
    token is required, so schemathesis's `ignored_auth` check verifies that the server enforces it."""
    spec = json.loads(json.dumps(SPEC))
    spec["security"] = [scheme for scheme in spec["security"] if scheme]
    path = tmp_path / "openapi-tokens.json"
    path.write_text(json.dumps(spec))
    return path


def test_schemathesis_with_tokens_and_no_credentials(reactord, tmp_path):
    """Every protected operation answers 401 with `WWW-Authenticate`, as documented; the public
    ones (health, /openapi.json, the dashboard) answer as without tokens."""
    server = reactord(*TOKENS)
    done = schemathesis(spec_with_required_tokens(tmp_path), server.base_url, max_examples=10)
    assert_schemathesis_passed(done, server)


def test_schemathesis_with_an_admin_token(reactord, tmp_path):
    """With a valid token everything answers as without tokens, and the server refuses the same
    requests without it or with a wrong one (`ignored_auth`)."""
    server = reactord(*TOKENS)
    done = schemathesis(
        spec_with_required_tokens(tmp_path), server.base_url,
        "--header", "Authorization: Bearer r00t-s3cret",
        max_examples=10,
    )
    assert_schemathesis_passed(done, server)


# ---------------------------------------------------------------------------------------------
# A response checked against the spec by hand (for what schemathesis cannot request)


def _resolve(node: dict) -> dict:
    while "$ref" in node:
        target = SPEC
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def validate_schema(instance, schema: dict) -> None:
    """JSON Schema 2020-12 validation, `$ref`s resolved against the spec."""
    root = {"allOf": [schema], "components": SPEC["components"]}
    errors = sorted(jsonschema.Draft202012Validator(root).iter_errors(instance), key=lambda e: e.path)
    assert not errors, "\n".join(f"{list(error.absolute_path)}: {error.message}" for error in errors) + f"\n{instance!r}"


def component(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def check_against_spec(method: str, path: str, response: Response, *, body_read: bool = True):
    """Asserts that `response` is one the spec documents for `method path`: its status, required
    headers (and their schemas), content type and body. Returns the parsed body, if JSON."""
    operation = SPEC["paths"][path][method.lower()]
    responses = operation["responses"]
    assert str(response.status) in responses, f"{method} {path}: {response.status} is not documented ({sorted(responses)}): {response}"
    definition = _resolve(responses[str(response.status)])
    for name, header in definition.get("headers", {}).items():
        header = _resolve(header)
        value = response.header(name)
        if header.get("required"):
            assert value is not None, f"{method} {path} {response.status}: no {name} header: {response}"
        if value is not None:
            schema = header["schema"]
            typed = int(value) if _resolve(schema).get("type") == "integer" and value.isdigit() else value
            validate_schema(typed, schema)
    content = definition.get("content")
    if not content:
        return None
    content_type = response.header("Content-Type")
    assert content_type is not None, f"{method} {path} {response.status}: no Content-Type: {response}"
    media_type = content_type.split(";")[0].strip().lower()
    assert media_type in content, f"{method} {path} {response.status}: {media_type} is not documented ({sorted(content)})"
    if not body_read:
        return None
    if media_type == "application/x-ndjson":
        text = response.body.decode()
        assert text == "" or text.endswith("\n"), f"NDJSON whose last line is not ended: {text[-200:]!r}"
        body = [json.loads(line) for line in text.split("\n")[:-1]]
    elif media_type.endswith("json"):
        body = response.json()
    else:
        return None
    validate_schema(body, content[media_type]["schema"])
    return body


# ---------------------------------------------------------------------------------------------
# /subscribe: the WebSocket handshake and what a plain request gets


def test_subscribe_plain_get_is_426_websocket_required(server):
    answer = request(server, "GET", "/subscribe")
    problem = check_against_spec("GET", "/subscribe", answer)
    assert problem["type"] == "/problems/websocket-required"
    assert answer.header("Upgrade") == "websocket"


def test_subscribe_426_names_upgrade_in_connection(server):
    """RFC 9110 section 7.8: a sender of Upgrade also sends the `upgrade` option in Connection,
    so that intermediaries do not forward the field."""
    answer = request(server, "GET", "/subscribe")
    assert answer.status == 426
    options = [option.strip().lower() for option in (answer.header("Connection") or "").split(",")]
    assert "upgrade" in options, answer


def test_subscribe_bad_parameter_is_400_before_the_handshake(server):
    for target, parameter in [("/subscribe?mode=diff", "mode"), ("/subscribe?since=-1", "since"), ("/subscribe?path=nope", "path")]:
        with RawConnection(server.port) as connection:
            connection.send(handshake_request(target))
            answer = read_handshake_response(connection)
        problem = check_against_spec("GET", "/subscribe", answer)
        assert (problem["type"], problem["parameter"]) == ("/problems/invalid-parameter", parameter)


def test_subscribe_handshake_errors_are_documented(server):
    for headers, status in [
        ({"Sec-WebSocket-Version": "8"}, 426),
        ({"Sec-WebSocket-Key": "c2hvcnQ="}, 400),
        ({"Connection": None}, 400),
    ]:
        with RawConnection(server.port) as connection:
            connection.send(handshake_request("/subscribe", headers))
            answer = read_handshake_response(connection)
        assert answer.status == status, (headers, answer)
        problem = check_against_spec("GET", "/subscribe", answer)
        assert problem["type"] == "/problems/websocket-handshake"


def test_subscribe_101_and_messages_match_the_spec(server):
    post_events(server, {"type": "set", "path": "/players", "value": [{"name": "Ayla", "level": 1}]})
    with RawWebSocket.connect(server, "/subscribe?path=/players/0", headers={"Sec-WebSocket-Protocol": "reactor.v1"}) as ws:
        check_against_spec("GET", "/subscribe", ws.response)
        assert ws.response.header("Sec-WebSocket-Protocol") == "reactor.v1"
        snapshot = ws.recv_json()
    validate_schema(snapshot, component("SubscriberMessage"))
    with subscribe(server, path="/players/0") as ws:
        validate_schema(next_json(ws), component("SubscriberMessage"))
        fire = {"type": "fire", "id": "e-1", "event": {"type": "increment", "path": "/players/0/level"}}
        validate_schema(fire, component("FireMessage"))
        ws.send(json.dumps(fire))
        patch = next_json(ws)
        validate_schema(patch, component("SubscriberMessage"))
        assert patch["type"] == "patch"
        ack = next_json(ws)
        validate_schema(ack, component("FireReply"))
        assert ack["type"] == "ack"
        ws.send(json.dumps({"type": "fire", "id": 2, "event": {"type": "remove", "path": "/nothing"}}))
        error = next_json(ws)
        validate_schema(error, component("FireReply"))
        assert error["type"] == "error"
    with subscribe(server, mode="state") as ws:
        validate_schema(next_json(ws), component("SubscriberMessage"))
        post_events(server, {"type": "set", "path": "/x", "value": None})
        state = next_json(ws)
        validate_schema(state, component("SubscriberMessage"))
        assert state["type"] == "state"


# ---------------------------------------------------------------------------------------------
# /stream: the head and the first records


def read_stream(server, target: str, headers: dict | None = None, records: int = 2) -> tuple[Response, list[dict]]:
    """The head of a `/stream` answer and its first `records` records with data (the stream goes on)."""
    with RawConnection(server.port) as connection:
        connection.send(http_request("GET", target, headers=headers))
        version, status, reason, head = connection.read_head()
        response = Response(status, head, b"", reason, version)
        if status != 200:
            length = response.header("Content-Length")
            response.body = connection.read_exactly(int(length)) if length else b""
            return response, []
        found: list[dict] = []
        preamble = connection.read_until(b"\n\n")
        assert preamble == b"retry: 1000\n\n", preamble
        while len(found) < records:
            record: dict = {}
            for line in connection.read_until(b"\n\n").decode().splitlines():
                if line.startswith(":") or not line:
                    continue
                name, _, value = line.partition(":")
                record[name] = value.removeprefix(" ")
            if "data" in record:
                found.append(record)
        return response, found


def test_stream_head_and_records_match_the_spec(server):
    for value in range(3):
        post_events(server, {"type": "set", "path": "/n", "value": value})
    response, records = read_stream(server, "/stream?since=1", records=2)
    check_against_spec("GET", "/stream", response, body_read=False)
    for record in records:
        validate_schema(record, component("ServerSentEvent"))
        message = json.loads(record["data"])
        validate_schema(message, component("SubscriberMessage"))
        assert record["event"] == message["type"] and id_version(record) == str(message["version"])
    assert [json.loads(r["data"])["version"] for r in records] == [2, 3]


def test_stream_bad_parameters_are_400(server):
    for target, headers, parameter in [
        ("/stream?since=x", None, "since"),
        ("/stream?mode=diff", None, "mode"),
    ]:
        response, _ = read_stream(server, target, headers)
        problem = check_against_spec("GET", "/stream", response)
        assert problem["parameter"] == parameter


def test_head_stream_has_no_body(server):
    """RFC 9110 section 9.3.2: the answer to HEAD has no content; a HEAD /stream must not
    subscribe and stream. And no Content-Length: a GET's stream has none (RFC 9110 section 8.6)."""
    with RawConnection(server.port, timeout=2) as connection:
        connection.send(http_request("HEAD", "/stream"))
        _, status, _, headers = connection.read_head()
        assert status == 200
        assert not any(name.lower() == "content-length" for name, _ in headers), headers
        connection.sock.settimeout(1.0)
        try:
            extra = connection.buffer + connection.sock.recv(4096)
        except OSError:
            extra = connection.buffer
    assert extra == b"", f"HEAD /stream sent content after its head: {extra[:200]!r}"


# ---------------------------------------------------------------------------------------------
# Tokens: 401 and 403 as documented, on every protected route (streams and WebSocket included)


PROTECTED = [("POST", "/events"), ("GET", "/state"), ("HEAD", "/state"), ("GET", "/history"), ("GET", "/subscribe"),
             ("GET", "/stream"), ("GET", "/metrics")]


@pytest.mark.parametrize("method, path", PROTECTED)
def test_missing_and_wrong_tokens_are_401_as_documented(reactord, method, path):
    server = reactord(*TOKENS)
    for headers, challenge in [({}, 'Bearer realm="reactord"'), ({"Authorization": "Bearer wrong"}, 'Bearer realm="reactord", error="invalid_token"')]:
        body = json.dumps({"type": "increment", "path": "/n"}) if method == "POST" else None
        answer = request(server, method, path, body=body, headers={"Content-Type": "application/json", **headers})
        assert answer.status == 401, answer
        check_against_spec(method, path, answer, body_read=method != "HEAD")
        assert answer.header("WWW-Authenticate") == challenge


def test_token_without_scope_is_403_as_documented(reactord):
    server = reactord(*TOKENS)
    answer = post_events(server, {"type": "set", "path": "/n", "value": 1}, headers={"Authorization": "Bearer r3ad-s3cret"})
    assert check_against_spec("POST", "/events", answer)["type"] == "/problems/forbidden"
    answer = request(server, "GET", "/state", headers={"Authorization": "Bearer c0unt-s3cret"})
    assert check_against_spec("GET", "/state", answer)["type"] == "/problems/forbidden"
    # A token limited to some event types: 403 for the others, with the index in an array.
    answer = post_events(server, [{"type": "increment", "path": "/n"}, {"type": "set", "path": "/n", "value": 1}],
                         headers={"Authorization": "Bearer c0unt-s3cret"})
    problem = check_against_spec("POST", "/events", answer)
    assert (problem["type"], problem["index"]) == ("/problems/forbidden", 1)


def test_public_routes_need_no_token(reactord):
    server = reactord(*TOKENS)
    for path in ["/livez", "/readyz", "/openapi.json", "/"]:
        answer = request(server, "GET", path)
        assert answer.status == 200, answer
        check_against_spec("GET", path, answer)


def test_event_rate_limit_is_429_as_documented(reactord):
    server = reactord(*TOKENS, "--event-rate-limit", "1", "--event-rate-burst", "1")
    fire = {"Authorization": "Bearer r00t-s3cret"}
    assert post_events(server, {"type": "increment", "path": "/n"}, headers=fire).status == 200
    answer = post_events(server, {"type": "increment", "path": "/n"}, headers=fire)
    problem = check_against_spec("POST", "/events", answer)
    assert problem["type"] == "/problems/rate-limited"
    assert answer.header("Retry-After") == str(problem["retryAfter"])


def test_metrics_match_the_spec(server):
    answer = request(server, "GET", "/metrics")
    check_against_spec("GET", "/metrics", answer)
    assert b"reactor_state_version" in answer.body


# ---------------------------------------------------------------------------------------------
# Answers schemathesis reaches only by luck


def test_prune_report_indexes_are_positions_in_the_posted_array(server):
    """In `?mode=prune`, `rejected[].index` is the event's position in the posted array, the same
    as its problem's `index`, also when an undecodable event comes before it."""
    answer = post_events(server, [
        {"type": "set", "path": "/a", "value": 1},
        {"type": "no-such-type"},
        {"type": "remove", "path": "/missing"},
    ], path="/events?mode=prune")
    report = check_against_spec("POST", "/events", answer)
    assert report["applied"] == 1
    assert [(entry["index"], entry["problem"]["index"]) for entry in report["rejected"]] == [(1, 1), (2, 2)]


def test_idempotent_replay_and_conflicts_are_documented(server):
    key = {"Idempotency-Key": "k-1"}
    first = post_events(server, {"type": "increment", "path": "/n"}, headers=key)
    replay = post_events(server, {"type": "increment", "path": "/n"}, headers=key)
    check_against_spec("POST", "/events", first)
    assert check_against_spec("POST", "/events", replay) == first.json()
    assert replay.header("Idempotent-Replayed") == "true"
    reused = post_events(server, {"type": "increment", "path": "/m"}, headers=key)
    assert check_against_spec("POST", "/events", reused)["type"] == "/problems/idempotency-key-reused"


def test_conditional_get_and_patch_test_failure_are_documented(server):
    post_events(server, {"type": "set", "path": "/n", "value": 1})
    etag = request(server, "GET", "/state").header("ETag")
    assert etag == '"1"'
    check_against_spec("GET", "/state", request(server, "GET", "/state", headers={"If-None-Match": etag}))
    answer = post_events(server, {"type": "patch", "ops": [{"op": "test", "path": "/n", "value": 2}]})
    assert check_against_spec("POST", "/events", answer)["type"] == "/problems/precondition-failed"
    answer = request(server, "POST", "/events", body=b"{}", headers={"Content-Type": "text/plain"})
    check_against_spec("POST", "/events", answer)
    answer = request(server, "POST", "/events", body=b"{", headers={"Content-Type": "application/json"})
    assert check_against_spec("POST", "/events", answer)["line"] == 1


def test_body_too_large_is_413_as_documented(reactord):
    server = reactord("--max-body-bytes", "64")
    answer = post_events(server, {"type": "set", "path": "/n", "value": "x" * 100})
    assert check_against_spec("POST", "/events", answer)["limit"] == 64


# ---------------------------------------------------------------------------------------------
# History and the past


def test_history_and_past_state_match_the_spec(reactord, tmp_path):
    server = journaled(reactord, tmp_path)
    fill_history(server, 45)
    # The snapshot at version 40 is written in the background; once it is, the history before it goes.
    deadline = time.monotonic() + 10
    while True:
        answer = request(server, "GET", "/history?since=42")
        if answer.header("Reactor-Oldest-Version") == "40" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    entries = check_against_spec("GET", "/history", answer)
    assert [entry["version"] for entry in entries] == [43, 44, 45]
    assert entries[0]["event"] == history_event(42)
    assert int(answer.header("Reactor-Version")) == 45
    oldest = int(answer.header("Reactor-Oldest-Version"))
    assert oldest == 40, answer
    assert check_against_spec("GET", "/history", request(server, "GET", "/history?since=0"))["type"] == "/problems/history-gone"
    assert check_against_spec("GET", "/history", request(server, "GET", "/history?limit=0"))["parameter"] == "limit"
    past = request(server, "GET", f"/state?version={oldest}&path=/n")
    assert check_against_spec("GET", "/state", past) == oldest - 1
    assert past.header("ETag") == f'"{oldest}"'
    gone = check_against_spec("GET", "/state", request(server, "GET", f"/state?version={oldest - 1}"))
    assert (gone["type"], gone["oldestVersion"]) == ("/problems/history-gone", oldest)
    ahead = check_against_spec("GET", "/state", request(server, "GET", "/state?version=46"))
    assert (ahead["type"], ahead["currentVersion"]) == ("/problems/version-not-found", 45)


def test_history_without_a_data_directory_is_404_history_not_kept(server):
    post_events(server, {"type": "set", "path": "/n", "value": 1})
    for method, target in [("GET", "/history"), ("GET", "/state?version=0")]:
        path = target.split("?")[0]
        problem = check_against_spec(method, path, request(server, method, target))
        assert problem["type"] == "/problems/history-not-kept"
    check_against_spec("GET", "/state", request(server, "GET", "/state?version=1"))


# ---------------------------------------------------------------------------------------------
# The dashboard's files


def test_dashboard_files_and_revalidation_match_the_spec(server):
    for target, path in [("/", "/"), ("/assets/dashboard.css", "/assets/{file}"), ("/assets/dashboard.js", "/assets/{file}"),
                         ("/assets/reactor-client.js", "/assets/{file}"), ("/openapi.json", "/openapi.json")]:
        answer = request(server, "GET", target)
        check_against_spec("GET", path, answer)
        again = request(server, "GET", target, headers={"If-None-Match": answer.header("ETag")})
        assert again.status == 304, again
        check_against_spec("GET", path, again)
    check_against_spec("GET", "/assets/{file}", request(server, "GET", "/assets/nothing.js"))


# ---------------------------------------------------------------------------------------------
# /openapi.json serves this file


def test_openapi_json_is_the_yaml_file(server):
    answer = request(server, "GET", "/openapi.json")
    assert answer.status == 200, answer
    assert answer.header("Content-Type").split(";")[0] == "application/json"
    assert answer.json() == SPEC
