"""CORS for browsers on configured origins, and the one-line-per-request log."""

from __future__ import annotations

import re

from conftest import curl_response, post_events, raw, request

ORIGIN = "http://example.test"


def test_allowed_origin_gets_cors_headers(reactord):
    server = reactord("--cors-origin", ORIGIN, "--cors-origin", "http://other.test:8080")
    for origin in (ORIGIN, "http://other.test:8080"):
        answer = curl_response(f"{server.base_url}/state", "-H", f"Origin: {origin}")
        assert answer.status == 200
        assert answer.header("Access-Control-Allow-Origin") == origin
        assert "Origin" in answer.header("Vary")
        assert "ETag" in answer.header("Access-Control-Expose-Headers")


def test_other_origins_get_no_cors_headers(reactord):
    server = reactord("--cors-origin", ORIGIN)
    for headers in ({"Origin": "http://evil.test"}, {"Origin": "http://example.test:81"}, {"Origin": "https://example.test"}, {}):
        answer = request(server, "GET", "/state", headers=headers)
        assert answer.status == 200
        assert not [name for name, _ in answer.headers if name.lower().startswith("access-control-")], answer.headers
        # The answer still depends on Origin: a shared cache must not give it to an allowed page.
        assert "Origin" in (answer.header("Vary") or ""), answer.headers


def test_no_cors_headers_without_configured_origins(server):
    answer = request(server, "GET", "/state", headers={"Origin": ORIGIN})
    assert answer.header("Access-Control-Allow-Origin") is None


def test_preflight(reactord):
    server = reactord("--cors-origin", ORIGIN)
    answer = curl_response(
        f"{server.base_url}/events", "-X", "OPTIONS",
        "-H", f"Origin: {ORIGIN}",
        "-H", "Access-Control-Request-Method: POST",
        "-H", "Access-Control-Request-Headers: content-type, idempotency-key",
    )
    assert answer.status == 204, answer
    assert answer.header("Access-Control-Allow-Origin") == ORIGIN
    assert "POST" in answer.header("Access-Control-Allow-Methods")
    allowed = {h.strip().lower() for h in answer.header("Access-Control-Allow-Headers").split(",")}
    assert {"content-type", "idempotency-key", "authorization", "if-none-match"} <= allowed
    assert answer.body == b""


def test_preflight_from_another_origin_is_not_approved(reactord):
    server = reactord("--cors-origin", ORIGIN)
    answer = request(server, "OPTIONS", "/events", headers={"Origin": "http://evil.test", "Access-Control-Request-Method": "POST"})
    assert answer.header("Access-Control-Allow-Origin") is None
    assert answer.header("Access-Control-Allow-Methods") is None


