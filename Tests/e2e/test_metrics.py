"""GET /metrics: the Prometheus text format, and every family moving as the server works.

Each test scrapes, does something, scrapes again and checks the difference, so the requests the
scrapes themselves make (route /metrics) never get in the way.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import RawConnection, assert_problem, get_state, http_request, post_events, raw, request
from journal import parse_file
from prometheus import ExpositionError, parse, scrape
from subscriptions import RawWebSocket, next_json, subscribe

INCREMENT = {"type": "increment", "path": "/n"}

ALWAYS = {
    "reactor_http_requests_total": "counter",
    "reactor_http_request_duration_seconds": "histogram",
    "reactor_http_connections_open": "gauge",
    "reactor_http_connections_accepted_total": "counter",
    "reactor_http_connections_refused_total": "counter",
    "reactor_events_applied_total": "counter",
    "reactor_events_undone_total": "counter",
    "reactor_events_rate_limited_total": "counter",
    "reactor_state_version": "gauge",
    "reactor_subscribers": "gauge",
    "reactor_subscriber_pushes_total": "counter",
    "reactor_subscriber_push_bytes_total": "counter",
    "reactor_subscriber_conflations_total": "counter",
    "reactor_subscriber_slow_disconnects_total": "counter",
    "reactor_journal_ready": "gauge",
}
WITH_JOURNAL = {
    "reactor_journal_append_seconds": "histogram",
    "reactor_journal_append_failures_total": "counter",
    "reactor_journal_bytes_total": "counter",
    "reactor_snapshot_version": "gauge",
    "reactor_snapshot_bytes": "gauge",
    "reactor_snapshot_age_seconds": "gauge",
}


def eventually(condition, timeout: float = 5.0, interval: float = 0.02):
    """Polls `condition()` until it returns something truthy; returns it, or fails at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def metric_becomes(server, name: str, expected: float, timeout: float = 5.0, **labels):
    """Scrapes until `name{labels}` equals `expected`; returns that scrape."""
    last = {}

    def check():
        metrics = scrape(server)
        last["value"] = metrics.value(name, **labels)
        return metrics if last["value"] == expected else None

    try:
        return eventually(check, timeout)
    except AssertionError:
        raise AssertionError(f"{name}{labels} stayed {last.get('value')}, never {expected}") from None


# ---------------------------------------------------------------------------------------------
# The format


def test_metrics_are_prometheus_text_with_help_and_type_for_every_family(server):
    assert post_events(server, INCREMENT).status == 200
    assert request(server, "GET", "/no-such-thing").status == 404
    answer = request(server, "GET", "/metrics")
    assert answer.status == 200, answer
    assert answer.header("Content-Type").startswith("text/plain; version=0.0.4"), answer
    metrics = parse(answer.body.decode())
    for family, kind in ALWAYS.items():
        assert metrics.types.get(family) == kind, f"{family}: {metrics.types.get(family)}, not {kind}\n{metrics.text}"
        assert metrics.helps.get(family), f"{family} has no HELP text"
    assert not WITH_JOURNAL.keys() & metrics.types.keys(), "journal metrics without a data directory"
    assert all(name.startswith("reactor_") for name in metrics.types), sorted(metrics.types)
    for name, kind in metrics.types.items():
        if kind == "counter":
            assert name.endswith("_total"), f"counter {name} does not end in _total"
    # Both refusal reasons are always there, at 0, so that rate() has a series to start from.
    for reason in ("max-connections", "connection-rate"):
        assert metrics.has("reactor_http_connections_refused_total", reason=reason), metrics.text
    assert metrics.value("reactor_journal_ready") == 1


def test_the_parser_refuses_what_prometheus_would():
    # The checks the tests rely on do catch broken expositions.
    good = "# TYPE x_total counter\nx_total{a=\"b\"} 1\n"
    assert parse(good).value("x_total", a="b") == 1
    for broken in [
        "x_total 1\n",  # no TYPE
        "# TYPE x_total counter\nx_total 1\nx_total 2\n",  # twice
        "# TYPE x_total counter\nx_total{a=\"b} 1\n",  # unterminated
        "# TYPE x_total counter\nx_total -1\n",  # negative counter
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",  # not cumulative
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",  # +Inf != count
        "# TYPE x_total counter\nx_total 1",  # no final newline
    ]:
        with pytest.raises(ExpositionError):
            parse(broken)