def test_preflight_needs_no_token_but_the_request_does(reactord):
    # Browsers send preflights without credentials; the real request must still authenticate,
    # and its 401 must carry CORS headers so the page can read it.
    server = reactord("--cors-origin", ORIGIN, "--token", "web:w3b-s3cret:read+fire")
    preflight = request(server, "OPTIONS", "/state", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET"})
    assert preflight.status == 204
    assert preflight.header("Access-Control-Allow-Origin") == ORIGIN
    denied = request(server, "GET", "/state", headers={"Origin": ORIGIN})
    assert denied.status == 401
    assert denied.header("Access-Control-Allow-Origin") == ORIGIN
    allowed = request(server, "GET", "/state", headers={"Origin": ORIGIN, "Authorization": "Bearer w3b-s3cret"})
    assert allowed.status == 200
    assert allowed.header("Access-Control-Allow-Origin") == ORIGIN


def test_wildcard_origin(reactord):
    server = reactord("--cors-origin", "*")
    answer = request(server, "GET", "/livez", headers={"Origin": "http://anywhere.test"})
    assert answer.header("Access-Control-Allow-Origin") in ("*", "http://anywhere.test")


def test_cors_origins_from_the_environment(reactord):
    server = reactord(env={"REACTORD_CORS_ORIGINS": "http://a.test,http://b.test"})
    assert request(server, "GET", "/livez", headers={"Origin": "http://b.test"}).header("Access-Control-Allow-Origin") == "http://b.test"
    assert request(server, "GET", "/livez", headers={"Origin": "http://c.test"}).header("Access-Control-Allow-Origin") is None


# --- logging -------------------------------------------------------------------------------------


def fields(line: str) -> dict[str, str]:
    return dict(re.findall(r"([\w-]+)=(\S*)", line))


def test_one_log_line_per_request(server):
    post_events(server, {"type": "set", "path": "/a", "value": "hello"})
    request(server, "GET", "/state")
    request(server, "GET", "/nope")
    server.wait_for_log(r"path=/nope")
    lines = server.request_lines()
    assert len(lines) == 3, server.log()
    logged = [fields(line) for line in lines]
    assert [(f["method"], f["path"], f["status"]) for f in logged] == [("POST", "/events", "200"), ("GET", "/state", "200"), ("GET", "/nope", "404")]
    assert logged[0]["bytes"] == str(len('{"version":1}'))
    assert logged[1]["bytes"] == str(len('{"a":"hello"}'))
    for entry in logged:
        assert entry["us"].isdigit()
        assert entry["token"] == "-"
    ids = [int(f["request-id"]) for f in logged]
    assert len(set(ids)) == 3


def test_log_names_the_token_and_never_its_secret(reactord):
    secret = "Sup3r-S3cret-Value-42"
    server = reactord("--token", f"dashboard:{secret}:read+fire", "--token", "other:0ther-Secret-99:read")
    post_events(server, {"type": "increment", "path": "/n"}, headers={"Authorization": f"Bearer {secret}"})
    request(server, "GET", "/state", headers={"Authorization": f"Bearer {secret}"})
    request(server, "GET", f"/state?access_token={secret}")
    request(server, "GET", f"/state?path=/n&access_token={secret}")
    request(server, "GET", "/state")  # 401: no token
    request(server, "GET", "/state", headers={"Authorization": "Bearer not-it"})
    server.wait_for_log(r"request-id=6 ")
    log = server.log()
    assert secret not in log
    assert "0ther-Secret-99" not in log
    lines = [fields(line) for line in server.request_lines()]
    assert [entry["token"] for entry in lines] == ["dashboard", "dashboard", "dashboard", "dashboard", "-", "-"], log
    assert [entry["status"] for entry in lines] == ["200", "200", "200", "200", "401", "401"], log
    # The startup line names the tokens, without their secrets.
    assert re.search(r"tokens=dashboard,other", log), log


def test_a_request_refused_on_its_head_is_logged_with_its_token(reactord):
    """A POST a token may not make is answered before its body is read, and still logged with the
    token's name, as a refusal after the body would be."""
    server = reactord("--token", "reader:r3ad-s3cret:read")
    with raw(server, timeout=3) as connection:
        connection.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        "Authorization: Bearer r3ad-s3cret\r\nContent-Length: 500000\r\n\r\n")
        assert connection.read_response().status == 403
    with raw(server, timeout=3) as connection:
        connection.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n")
        assert connection.read_response().status == 401
    server.wait_for_log(r"request-id=2 ")
    lines = [fields(line) for line in server.request_lines()]
    assert [(entry["method"], entry["path"], entry["status"], entry["token"]) for entry in lines] == [
        ("POST", "/events", "403", "reader"), ("POST", "/events", "401", "-")], server.log()


def test_lines_logged_just_before_a_stop_are_written(reactord):
    # Request and event lines are held to the end of the loop's turn: a stop right after must still
    # write them, in order (a path is logged as it was sent, percent-encoded).
    server = reactord()
    for _ in range(20):
        post_events(server, {"type": "increment", "path": "/n"})
    request(server, "GET", "/state%0Aforged")
    assert server.stop() == 0
    log = server.log()
    lines = server.request_lines()
    assert [fields(line)["path"] for line in lines] == ["/events"] * 20 + [r"/state%0Aforged"], log
    versions = [int(v) for v in re.findall(r"type=increment version=(\d+) \[ReactorServer\] event$", log, re.M)]
    assert versions == list(range(1, 21)), log