def test_label_values_are_escaped(server):
    # Routes are label values; the one reactord writes for an unknown path is a fixed string, so a
    # path with quotes or backslashes cannot break the exposition.
    request(server, "GET", '/x%22y%5Cz')
    with raw(server) as conn:
        conn.send(b'GET /a"b\\c HTTP/1.1\r\nHost: localhost\r\n\r\n')
        conn.read_response()
    metrics = scrape(server)
    routes = {dict(labels)["route"] for labels in metrics.series("reactor_http_requests_total")}
    assert routes <= {"unmatched", "/metrics"}, routes


# ---------------------------------------------------------------------------------------------
# Requests


def test_requests_are_counted_by_route_and_status(server):
    before = scrape(server)
    for _ in range(3):
        assert post_events(server, INCREMENT).status == 200
    assert request(server, "GET", "/nowhere").status == 404
    assert request(server, "GET", "/nowhere/else").status == 404
    assert_problem(post_events(server, {"type": "nonsense"}), 422, "unknown-event-type")
    assert request(server, "GET", "/state").status == 200
    after = scrape(server)

    def delta(**labels):
        return after.value("reactor_http_requests_total", **labels) - before.value("reactor_http_requests_total", **labels)

    assert delta(route="/events", status="200") == 3
    assert delta(route="unmatched", status="404") == 2
    assert delta(route="/events", status="422") == 1
    assert delta(route="/state", status="200") == 1
    assert delta(route="/metrics", status="200") == 1  # the first scrape, counted once answered
    # Routes are the patterns the router knows, never raw paths (which would grow without bound).
    routes = {dict(labels)["route"] for labels in after.series("reactor_http_requests_total")}
    assert "/nowhere" not in routes and "/nowhere/else" not in routes, routes


def test_request_durations_are_a_histogram_per_route(server):
    before = scrape(server)
    for _ in range(3):
        assert post_events(server, INCREMENT).status == 200
    assert request(server, "GET", "/nowhere").status == 404
    after = scrape(server)
    name = "reactor_http_request_duration_seconds"
    assert after.value(name + "_count", route="/events") - before.value(name + "_count", route="/events") == 3
    assert after.value(name + "_count", route="unmatched") - before.value(name + "_count", route="unmatched") == 1
    grown = after.value(name + "_sum", route="/events") - before.value(name + "_sum", route="/events")
    assert 0 < grown < 5, grown
    # Each route's count agrees with its request counter (every status).
    for route in ("/events", "unmatched", "/metrics"):
        requests = sum(value for labels, value in after.series("reactor_http_requests_total").items() if dict(labels)["route"] == route)
        assert after.value(name + "_count", route=route) == requests, route


def test_open_connections_gauge(server):
    # The scrape's own connection is open while the answer is rendered.
    assert scrape(server).value("reactor_http_connections_open") == 1
    accepted = scrape(server).value("reactor_http_connections_accepted_total")
    held = [raw(server) for _ in range(3)]
    try:
        for conn in held:  # answered: so accepted for sure
            conn.send(http_request("GET", "/livez"))
            assert conn.read_response().status == 200
        metrics = scrape(server)
        assert metrics.value("reactor_http_connections_open") == 4
        # 3 held connections and this scrape's, after the one before it.
        assert metrics.value("reactor_http_connections_accepted_total") - accepted == 4
    finally:
        for conn in held:
            conn.close()
    metric_becomes(server, "reactor_http_connections_open", 1)


# ---------------------------------------------------------------------------------------------
# Events and the state


def test_events_applied_by_type_and_the_state_version(server):
    before = scrape(server)
    for _ in range(3):
        assert post_events(server, INCREMENT).status == 200
    assert post_events(server, {"type": "set", "path": "/s", "value": "x"}).status == 200
    answer = post_events(server, [{"type": "append", "path": "/list", "value": 1}, {"type": "append", "path": "/list", "value": 2}])
    assert answer.status == 200, answer
    version = answer.json()["version"]
    # Refused events count nothing: not applied.
    assert_problem(post_events(server, {"type": "increment", "path": "/s"}), 422, "event-rejected")
    assert_problem(post_events(server, [INCREMENT, {"type": "increment", "path": "/s"}]), 422, "event-rejected")
    after = scrape(server)

    def delta(kind):
        name = "reactor_events_applied_total"
        return after.value(name, type=kind) - before.value(name, type=kind)

    assert (delta("increment"), delta("set"), delta("append"), delta("merge")) == (3, 1, 2, 0)
    assert after.value("reactor_state_version") == version == 6
    assert get_state(server)["n"] == 3
    assert after.value("reactor_events_undone_total") == 0


# ---------------------------------------------------------------------------------------------
# Subscribers


def open_stream(server) -> RawConnection:
    conn = raw(server)
    conn.send(http_request("GET", "/stream"))
    _, status, _, headers = conn.read_head()
    assert status == 200, headers
    assert dict(headers).get("Content-Type") == "text/event-stream", headers
    while b"snapshot" not in (record := conn.read_until(b"\n\n")):  # a retry: record comes first
        assert b"data:" not in record, record
    return conn


def test_subscribers_gauge_follows_websocket_and_sse_subscribers(server):
    assert scrape(server).value("reactor_subscribers") == 0
    ws = subscribe(server)
    try:
        assert next_json(ws)["type"] == "snapshot"
        assert scrape(server).value("reactor_subscribers") == 1
        stream = open_stream(server)
        try:
            metrics = scrape(server)
            assert metrics.value("reactor_subscribers") == 2
            assert metrics.value("reactor_http_connections_open") == 3  # both, and the scrape
        finally:
            stream.close()
        metric_becomes(server, "reactor_subscribers", 1)
    finally:
        ws.close()
    metrics = metric_becomes(server, "reactor_subscribers", 0)
    assert metrics.value("reactor_http_connections_open") == 1


def test_pushes_and_push_bytes_grow_with_every_patch(server):
    ws = RawWebSocket.connect(server)
    try:
        assert ws.recv_json()["type"] == "snapshot"
        before = scrape(server)
        sizes = 0
        for i in range(5):
            assert post_events(server, {"type": "set", "path": "/v", "value": "x" * (10 * i)}).status == 200
            # The frame: its payload and a 2- or 4-byte head.
            opcode, payload = ws.recv()
            message = json.loads(payload)
            assert message["type"] == "patch", message
            sizes += len(payload)
        after = scrape(server)
        pushes = after.value("reactor_subscriber_pushes_total") - before.value("reactor_subscriber_pushes_total")
        pushed = after.value("reactor_subscriber_push_bytes_total") - before.value("reactor_subscriber_push_bytes_total")
        assert pushes == 5, pushes
        assert sizes <= pushed <= sizes + 5 * 4, (sizes, pushed)
    finally:
        ws.close()


def test_pushes_count_every_subscriber(server):
    subscribers = [subscribe(server) for _ in range(3)]
    try:
        for ws in subscribers:
            assert next_json(ws)["type"] == "snapshot"
        before = scrape(server).value("reactor_subscriber_pushes_total")
        assert post_events(server, INCREMENT).status == 200
        for ws in subscribers:
            assert next_json(ws)["type"] == "patch"
        assert scrape(server).value("reactor_subscriber_pushes_total") - before == 3
    finally:
        for ws in subscribers:
            ws.close()


def flood_until(server, name: str, timeout: float = 20.0) -> float:
    """Fires 50-event batches of ~3.5 kB patches until counter `name` moves (at most 4000 events).

    Each value is new (a patch is a diff: the same data twice would make a tiny patch)."""
    deadline = time.monotonic() + timeout
    fired = 0
    while fired < 4000 and time.monotonic() < deadline:
        events = [{"type": "set", "path": "/blob", "value": os.urandom(1750).hex()} for i in range(50)]
        assert post_events(server, events).status == 200
        fired += 50
        value = scrape(server).value(name)
        if value > 0:
            return value
    raise AssertionError(f"{name} never moved after {fired} events")