def test_log_level_notice_leaves_requests_out(reactord):
    server = reactord("--log-level", "notice")
    post_events(server, {"type": "increment", "path": "/n"})
    request(server, "GET", "/state")
    server.stop()
    log = server.log()
    assert server.request_lines() == [], log
    assert "stopped" in log  # notice lines are still there


def test_each_applied_event_is_logged_with_its_type_and_version(reactord):
    server = reactord()
    post_events(server, {"type": "increment", "path": "/n"})
    server.wait_for_log(r"path=/events")
    assert re.search(r"info reactord: .*type=increment.*version=1.*\] event$", server.log(), re.M), server.log()


def test_limit_errors_are_logged_like_other_requests(reactord):
    # A 413 answers a request whose head (method, path) was read whole: the request log must show
    # it, or operators never see clients hitting the limit.
    server = reactord("--max-body-bytes", "100")
    with raw(server) as conn:
        conn.send("POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n")
        assert conn.read_response().status == 413
    request(server, "GET", "/livez")  # a request after it, so the log is surely written up to here
    server.wait_for_log(r"path=/livez")
    statuses = [(fields(line)["method"], fields(line)["path"], fields(line)["status"]) for line in server.request_lines()]
    assert ("POST", "/events", "413") in statuses, server.log()


def test_limit_errors_carry_cors_headers_for_allowed_origins(reactord):
    # Without Access-Control-Allow-Origin a browser hides the 413 from the page (it sees a network
    # error), although the brief says a request with an allowed Origin gets the header.
    server = reactord("--max-body-bytes", "100", "--cors-origin", ORIGIN)
    answer = request(server, "POST", "/events", body=b"[" + b" " * 200 + b"]", headers={"Content-Type": "application/json", "Origin": ORIGIN})
    assert answer.status == 413
    assert answer.header("Access-Control-Allow-Origin") == ORIGIN, answer


def test_a_standard_error_nobody_reads_loses_lines_and_never_stops_the_server(tmp_path):
    """Standard error is a pipe whose reader stopped (a stuck log shipper): the server keeps
    answering and stops on SIGTERM; once the pipe is read again, a line says lines were lost."""
    import fcntl
    import os
    import signal
    import subprocess
    import time
    import types

    from conftest import REACTORD_BIN, clean_environment, free_port

    port = free_port()
    read_end, write_end = os.pipe()
    process = subprocess.Popen([REACTORD_BIN, "--port", str(port)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=write_end, env=clean_environment())
    # The test keeps a writer of its own on the pipe, as a shell or a sibling process would.
    process.stderr = os.fdopen(read_end, "rb")
    try:
        while b"listening" not in process.stderr.readline():
            assert process.poll() is None, "reactord exited at start"
        # From here on nobody reads the pipe: two lines per request fill it within a few hundred.
        target = types.SimpleNamespace(port=port)
        for i in range(1500):
            started = time.monotonic()
            answer = post_events(target, {"type": "increment", "path": "/n"})
            assert answer.status == 200 and time.monotonic() - started < 2, (i, answer)
        assert request(target, "GET", "/livez").status == 200
        # reactord's own description of the pipe is non-blocking; the other writers' is not.
        assert fcntl.fcntl(write_end, fcntl.F_GETFL) & os.O_NONBLOCK == 0
        process.stderr.read1(1 << 20)  # room again
        post_events(target, {"type": "increment", "path": "/n"})
        process.send_signal(signal.SIGTERM)
        os.close(write_end)
        write_end = -1
        assert process.wait(timeout=10) == 0
        rest = process.stderr.read()
        assert b"log lines were lost: standard error was not being read" in rest, rest[-2000:]
    finally:
        if process.poll() is None:
            process.kill()
        if write_end >= 0:
            os.close(write_end)
        process.stderr.close()