def test_conflations_are_counted(reactord):
    server = reactord("--max-unsent-bytes", "4096")
    slow = RawWebSocket.connect(server, timeout=20, rcvbuf=4096)  # and never reads
    try:
        assert slow.recv_json()["type"] == "snapshot"
        assert scrape(server).value("reactor_subscriber_conflations_total") == 0
        flood_until(server, "reactor_subscriber_conflations_total")
        metrics = scrape(server)
        assert metrics.value("reactor_subscriber_slow_disconnects_total") == 0
        assert metrics.value("reactor_subscribers") == 1
    finally:
        slow.close()


def test_slow_disconnects_are_counted(reactord):
    server = reactord("--max-unsent-bytes", "4096", "--slow-consumer", "close")
    slow = RawWebSocket.connect(server, timeout=20, rcvbuf=4096)
    try:
        assert slow.recv_json()["type"] == "snapshot"
        assert flood_until(server, "reactor_subscriber_slow_disconnects_total") == 1
        server.wait_for_log("slow subscriber closed")
        assert scrape(server).value("reactor_subscriber_conflations_total") == 0
    finally:
        slow.close()


def test_a_slow_subscriber_closed_by_the_policy_is_disconnected_even_if_it_never_reads(reactord):
    # The close frame (4008) cannot reach a peer that does not read: the server must not wait
    # forever for the closing handshake, or a stuck client keeps its connection (and delays a
    # shutdown to its deadline).
    server = reactord("--max-unsent-bytes", "4096", "--slow-consumer", "close", "--ping-interval", "2")
    slow = RawWebSocket.connect(server, timeout=20, rcvbuf=4096)
    try:
        assert slow.recv_json()["type"] == "snapshot"
        flood_until(server, "reactor_subscriber_slow_disconnects_total")
        metrics = metric_becomes(server, "reactor_http_connections_open", 1, timeout=15)
        assert metrics.value("reactor_subscribers") == 0
    finally:
        slow.close()


# ---------------------------------------------------------------------------------------------
# The journal and snapshots


def journal_bytes(directory: Path) -> int:
    """The bytes of the journal's headers and records, less the room its writer zeroes ahead."""
    return sum(parse_file(path).records_end for path in (directory / "journal").iterdir())


def test_journal_append_latency_and_bytes(reactord, tmp_path):
    data = tmp_path / "data"
    server = reactord("--data-dir", str(data))
    metrics = scrape(server)
    for family, kind in WITH_JOURNAL.items():
        if family != "reactor_snapshot_age_seconds":
            assert metrics.types.get(family) == kind, f"{family}\n{metrics.text}"
    assert post_events(server, INCREMENT).status == 200  # the first segment exists now
    before, on_disk = scrape(server), journal_bytes(data)
    for _ in range(3):  # one at a time: each its own group, its own write
        assert post_events(server, INCREMENT).status == 200
    after = scrape(server)
    name = "reactor_journal_append_seconds"
    assert after.value(name + "_count") - before.value(name + "_count") == 3
    spent = after.value(name + "_sum") - before.value(name + "_sum")
    assert 0 < spent < 5, spent
    written = after.value("reactor_journal_bytes_total") - before.value("reactor_journal_bytes_total")
    assert written == journal_bytes(data) - on_disk > 3 * 16, (written, journal_bytes(data) - on_disk)
    assert after.value("reactor_journal_append_failures_total") == 0
    assert after.value("reactor_journal_ready") == 1
    # A batch is one group: one append.
    answer = post_events(server, [INCREMENT] * 10)
    assert answer.status == 200
    later = scrape(server)
    assert later.value(name + "_count") - after.value(name + "_count") == 1
    assert later.value("reactor_state_version") == answer.json()["version"] == 14


def snapshot_files(directory: Path) -> list[Path]:
    return sorted((directory / "snapshots").glob("*.snapshot"))


def test_snapshot_version_size_and_age(reactord, tmp_path):
    data = tmp_path / "data"
    server = reactord("--data-dir", str(data), "--snapshot-events", "5")
    metrics = scrape(server)
    assert metrics.value("reactor_snapshot_version") == 0
    for _ in range(5):
        assert post_events(server, INCREMENT).status == 200
    metrics = metric_becomes(server, "reactor_snapshot_version", 5)
    # The size of the snapshot's state: the file less its 16-byte header and 16-byte record head.
    newest = snapshot_files(data)[-1]
    assert newest.name == f"{5:020d}.snapshot", snapshot_files(data)
    assert metrics.value("reactor_snapshot_bytes") == newest.stat().st_size - 32 == len(b'{"n":5}')
    age = metrics.value("reactor_snapshot_age_seconds", default=-1)
    assert 0 <= age < 5, age
    time.sleep(1.1)
    older = scrape(server).value("reactor_snapshot_age_seconds")
    assert older - age >= 1, (age, older)
    # The next one resets it.
    for _ in range(5):
        assert post_events(server, {"type": "set", "path": "/s", "value": "longer state"}).status == 200
    metrics = metric_becomes(server, "reactor_snapshot_version", 10)
    assert metrics.value("reactor_snapshot_age_seconds") < older
    assert metrics.value("reactor_snapshot_bytes") == len(b'{"n":5,"s":"longer state"}')


def test_snapshot_metrics_after_a_restart(reactord, tmp_path):
    data = tmp_path / "data"
    first = reactord("--data-dir", str(data), "--snapshot-events", "3")
    for _ in range(4):
        assert post_events(first, INCREMENT).status == 200
    size = metric_becomes(first, "reactor_snapshot_version", 3).value("reactor_snapshot_bytes")
    assert first.stop() == 0
    second = reactord("--data-dir", str(data), "--snapshot-events", "3")
    metrics = scrape(second)
    assert metrics.value("reactor_state_version") == 4
    assert metrics.value("reactor_snapshot_version") == 3
    # The same snapshot, the same size, whether written by this process or found at start-up.
    assert metrics.value("reactor_snapshot_bytes") == size == len(b'{"n":3}'), metrics.value("reactor_snapshot_bytes")
    # The age of the snapshot on disk, not of the process.
    assert metrics.has("reactor_snapshot_age_seconds"), metrics.text


# ---------------------------------------------------------------------------------------------
# Limits


def test_rate_limited_events_are_counted(reactord):
    server = reactord("--token", "ops:ops-secret:admin", "--token", "bot:bot-secret:fire",
                      "--event-rate-limit", "0.01", "--event-rate-burst", "2")
    ops = {"Authorization": "Bearer ops-secret"}
    bot = {"Authorization": "Bearer bot-secret"}
    before = scrape(server, headers=ops).value("reactor_events_rate_limited_total")
    assert before == 0
    assert [post_events(server, INCREMENT, headers=bot).status for _ in range(4)] == [200, 200, 429, 429]
    metrics = scrape(server, headers=ops)
    assert metrics.value("reactor_events_rate_limited_total") == 2
    assert metrics.value("reactor_events_applied_total", type="increment") == 2
    assert metrics.value("reactor_http_requests_total", route="/events", status="429") == 2


def test_refused_connections_by_reason_max_connections(reactord):
    server = reactord("--max-connections", "3")
    held = [raw(server) for _ in range(3)]
    try:
        for conn in held:
            conn.send(http_request("GET", "/livez"))
            assert conn.read_response().status == 200
        with raw(server) as extra:
            assert_problem(extra.read_response(), 503, "too-many-connections")
    finally:
        held[0].close()

    def scraped():
        try:
            return scrape(server)
        except AssertionError:  # a 503 while the closed connection is not yet noticed
            return None

    metrics = eventually(scraped)
    assert metrics.value("reactor_http_connections_refused_total", reason="max-connections") >= 1
    assert metrics.value("reactor_http_connections_refused_total", reason="connection-rate") == 0
    for conn in held[1:]:
        conn.close()


def test_refused_connections_by_reason_connection_rate(reactord):
    server = reactord("--max-connection-rate", "2")  # bursts of 4
    statuses = []
    for _ in range(12):
        with raw(server) as conn:
            conn.send(http_request("GET", "/livez"))
            statuses.append(conn.read_response().status)
    refused = statuses.count(429)
    assert statuses.count(200) + refused == 12 and refused >= 6, statuses
    time.sleep(1.1)  # a token for the scrape

    metrics = eventually(lambda: _scrape_or_none(server))
    assert metrics.value("reactor_http_connections_refused_total", reason="connection-rate") == refused
    assert metrics.value("reactor_http_connections_refused_total", reason="max-connections") == 0
    # Refused connections are not accepted ones.
    assert metrics.value("reactor_http_connections_accepted_total") == statuses.count(200) + 1


def _scrape_or_none(server):
    answer = request(server, "GET", "/metrics")
    if answer.status == 429:
        time.sleep(0.3)
        return None
    assert answer.status == 200, answer
    return parse(answer.body.decode())


# ---------------------------------------------------------------------------------------------
# Access


def test_metrics_need_the_read_scope_when_tokens_are_configured(reactord):
    server = reactord("--token", "scraper:scr4pe:read", "--token", "bot:b0t:fire", "--token", "ops:0ps:admin")
    assert_problem(request(server, "GET", "/metrics"), 401, "unauthorized")
    assert_problem(request(server, "GET", "/metrics", headers={"Authorization": "Bearer wrong"}), 401, "unauthorized")
    assert_problem(request(server, "GET", "/metrics", headers={"Authorization": "Bearer b0t"}), 403, "forbidden")
    scrape(server, headers={"Authorization": "Bearer scr4pe"})
    scrape(server, headers={"Authorization": "Bearer 0ps"})
    # Prometheus can also be given the token as a query parameter (params: {access_token: [...]}).
    answer = request(server, "GET", "/metrics?access_token=scr4pe")
    assert answer.status == 200, answer
    # Token names never show as label values; secrets never show at all.
    text = scrape(server, headers={"Authorization": "Bearer scr4pe"}).text
    assert "scr4pe" not in text and "b0t" not in text and "0ps" not in text


# ---------------------------------------------------------------------------------------------
# What operators build on the metrics


def test_the_alert_rules_name_only_metrics_reactord_exposes(reactord, tmp_path):
    import re

    import yaml

    server = reactord("--data-dir", str(tmp_path / "data"))
    assert post_events(server, INCREMENT).status == 200
    metrics = scrape(server)
    exposed = set(metrics.types)
    for family, kind in metrics.types.items():
        if kind == "histogram":
            exposed |= {family + "_bucket", family + "_sum", family + "_count"}
    rules = yaml.safe_load((Path(__file__).resolve().parents[2] / "deploy/prometheus/reactord-alerts.yml").read_text())
    seen = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "labels", "annotations"} <= rule.keys(), rule
            names = set(re.findall(r"\breactor_[a-z_]+", rule["expr"]))
            assert names <= exposed, f"{rule['alert']} uses {sorted(names - exposed)}, which reactord does not expose"
            # Label matchers name labels the series have.
            for name, label in re.findall(r"\b(reactor_[a-z_]+)\{([a-z_]+)=", rule["expr"]):
                assert any(label in dict(labels) for labels in metrics.series(name)), (rule["alert"], name, label)
            seen |= names
    for needed in ("reactor_journal_ready", "reactor_journal_append_failures_total", "reactor_journal_append_seconds_bucket",
                   "reactor_snapshot_age_seconds", "reactor_subscriber_conflations_total",
                   "reactor_subscriber_slow_disconnects_total", "reactor_http_connections_open", "reactor_http_requests_total"):
        assert needed in seen, f"no alert on {needed}"


def test_the_exposition_parses_with_the_reference_parser(reactord, tmp_path):
    from prometheus_client import parser  # Tests/e2e/requirements.txt; scripts/setup.sh installs it
    server = reactord("--data-dir", str(tmp_path / "data"), "--snapshot-events", "2")
    for _ in range(3):
        assert post_events(server, INCREMENT).status == 200
    text = request(server, "GET", "/metrics").body.decode()
    families = {family.name: family for family in parser.text_string_to_metric_families(text)}
    ours = parse(text)
    # prometheus_client drops the _total suffix from counter family names.
    assert {name.removesuffix("_total") for name in ours.types} == set(families)
