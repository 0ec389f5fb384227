"""Scale-out: several reactord nodes act as one Core on Redis (`--redis URL --redis-key KEY
--node-name NAME`).

Each test starts its own redis-server (appendonly, an fsync per write, on a free loopback port, in
its own directory) and its own nodes on it; the helpers are in cluster.py. What is checked:

- one total order over events fired concurrently on every node: each version answered once, the
  stream holds versions 1..N without a gap, every node ends with the same state and ETag;
- an acknowledged event is in the Redis stream before its answer;
- subscribers (WebSocket and SSE) on one node see the events fired on the others, as the same
  versions in order, and resume on another node with `since` / `Last-Event-ID`;
- a node killed with SIGKILL while events flow loses nothing acknowledged and duplicates nothing;
  restarted, it catches up, and so does a node started late;
- Redis stopped (SIGTERM, SIGKILL) or frozen (SIGSTOP): writes are refused with 503 within the
  `--redis-timeout`, reads keep the last state, /readyz says not ready; Redis back: writes again,
  nothing acknowledged lost;
- Redis restarted empty: the nodes notice the lost history and refuse writes rather than start a
  new one, and keep serving the last state;
- an `Idempotency-Key` applies once whichever nodes the retries reach;
- an event the state refuses once the node has caught up answers 422, never 5xx;
- `--data-dir` with `--redis` is refused at start; `GET /cluster` describes the node and its peers.

Nodes are conftest's `reactord` processes: each one is stopped with SIGTERM at teardown and must
exit 0 (before the Redis it runs on is stopped), except one a test kill()ed.
"""

from __future__ import annotations

import collections
import contextlib
import json
import re
import shutil
import signal
import socket
import textwrap
import threading
import time

import pytest
from websockets.exceptions import ConnectionClosed

from cluster import (
    Cluster,
    Firer,
    HoldingProxy,
    RedisServer,
    assert_contiguous_stream,
    assert_converged,
    cluster_info,
    fire,
    log_key,
    node_names,
    pairs,
    snapshot_key,
    problem_of,
    run_firers,
    state_and_version,
    stream_versions,
    wait_for_version,
)
from conftest import HOST, REPO, assert_problem, post_events, request, run_reactord, wait_until
from journal import all_history
from sse import CurlStream, finished_stream, id_version
from subscriptions import apply_patch, assert_resumes, assert_same_json, assert_silent, next_json, subscribe, without_history

INCREMENT = {"type": "increment", "path": "/n"}
# --redis-timeout for the tests that take Redis away, and how much later than it a refusal may come
# (a debug build on a loaded 2-core machine).
REDIS_TIMEOUT = 1.0
SLACK = 3.0
# How long Redis coming back may take to be noticed.
RECOVERY_DEADLINE = 15.0


@pytest.fixture
def redis(tmp_path):
    """A redis-server of the test's own, stopped at teardown (after the nodes: see `cluster`)."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def cluster(redis, reactord) -> Cluster:
    # `redis` is set up before `reactord`, so torn down after it: the nodes stop while Redis is up.
    return Cluster(redis, reactord)


def keyed(key: str) -> dict:
    return {"Idempotency-Key": key}


def varied_event(i: int) -> dict:
    """The i-th of a series of events of every type, each of which changes the state."""
    kind = i % 5
    if kind == 0:
        return {"type": "increment", "path": "/n"}
    if kind == 1:
        return {"type": "append", "path": "/log", "value": f"entry {i}"}
    if kind == 2:
        return {"type": "set", "path": f"/k/{i % 4}", "value": [i, {"i": i}]}
    if kind == 3:
        return {"type": "merge", "path": "/m", "value": {f"f{i % 3}": i, "last": f"{i}"}}
    return {"type": "patch", "ops": [{"op": "add", "path": f"/p{i}", "value": {"i": i}}]}


def drain(ws, quiet: float = 0.3, limit: float = 3.0) -> list[dict]:
    """Every message the socket gets until it is quiet for `quiet` s (or closes), at most `limit` s."""
    messages = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            messages.append(json.loads(ws.recv(timeout=quiet)))
        except TimeoutError:
            break
        except ConnectionClosed:
            break
    return messages


# ---------------------------------------------------------------------------------------------
# One total order


@pytest.mark.time_limit(60)
def test_events_fired_concurrently_on_three_nodes_take_one_total_order(cluster):
    nodes = cluster.nodes("a", "b", "c")
    per_node = 200
    total = per_node * len(nodes)
    firers = [Firer(node, lambda i: INCREMENT, count=per_node) for node in nodes]
    run_firers(firers, timeout=45)
    for firer in firers:
        assert firer.broken is None and not firer.refused, (firer.node.name, firer.broken, firer.refused[:3])
        assert firer.acked == per_node
        assert firer.versions == sorted(set(firer.versions)), f"node {firer.node.name} answered versions out of order"
    # Every version answered exactly once, across the nodes: one total order.
    assert sorted(v for firer in firers for v in firer.versions) == list(range(1, total + 1))
    assert_converged(nodes, total, {"n": total})
    etags = {request(node, "GET", "/state").header("ETag") for node in nodes}
    assert etags == {f'"{total}"'}

    # The stream: versions 1..total, each appended by the node that answered it.
    entries = assert_contiguous_stream(cluster.redis, cluster.key, total)
    assert collections.Counter(fields["n"] for _, fields in entries) == {node.name: per_node for node in nodes}
    for firer in firers:
        wrong = [v for v in firer.versions if entries[v - 1][1]["n"] != firer.node.name]
        assert not wrong, f"versions answered by {firer.node.name} but appended by others: {wrong[:10]}"
    assert all("increment" in fields["e"] for _, fields in entries), entries[0]
    meta = cluster.meta()
    assert int(meta["version"]) == total, meta
    assert meta.get("epoch"), meta

    # Every node reads the same past back.
    for node in nodes:
        assert state_and_version(node, "?version=123") == ({"n": 123}, 123)
    history = all_history(nodes[2], since=0, limit=1000)
    assert [line["version"] for line in history] == list(range(1, total + 1))
    assert all(line["event"]["type"] == "increment" for line in history)


def test_an_acknowledged_event_is_in_redis_before_its_answer(cluster):
    nodes = cluster.nodes("a", "b")
    for i in range(20):
        node = nodes[i % 2]
        event = {"type": "set", "path": f"/s{i}", "value": f"value {i}"}
        version = fire(node, event)
        assert version == i + 1
        # Read right after the 200: the event is there, appended by that node, with that event.
        entries = dict(cluster.stream())
        assert f"{version}-0" in entries, f"version {version} was acknowledged before it was in the stream"
        fields = entries[f"{version}-0"]
        assert fields["n"] == node.name
        assert f"value {i}" in fields["e"] and f"/s{i}" in fields["e"], fields
        assert int(cluster.meta()["version"]) >= version
    assert_converged(nodes, 20)


# ---------------------------------------------------------------------------------------------
# Subscriptions across nodes


@pytest.mark.time_limit(60)
def test_a_websocket_subscriber_sees_every_node_s_events_in_order_and_resumes_on_another_node(cluster):
    a, b, c = cluster.nodes("a", "b", "c")
    with subscribe(b) as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 0, "state": {}}
        mirror, version = {}, 0

        def expect_patch(expected_version: int) -> None:
            nonlocal mirror, version
            message = next_json(ws)
            assert message["type"] == "patch" and message["version"] == expected_version, (expected_version, message)
            mirror = apply_patch(mirror, message["ops"])
            version = expected_version

        # Fired one after the other on A, B (over the subscriber's own socket, every other time) and C.
        for i in range(30):
            event = varied_event(i)
            target = (a, b, c)[i % 3]
            if target is b and i % 2:
                ws.send(json.dumps({"type": "fire", "id": f"w{i}", "event": event}))
                expect_patch(version + 1)
                assert next_json(ws) == {"type": "ack", "id": f"w{i}", "version": version}
            else:
                fired = fire(target, event)
                assert fired == version + 1
                expect_patch(fired)
        state, current = state_and_version(b)
        assert current == version
        assert_same_json(mirror, state, "the patches B pushed do not rebuild B's state")

        # Fired concurrently on A and C: B pushes every version, in order, none twice.
        per_node = 40
        firers = [
            Firer(node, lambda i, name=node.name: {"type": "append", "path": "/log", "value": f"{name}-{i}"}, count=per_node)
            for node in (a, c)
        ]
        run_firers(firers, timeout=30)
        for firer in firers:
            assert firer.acked == per_node, (firer.node.name, firer.broken, firer.refused[:3])
        last = version + 2 * per_node
        while version < last:
            expect_patch(version + 1)
        assert_silent(ws, 0.3)
        state = assert_converged([a, b, c], last)
        assert_same_json(mirror, state, "the patches B pushed do not rebuild the cluster's state")
        assert sorted(state["log"][-2 * per_node:]) == sorted(f"{n}-{i}" for n in "ac" for i in range(per_node))

    # Disconnected at `last`; ten more events; resumed on C with since=last: exactly those ten.
    resumed_from = last
    for i in range(10):
        assert fire(a, {"type": "set", "path": f"/after/{i}", "value": i}) == resumed_from + 1 + i
    with subscribe(c, since=resumed_from) as ws:
        for expected in range(resumed_from + 1, resumed_from + 11):
            message = next_json(ws)
            assert message["type"] == "patch" and message["version"] == expected, (expected, message)
            mirror = apply_patch(mirror, message["ops"])
        assert_silent(ws, 0.3)
    state = assert_converged([a, b, c], resumed_from + 10)
    assert_same_json(mirror, state, "resuming on C did not rebuild the state")


def test_an_sse_stream_on_one_node_sees_events_fired_on_the_others(cluster):
    a, b, c = cluster.nodes("a", "b", "c")
    first = fire(a, {"type": "set", "path": "/players", "value": [{"name": "Ayla", "level": 1}]})
    with CurlStream(a, max_time=25) as stream:
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        record, snapshot = stream.message()
        assert (id_version(record), record["event"]) == (str(first), "snapshot")
        mirror = snapshot["state"]
        for i in range(20):
            event = varied_event(i) if i % 4 else {"type": "increment", "path": "/players/0/level"}
            version = fire((b, c)[i % 2], event)
            assert version == first + 1 + i
            record, message = stream.message()
            assert (id_version(record), record["event"]) == (str(version), "patch"), record
            assert message["version"] == version
            mirror = apply_patch(mirror, message["ops"])
        last = first + 20
        state = assert_converged([a, b, c], last)
        assert_same_json(mirror, state, "the SSE patches on A do not rebuild the state")
    # Resumed with Last-Event-ID on B: the versions after it, and nothing else.
    status, _, records = finished_stream(b, "/stream", "-H", f"Last-Event-ID: {first + 9}")
    assert status == 200
    data = [record for record in records if "data" in record]
    assert [(id_version(r), r["event"]) for r in data] == [(str(v), "patch") for v in range(first + 10, last + 1)]


def test_a_subscriber_resumes_on_a_node_that_restarted(cluster):
    """A node starting up leaves the stream's last events (its resume window's worth) to its tail,
    so they pass through its subscription hub: a subscriber that reconnects to a node that has just
    restarted resumes there with `since` or `Last-Event-ID`, where it used to get a snapshot."""
    a, b = cluster.nodes("a", "b")
    for i in range(30):
        assert fire((a, b)[i % 2], {"type": "set", "path": f"/k{i % 7}", "value": i}) == i + 1
    assert_converged([a, b], 30)
    at_25 = json.loads(request(a, "GET", "/state?version=25").body)
    b.signal(signal.SIGTERM)
    assert b.wait() == 0
    b = cluster.restart(b)
    # Ready only once it has applied what the stream held when it joined, the events it left to
    # its tail included.
    assert state_and_version(b)[1] == 30
    state = assert_converged([a, b], 30)

    assert_resumes(b, 25, at_25, 30, state, "resumed on the restarted node")

    status, _, records = finished_stream(b, "/stream", "-H", "Last-Event-ID: 27")
    assert status == 200
    data = [record for record in records if "data" in record]
    assert [(id_version(r), r["event"]) for r in data] == [(str(v), "patch") for v in range(28, 31)]


# ---------------------------------------------------------------------------------------------
# A node killed


@pytest.mark.time_limit(60)
def test_a_node_killed_mid_flow_loses_and_duplicates_nothing_and_catches_up_when_restarted(cluster):
    a, b, c = cluster.nodes("a", "b", "c")
    stop = threading.Event()
    firers = [Firer(node, lambda i: INCREMENT, stop=stop) for node in (a, a, b, b, c, c)]
    survivors, on_c = firers[:4], firers[4:]
    for firer in firers:
        firer.start()
    try:
        wait_until(lambda: all(firer.acked >= 20 for firer in firers), 20, message="20 events acknowledged by every client")
        c.kill()
        wait_until(lambda: not any(firer.is_alive() for firer in on_c), 10, message="C's clients noticing C is gone")
        # A and B keep acknowledging after C died.
        after_kill = sum(firer.acked for firer in survivors)
        wait_until(lambda: sum(firer.acked for firer in survivors) >= after_kill + 60, 15, message="60 more events on A and B")
    finally:
        stop.set()
        for firer in firers:
            firer.join(10)
    assert not any(firer.is_alive() for firer in firers), "a client did not finish"
    for firer in survivors:
        assert firer.broken is None and not firer.refused, (firer.node.name, firer.broken, firer.refused[:3])
    for firer in on_c:
        assert not firer.refused, firer.refused[:3]
        assert firer.unanswered <= 1
    acked = collections.Counter()
    for firer in firers:
        acked[firer.node.name] += firer.acked
    in_flight = sum(firer.unanswered for firer in on_c)
    versions = [v for firer in firers for v in firer.versions]
    assert len(set(versions)) == len(versions), "a version was answered twice"

    # The stream: 1..head, no gap, no duplicate; what A and B acknowledged exactly, what C did plus
    # at most the events in flight when it died (appended, their answers lost).
    entries = cluster.stream()
    head = stream_versions(entries)[-1]
    assert_contiguous_stream(cluster.redis, cluster.key, head)
    assert int(cluster.meta()["version"]) == head
    appended = collections.Counter(fields["n"] for _, fields in entries)
    assert set(appended) <= {"a", "b", "c"}, appended
    assert appended["a"] == acked["a"] and appended["b"] == acked["b"], (appended, acked)
    assert acked["c"] <= appended["c"] <= acked["c"] + in_flight, (appended, acked, in_flight)
    assert max(versions) <= head
    total_acked = sum(acked.values())
    assert total_acked <= head <= total_acked + in_flight
    assert_converged([a, b], head, {"n": head})

    # C again, with the same flags: it catches up, serves the same state and takes events.
    c = cluster.restart(c)
    assert_converged([a, b, c], head, {"n": head})
    assert fire(c, INCREMENT) == head + 1
    # A fourth node, started late on a fresh process: the same state.
    d = cluster.node("d")
    assert_converged([a, b, c, d], head + 1, {"n": head + 1})
    assert fire(d, INCREMENT) == head + 2
    assert_converged([a, b, c, d], head + 2, {"n": head + 2})
    assert_contiguous_stream(cluster.redis, cluster.key, head + 2)


# ---------------------------------------------------------------------------------------------
# Redis away


def assert_refused_for_redis(answer, started: float, what: str) -> dict:
    elapsed = time.monotonic() - started
    assert answer.status == 503, (what, answer)
    assert elapsed <= REDIS_TIMEOUT + SLACK, f"{what} took {elapsed:.2f} s to be refused (--redis-timeout {REDIS_TIMEOUT})"
    problem = problem_of(answer)
    retry_after = answer.header("Retry-After")
    assert retry_after is not None and retry_after.isdigit(), answer
    return problem


def write_until_acknowledged(node, path: str, deadline: float) -> int:
    """Fires increments of `path` until one is acknowledged (Redis is back); how many were sent.
    Every answer before is a 503 problem."""
    attempts = 0
    while True:
        attempts += 1
        answer = request(node, "POST", "/events", body={"type": "increment", "path": path}, timeout=REDIS_TIMEOUT + SLACK + 2)
        if answer.status == 200:
            return attempts
        assert answer.status == 503, (node.name, answer)
        problem_of(answer)
        if time.monotonic() >= deadline:
            raise AssertionError(f"node {node.name} still refused writes {RECOVERY_DEADLINE} s after Redis came back: {answer}")
        time.sleep(0.1)


@pytest.mark.time_limit(60)
@pytest.mark.parametrize("how", ["sigterm", "sigkill", "sigstop"])
def test_redis_away_refuses_writes_keeps_reads_and_recovers_with_nothing_lost(cluster, how):
    """SIGTERM and SIGKILL end redis-server (then it is started again on the same port and
    directory, its append-only file intact); SIGSTOP freezes it, connections open and unanswered,
    which only --redis-timeout can tell (then SIGCONT)."""
    a, b = cluster.nodes("a", "b", extra=("--redis-timeout", str(REDIS_TIMEOUT)))
    for i in range(10):
        fire((a, b)[i % 2], INCREMENT)
    assert_converged([a, b], 10, {"n": 10})
    epoch = cluster.meta()["epoch"]
    refused_writes = 0
    with subscribe(b) as ws:
        assert next_json(ws)["version"] == 10
        if how == "sigstop":
            cluster.redis.pause()
        else:
            cluster.redis.stop(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        try:
            started = time.monotonic()
            answer = request(a, "POST", "/events", body={"type": "increment", "path": "/lost"}, timeout=REDIS_TIMEOUT + SLACK + 2)
            refused_writes += 1
            problem = assert_refused_for_redis(answer, started, "a POST on A")
            if how == "sigstop":
                # Sent and never answered: the frozen Redis may hold it, and the answer must not say otherwise.
                assert "not known" in problem["detail"] and "nothing was applied" not in problem["detail"], problem

            started = time.monotonic()
            ws.send(json.dumps({"type": "fire", "id": "while-down", "event": {"type": "increment", "path": "/lost"}}))
            refused_writes += 1
            message = next_json(ws, timeout=REDIS_TIMEOUT + SLACK)
            assert message.get("type") == "error" and message.get("id") == "while-down", message
            assert message["problem"]["status"] == 503, message
            assert time.monotonic() - started <= REDIS_TIMEOUT + SLACK

            started = time.monotonic()
            answer = request(b, "POST", "/events", body={"type": "increment", "path": "/lost"}, timeout=REDIS_TIMEOUT + SLACK + 2)
            refused_writes += 1
            assert_refused_for_redis(answer, started, "a POST on B")

            for node in (a, b):
                wait_until(lambda: request(node, "GET", "/readyz").status != 200, REDIS_TIMEOUT + SLACK,
                           message=f"/readyz on {node.name} not 200 while Redis is away")
                assert state_and_version(node) == ({"n": 10}, 10), f"{node.name} stopped serving its last state"
                info = cluster_info(node)
                assert info.get("redis") != "connected", info
                assert info.get("version") == 10, info
                assert not node_names(info.get("nodes")), f"{node.name} lists nodes alive while cut off from Redis: {info}"
                # A keyed request too (its key cannot be claimed), answered rather than left waiting.
                started = time.monotonic()
                answer = request(node, "POST", "/events", body={"type": "increment", "path": "/lost"},
                                 headers={"Content-Type": "application/json", **keyed(f"while-down-{node.name}")}, timeout=REDIS_TIMEOUT + SLACK + 2)
                refused_writes += 1
                assert_refused_for_redis(answer, started, f"a keyed POST on {node.name}")
                # The history the node has read is still served; what needs Redis is a 503 to retry.
                answer = request(node, "GET", "/history?since=5&limit=3")
                assert answer.status == 200, (node.name, answer)
                assert [json.loads(line)["version"] for line in answer.body.splitlines()] == [6, 7, 8], answer
                answer = request(node, "GET", "/state?version=5", timeout=REDIS_TIMEOUT + SLACK + 2)
                assert answer.status == 503 and answer.header("Retry-After"), (node.name, answer)
                assert problem_of(answer)["type"].endswith("/history-unavailable"), answer
        finally:
            if how == "sigstop":
                cluster.redis.resume()
            else:
                cluster.redis.start()

    # Redis back: both nodes ready again once they have what it holds, before anything is written
    # (a node whose last append failed used to wait for its next successful one).
    for node in (a, b):
        wait_until(lambda: request(node, "GET", "/readyz").status == 200, RECOVERY_DEADLINE,
                   message=f"/readyz on {node.name} 200 again with no write after Redis came back")
    # Writes acknowledged again on both nodes, within a few seconds.
    deadline = time.monotonic() + RECOVERY_DEADLINE
    probes = sum(write_until_acknowledged(node, "/probe", deadline) for node in (a, b))
    for node in (a, b):
        wait_until(lambda: request(node, "GET", "/readyz").status == 200, RECOVERY_DEADLINE, message=f"/readyz on {node.name} 200 again")
    for i in range(10):
        fire((a, b)[i % 2], INCREMENT)
    head = int(cluster.meta()["version"])
    state = assert_converged([a, b], head)
    assert state["n"] == 20, f"acknowledged increments lost or doubled: {state}"
    assert 2 <= state["probe"] <= probes, state
    if how == "sigstop":
        # A write refused on a timeout may still have reached the frozen Redis and be applied once
        # it thaws; never more than once.
        assert state.get("lost", 0) <= refused_writes, state
    else:
        assert "lost" not in state, f"a write refused while Redis was down was applied: {state}"
    assert cluster.meta()["epoch"] == epoch, "the cluster's epoch changed across a Redis restart"
    assert_contiguous_stream(cluster.redis, cluster.key, head)


@pytest.mark.time_limit(60)
def test_redis_restarted_empty_is_noticed_and_writes_are_refused_not_a_new_history(cluster):
    a, b = cluster.nodes("a", "b", extra=("--redis-timeout", str(REDIS_TIMEOUT)))
    for i in range(6):
        fire((a, b)[i % 2], varied_event(i))
    last_state = assert_converged([a, b], 6)
    with subscribe(b) as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 6, "state": last_state}
        cluster.redis.stop(signal.SIGKILL)
        cluster.redis.start(empty=True)
        assert cluster.redis.stream_length(cluster.key) == 0

        # Each node finds the history gone: writes refused with a problem that says so; never a 200.
        deadline = time.monotonic() + RECOVERY_DEADLINE
        for node in (a, b):
            while True:
                answer = request(node, "POST", "/events", body=INCREMENT, timeout=REDIS_TIMEOUT + SLACK + 2)
                assert answer.status == 503, f"node {node.name} took a write on a Redis that lost the history: {answer}"
                problem = problem_of(answer)
                if re.search(r"epoch|histor", problem["detail"], re.IGNORECASE):
                    break
                if time.monotonic() >= deadline:
                    raise AssertionError(f"node {node.name} never said the history was lost: {problem}")
                time.sleep(0.1)

        # And goes on refusing, not ready, serving the last state it had.
        time.sleep(1)
        for node in (a, b):
            answer = request(node, "POST", "/events", body={"type": "set", "path": "/new", "value": 1})
            assert answer.status == 503, answer
            assert re.search(r"epoch|histor", problem_of(answer)["detail"], re.IGNORECASE), answer
            assert request(node, "GET", "/readyz").status != 200
            assert state_and_version(node) == (last_state, 6), f"node {node.name} shows another history"
        assert cluster.redis.stream_length(cluster.key) == 0, cluster.stream()
        pushed = [m for m in drain(ws) if m.get("type") in ("snapshot", "patch", "state")]
        assert not pushed, f"the subscriber on B was shown another history: {pushed[:3]}"


def assert_refuses_another_history(node, state, version: int, ws) -> None:
    """`node`, thawed in front of a Redis holding another history, says so, refuses writes, stays
    unready, keeps its own state, and pushes nothing of the other history to its subscriber."""
    deadline = time.monotonic() + RECOVERY_DEADLINE
    while True:
        answer = request(node, "POST", "/events", body=INCREMENT, timeout=REDIS_TIMEOUT + SLACK + 2)
        assert answer.status == 503, f"node {node.name} took a write on another history: {answer}"
        if re.search(r"epoch|histor", problem_of(answer)["detail"], re.IGNORECASE):
            break
        assert time.monotonic() < deadline, f"node {node.name} never said the history was not its own: {problem_of(answer)}"
        time.sleep(0.1)
    assert request(node, "GET", "/readyz").status != 200
    assert state_and_version(node) == (state, version), f"node {node.name} applied another history"
    pushed = [m for m in drain(ws) if m.get("type") in ("snapshot", "patch", "state")]
    assert not pushed, f"node {node.name}'s subscriber was shown another history: {pushed[:3]}"


@pytest.mark.time_limit(60)
def test_a_node_away_while_redis_restarted_empty_and_a_new_cluster_began_applies_none_of_it(cluster):
    """A node frozen while Redis restarts empty and another node creates a new cluster under the
    same key: thawed, it reconnects to a stream whose head is past its version. It checks the epoch
    before its tail reads anything, so it applies none of the new cluster's events."""
    a = cluster.node("a", "--redis-timeout", str(REDIS_TIMEOUT))
    for i in range(5):
        fire(a, {"type": "append", "path": "/old", "value": i})
    state, _ = state_and_version(a)
    with subscribe(a) as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 5, "state": state}
        with frozen(a):
            cluster.redis.stop(signal.SIGKILL)
            cluster.redis.start(empty=True)
            b = cluster.node("b")
            for i in range(10):
                fire(b, {"type": "append", "path": "/new", "value": i})
        assert_refuses_another_history(a, state, 5, ws)
    assert state_and_version(b)[1] == 10


@pytest.mark.time_limit(60)
def test_a_node_that_lost_its_history_never_reads_the_new_one_as_its_past(cluster):
    """Redis restarted empty and a new cluster began under the same key: the old node's `/history`
    and `/state?version=N` serve its own past from memory, or say it cannot be read (503), never
    the new cluster's events or snapshot as its own."""
    a = cluster.node("a", "--redis-timeout", str(REDIS_TIMEOUT), "--snapshot-events", "10")
    for i in range(25):
        fire(a, {"type": "set", "path": f"/k{i % 5}", "value": f"old{i}"})
    wait_until(lambda: cluster.meta().get("snapshot") == "20", 5, message="a writes the snapshot at 20")
    own = all_history(a, since=12)
    assert [line["version"] for line in own] == list(range(13, 26))
    with subscribe(a) as ws:
        assert next_json(ws)["version"] == 25
        with frozen(a):
            cluster.redis.stop(signal.SIGKILL)
            cluster.redis.start(empty=True)
            b = cluster.node("b", "--snapshot-events", "10")
            for i in range(22):
                fire(b, {"type": "set", "path": f"/k{i % 5}", "value": f"new{i}"})
            wait_until(lambda: cluster.meta().get("snapshot") == "20", 5, message="b writes the snapshot at 20")
        state, _ = state_and_version(a)
        assert_refuses_another_history(a, state, 25, ws)
    assert all_history(a, since=12) == own, "a's own recent events, from memory"
    for target in ("/state?version=23", "/state?version=21"):
        answer = request(a, "GET", target)
        assert_problem(answer, 503, "history-unavailable")
        assert "history" in problem_of(answer)["detail"], answer
        assert not re.search(r"new\d", answer.body.decode()), f"{target} served the new cluster's history: {answer}"


@pytest.mark.time_limit(90)
def test_a_node_away_while_redis_went_back_and_others_appended_refuses_writes(cluster, tmp_path):
    """Redis comes back from an older copy of its data (the same epoch, two acknowledged events
    fewer: a failover to a replica that lacked them) while a node is away, and a new node appends
    three events: the head is past the away node's version again, but the entry it knows at its
    version is not there as it knew it. Thawed, it refuses writes rather than apply the others'
    events on top of its own."""
    a = cluster.node("a", "--redis-timeout", str(REDIS_TIMEOUT))
    for i in range(8):
        fire(a, {"type": "append", "path": "/l", "value": f"common {i}"})
    cluster.redis.stop()
    backup = tmp_path / "redis-backup"
    shutil.copytree(cluster.redis.directory, backup)
    cluster.redis.start()
    deadline = time.monotonic() + RECOVERY_DEADLINE
    for i in range(2):
        write_until_acknowledged(a, f"/a{i}", deadline)
    state, version = state_and_version(a)
    assert version == 10, state
    with subscribe(a) as ws:
        assert without_history(next_json(ws)) == {"type": "snapshot", "version": 10, "state": state}
        with frozen(a):
            cluster.redis.stop()
            shutil.rmtree(cluster.redis.directory)
            shutil.copytree(backup, cluster.redis.directory)
            cluster.redis.start()
            assert cluster.meta()["version"] == "8"
            c = cluster.node("c")
            for i in range(3):
                fire(c, {"type": "append", "path": "/l", "value": f"from c {i}"})
            assert state_and_version(c)[1] == 11
        assert_refuses_another_history(a, state, 10, ws)


@pytest.mark.time_limit(60)
def test_a_redis_that_refuses_writes_makes_the_node_unready_until_it_takes_them_again(cluster):
    """Connected, but out of memory (`maxmemory` reached): every append is refused, so the node is
    not ready, and says why; once Redis takes writes again, it is ready and takes events."""
    a = cluster.node("a")
    assert fire(a, INCREMENT) == 1
    cluster.redis.command("CONFIG", "SET", "maxmemory", "1")
    try:
        refused = post_events(a, INCREMENT)
        assert refused.status == 503 and "OOM" in problem_of(refused)["detail"], refused
        assert refused.header("Retry-After") is not None, refused
        wait_until(lambda: request(a, "GET", "/readyz").status == 503, 5, message="the node turns unready")
        assert "refusing this node's writes" in cluster_info(a)["redis"], cluster_info(a)
        assert "OOM" in request(a, "GET", "/readyz").body.decode(), "/readyz names why"
    finally:
        cluster.redis.command("CONFIG", "SET", "maxmemory", "0")
    wait_until(lambda: request(a, "GET", "/readyz").status == 200, 5, message="the node is ready again")
    assert fire(a, INCREMENT) == 2


def test_a_node_given_redis_by_host_name_connects_and_reconnects(cluster):
    """A host name is resolved off the loop thread (hiredis would block it on DNS), again at each
    reconnection: `localhost` here, through the system's resolver."""
    node = cluster._reactord("--redis", f"redis://localhost:{cluster.redis.port}", "--redis-key", cluster.key, "--node-name", "a",
                             "--redis-timeout", str(REDIS_TIMEOUT))
    node.name = "a"
    wait_until(lambda: request(node, "GET", "/readyz").status == 200, 10, message="the node connects to localhost")
    assert fire(node, INCREMENT) == 1
    cluster.redis.stop(signal.SIGKILL)
    cluster.redis.start()
    wait_until(lambda: request(node, "GET", "/readyz").status == 200, RECOVERY_DEADLINE, message="the node reconnects")
    assert cluster_info(node)["reconnects"] >= 1
    assert fire(node, INCREMENT) == 2


def test_nodes_not_heard_from_for_an_hour_are_forgotten(cluster):
    """The nodes hash does not grow with every name a node ever had (the default name holds the
    process ID): a node gone an hour, or a field that is no time, goes at the next heartbeat."""
    a = cluster.node("a")
    nodes = f"reactor:{{{cluster.key}}}:nodes"
    now_ms = int(time.time() * 1000)
    cluster.redis.command("HSET", nodes, "gone", str(now_ms - 2 * 3600 * 1000), "garbage", "x", "recent", str(now_ms))
    wait_until(lambda: cluster.redis.command("HEXISTS", nodes, "gone") == 0, 5, message="a node gone two hours is forgotten")
    assert cluster.redis.command("HEXISTS", nodes, "garbage") == 0
    assert cluster.redis.command("HEXISTS", nodes, "recent") == 1
    assert cluster.redis.command("HEXISTS", nodes, "a") == 1
    wait_until(lambda: "recent" in node_names(cluster_info(a)["nodes"]), 5, message="a recent peer is listed")


def test_two_nodes_started_under_one_name_say_so_and_keep_serving(cluster):
    """Two nodes given the same --node-name: each finds the other's heartbeats under its name and
    says so in /cluster (and its log), ready all along; once one stops, the other stops saying it.
    A node restarted under its own name is no clash: the name's last beat is its own past one."""
    a = cluster.node("a")
    first, second = cluster.node("twin"), cluster.node("twin")
    for node in (first, second):
        wait_until(lambda: "nameClash" in cluster_info(node), 5, message="the node notices the other under its name")
        assert "--node-name" in cluster_info(node)["nameClash"]
        assert request(node, "GET", "/readyz").status == 200
    assert fire(first, INCREMENT) == 1 and fire(second, INCREMENT) == 2
    second.stop()
    wait_until(lambda: "nameClash" not in cluster_info(first), 5, message="the clash ends once the other node stops")
    a.kill()
    a = cluster.restart(a)
    time.sleep(2.5)
    assert "nameClash" not in cluster_info(a), cluster_info(a)
    assert_converged([first, a], 2, {"n": 2})


# ---------------------------------------------------------------------------------------------
# Idempotency and rejections across nodes


def test_an_idempotency_key_applies_once_whichever_nodes_the_retries_reach(cluster):
    a, b, c = cluster.nodes("a", "b", "c")
    first = post_events(a, INCREMENT, headers=keyed("order-1"))
    assert first.status == 200 and first.json() == {"version": 1}, first
    assert first.header("Idempotent-Replayed") is None
    # Retried at once on B (which may not have applied version 1 yet): the first answer, replayed.
    retry = post_events(b, INCREMENT, headers=keyed("order-1"))
    assert retry.status == 200 and retry.json() == {"version": 1}, retry
    assert retry.header("Idempotent-Replayed") == "true"
    # The key with another request, on C: refused.
    assert_problem(post_events(c, {"type": "increment", "path": "/n", "by": 5}, headers=keyed("order-1")), 422, "idempotency-key-reused")

    # The same request reaching two nodes at the same moment: applied once.
    answers: dict[str, object] = {}
    barrier = threading.Barrier(2, timeout=5)

    def send(node):
        barrier.wait()
        answers[node.name] = post_events(node, INCREMENT, headers=keyed("order-2"))

    threads = [threading.Thread(target=send, args=(node,), daemon=True) for node in (a, c)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(answers) == 2, answers
    fresh = [answer for answer in answers.values() if answer.status == 200 and answer.header("Idempotent-Replayed") is None]
    assert len(fresh) == 1, f"applied {len(fresh)} times: {answers}"
    assert fresh[0].json() == {"version": 2}
    for answer in answers.values():
        if answer is not fresh[0]:
            if answer.status == 409:
                assert_problem(answer, 409, "idempotent-request-in-progress")
            else:
                assert answer.status == 200 and answer.header("Idempotent-Replayed") == "true", answer
                assert answer.json() == {"version": 2}
    replay = post_events(b, INCREMENT, headers=keyed("order-2"))
    assert replay.status == 200 and replay.json() == {"version": 2} and replay.header("Idempotent-Replayed") == "true", replay

    assert_converged([a, b, c], 2, {"n": 2})
    assert_contiguous_stream(cluster.redis, cluster.key, 2)


@pytest.mark.time_limit(60)
def test_a_retry_of_a_key_answered_elsewhere_leaves_the_requests_beside_it_acknowledged(cluster):
    """A node sends a key's claim and the append carrying the request's events together, without
    waiting for the claim's answer: a retry of a key node a answered is applied on node b, fenced
    off in b's append (the key is not its own), and dropped, answered with a's answer; the
    unkeyed requests applied beside it, in the same group, are applied again and acknowledged.
    b's first append is held 1 s on its way to Redis, so that the retry and the others all wait
    for the next one, together."""
    proxy = HoldingProxy(cluster.redis.port, (b"EVALSHA", b":log"), seconds=1)
    try:
        a = cluster.node("a")
        b = cluster._reactord("--redis", f"redis://{HOST}:{proxy.port}", "--redis-key", cluster.key, "--node-name", "b")
        wait_until(lambda: request(b, "GET", "/readyz").status == 200, 10, message="node b connects through the proxy")
        first = post_events(a, INCREMENT, headers=keyed("paid"))
        assert first.status == 200 and first.json() == {"version": 1}, first
        assert_converged([a, b], 1, {"n": 1})
        held: dict = {}
        holder = threading.Thread(target=lambda: held.update(answer=post_events(b, INCREMENT)), daemon=True)
        holder.start()
        assert proxy.held.wait(5), "b's first append never went through the proxy"
        unkeyed = 10
        answers: list = []
        barrier = threading.Barrier(unkeyed + 1, timeout=10)

        def send(headers):
            barrier.wait()
            answers.append((headers, post_events(b, INCREMENT, headers=headers)))

        threads = [threading.Thread(target=send, args=(keyed("paid"),), daemon=True)]
        threads += [threading.Thread(target=send, args=({},), daemon=True) for _ in range(unkeyed)]
        for thread in threads:
            thread.start()
        for thread in threads + [holder]:
            thread.join(20)
        assert held["answer"].status == 200, held
        assert len(answers) == unkeyed + 1, answers
        for headers, answer in answers:
            if headers:
                assert answer.status == 200 and answer.json() == {"version": 1} and answer.header("Idempotent-Replayed") == "true", answer
            else:
                assert answer.status == 200 and answer.header("Idempotent-Replayed") is None, answer
        # The retry went through the fence (applied, appended, dropped), not around it.
        fenced = "requests whose idempotency keys are not theirs in Redis are dropped"
        assert b.log().count(fenced) == 1, b.log()[-3000:]
        # For a second after a fence, b applies a keyed request only once its claim is answered: a
        # retry then is answered from the key, never applied, and fences nothing off. (The fence
        # came after the held append, a second or more after it was held: the retry answered
        # within 1.9 s of the hold was taken within that second.)
        second = post_events(a, INCREMENT, headers=keyed("paid-again"))
        assert second.status == 200, second
        retry = post_events(b, INCREMENT, headers=keyed("paid-again"))
        assert time.monotonic() - proxy.held_at < 1.9, "too slow to fall within the second after the fence"
        assert retry.status == 200 and retry.json() == second.json() and retry.header("Idempotent-Replayed") == "true", retry
        assert b.log().count(fenced) == 1, b.log()[-3000:]
        total = 3 + unkeyed
        assert_converged([a, b], total, {"n": total})
        assert_contiguous_stream(cluster.redis, cluster.key, total)
    finally:
        proxy.close()


@pytest.mark.time_limit(60)
@pytest.mark.time_limit(60)
def test_a_keyed_append_delayed_past_a_short_window_still_applies_once(cluster):
    """A keyed request's append held 4 s on its way to Redis, with a window of 2 s and a Redis
    timeout of 10 s: the key's claim outlives any append the node still waits on (twice its
    timeout), so retries on another node meanwhile get 409, never apply the request a second
    time, and once the append lands they get its answer. Before, the claim lasted the window
    and the retry at 2.5 s applied the increment again."""
    proxy = HoldingProxy(cluster.redis.port, (b"EVALSHA", b":idem:", b":log"), seconds=4)
    try:
        a = cluster._reactord("--redis", f"redis://{HOST}:{proxy.port}", "--redis-key", cluster.key, "--node-name", "a",
                              "--redis-timeout", "10", "--idempotency-window", "2")
        wait_until(lambda: request(a, "GET", "/readyz").status == 200, 10, message="node a connects through the proxy")
        b = cluster.node("b", "--idempotency-window", "2")
        first: dict = {}
        sender = threading.Thread(target=lambda: first.update(answer=request(a, "POST", "/events", body=INCREMENT, headers={"Content-Type": "application/json", **keyed("held")}, timeout=30)), daemon=True)
        sender.start()
        assert proxy.held.wait(5), "the keyed append never went through the proxy"
        for pause in (0.3, 2.2):
            time.sleep(pause)
            assert_problem(post_events(b, INCREMENT, headers=keyed("held")), 409, "idempotent-request-in-progress")
        sender.join(20)
        assert first["answer"].status == 200 and first["answer"].json() == {"version": 1}, first
        retry = post_events(b, INCREMENT, headers=keyed("held"))
        assert retry.status == 200 and retry.json() == {"version": 1} and retry.header("Idempotent-Replayed") == "true", retry
        assert_converged([a, b], 1, {"n": 1})
    finally:
        proxy.close()


@pytest.mark.time_limit(60)
def test_a_keyed_append_landing_after_its_claim_ran_out_is_fenced_off(cluster):
    """Node a's keyed append is held 8 s on its way to Redis; a gives up after its 1 s timeout, and
    the key's claim runs out at 3 s. At 5 s a retry reaches b, which claims the key, its append
    held 5 s. a's append lands first, at 8 s: it must not go in, the key holding b's claim now;
    b's lands at 10 s and applies the increment once. Before the fence a's append went in (its
    version was still the head) and b's, refused as behind, was applied again on top: n == 3."""
    proxy_a = HoldingProxy(cluster.redis.port, (b"EVALSHA", b":idem:", b":log"), seconds=8)
    proxy_b = HoldingProxy(cluster.redis.port, (b"EVALSHA", b":idem:", b":log"), seconds=5)
    try:
        a = cluster._reactord("--redis", f"redis://{HOST}:{proxy_a.port}", "--redis-key", cluster.key, "--node-name", "a",
                              "--redis-timeout", "1", "--idempotency-window", "1")
        b = cluster._reactord("--redis", f"redis://{HOST}:{proxy_b.port}", "--redis-key", cluster.key, "--node-name", "b",
                              "--redis-timeout", "10")
        for node in (a, b):
            wait_until(lambda: request(node, "GET", "/readyz").status == 200, 10, message="the node connects through its proxy")
        c = cluster.node("c")
        # Redis learns the append script from a first (unkeyed) append: held unknown, the late
        # append would be refused as NOSCRIPT and never run, whatever the fence.
        assert fire(a, INCREMENT) == 1
        started = time.monotonic()
        first = request(a, "POST", "/events", body=INCREMENT, headers={"Content-Type": "application/json", **keyed("late")}, timeout=30)
        assert proxy_a.held.is_set(), "a's keyed append never went through its proxy"
        assert_problem(first, 503, "journal-unavailable")
        time.sleep(max(0.0, 5 - (time.monotonic() - started)))
        retry: dict = {}
        sender = threading.Thread(target=lambda: retry.update(answer=request(b, "POST", "/events", body=INCREMENT, headers={"Content-Type": "application/json", **keyed("late")}, timeout=30)), daemon=True)
        sender.start()
        assert proxy_b.held.wait(5), "b's keyed append never went through its proxy"
        sender.join(25)
        assert retry["answer"].status == 200 and retry["answer"].json() == {"version": 2}, retry
        assert_converged([b, c], 2, {"n": 2})
        wait_until(lambda: request(a, "GET", "/readyz").status == 200, 15, message="a reconnects and catches up")
        assert_converged([a, b, c], 2, {"n": 2})
        assert_contiguous_stream(cluster.redis, cluster.key, 2)
        again = post_events(c, INCREMENT, headers=keyed("late"))
        assert again.status == 200 and again.json() == {"version": 2} and again.header("Idempotent-Replayed") == "true", again
        # b's heartbeats were held behind its append too: one beat at a time, none taken for another node's.
        assert "nameClash" not in cluster_info(b) and "under this node's name" not in b.log(), b.log()
    finally:
        proxy_a.close()
        proxy_b.close()


def test_an_event_refused_by_the_caught_up_state_answers_422_not_5xx(cluster):
    a, b = cluster.nodes("a", "b")
    rounds = 15
    acknowledged = 0
    increments_applied = 0

    def b_has(path: str, value) -> bool:
        answer = request(b, "GET", f"/state?path={path}")
        return answer.status == 200 and answer.json() == value

    # B holds /xI as a number; A makes it a string (acknowledged); B is asked at once to increment it,
    # before it has necessarily applied A's event: the total order puts the string first.
    for i in range(rounds):
        path = f"/x{i}"
        fire(a, {"type": "set", "path": path, "value": 0})
        wait_until(lambda: b_has(path, 0), 10, message=f"B applying {path} = 0")
        fire(a, {"type": "set", "path": path, "value": "text"})
        answer = post_events(b, {"type": "increment", "path": path})
        assert answer.status < 500, f"round {i}: a rejection after catching up answered {answer}"
        assert_problem(answer, 422, "event-rejected")
        acknowledged += 2

    # The same two at the same moment: either order is fine, a 5xx never is.
    for i in range(rounds):
        path = f"/y{i}"
        fire(a, {"type": "set", "path": path, "value": 0})
        wait_until(lambda: b_has(path, 0), 10, message=f"B applying {path} = 0")
        barrier = threading.Barrier(2, timeout=5)
        answers = {}

        def send(node, event):
            barrier.wait()
            answers[node.name] = post_events(node, event)

        threads = [
            threading.Thread(target=send, args=(a, {"type": "set", "path": path, "value": "text"}), daemon=True),
            threading.Thread(target=send, args=(b, {"type": "increment", "path": path}), daemon=True),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert answers["a"].status == 200, answers["a"]
        increment = answers["b"]
        assert increment.status < 500, f"round {i}: {increment}"
        if increment.status == 200:
            assert increment.json()["version"] < answers["a"].json()["version"], (increment, answers["a"])
            increments_applied += 1
        else:
            assert_problem(increment, 422, "event-rejected")
        acknowledged += 2 + (increment.status == 200)

    head = acknowledged
    state = assert_converged([a, b], head)
    assert all(state[f"x{i}"] == "text" and state[f"y{i}"] == "text" for i in range(rounds)), state
    entries = assert_contiguous_stream(cluster.redis, cluster.key, head)
    assert sum('"increment"' in fields["e"] for _, fields in entries) == increments_applied, "a refused event is in the stream"


# ---------------------------------------------------------------------------------------------
# Configuration and introspection


def test_data_dir_together_with_redis_is_refused_at_start(redis, tmp_path):
    data_dir = tmp_path / "data"
    done = run_reactord("--port", "0", "--redis", redis.url, "--redis-key", "e2e", "--node-name", "a", "--data-dir", str(data_dir))
    # A usage error, as every conflicting setting is (EX_USAGE).
    assert done.returncode == 64, done
    output = done.stdout + done.stderr
    assert "--data-dir" in output, output
    assert re.search(r"--redis(?![-\w])", output), f"the message does not name --redis: {output}"
    assert redis.stream_length("e2e") == 0 and redis.meta("e2e") == {}


def test_a_redis_that_asks_for_credentials_gets_them_from_the_url(redis, reactord):
    # An ACL user, and a password for the default user, set on the running Redis through a
    # connection kept open: a new one would have to authenticate too.
    with redis.client() as admin:
        assert admin.command("ACL", "SETUSER", "alice", "on", ">wonder land", "~*", "&*", "+@all") == "OK"
        assert admin.command("CONFIG", "SET", "requirepass", "s3cret@home") == "OK"
        address = f"127.0.0.1:{redis.port}"
        # Percent-encoded, as in any URL: "@" as %40, a space as %20.
        a = reactord("--redis", f"redis://:s3cret%40home@{address}", "--redis-key", "auth", "--node-name", "a")
        a.name = "a"
        b = reactord("--redis", f"redis://alice:wonder%20land@{address}", "--redis-key", "auth", "--node-name", "b")
        b.name = "b"
        for node in (a, b):
            wait_until(lambda: request(node, "GET", "/readyz").status == 200, 10, message=f"{node.name} connects to Redis")
        assert fire(a, INCREMENT) == 1
        assert fire(b, INCREMENT) == 2
        assert_converged([a, b], 2, {"n": 2})
        assert admin.command("XLEN", log_key("auth")) == 2

        # Refused at start, saying why, and never showing the password.
        for url, words in [(f"redis://:not-the-password-42@{address}", "WRONGPASS"),
                           (f"redis://alice:not-the-password-42@{address}", "WRONGPASS"),
                           (f"redis://{address}", "NOAUTH")]:
            done = run_reactord("--port", "0", "--redis", url, "--redis-key", "auth", "--node-name", "c")
            output = done.stdout + done.stderr
            assert done.returncode != 0, output
            assert words in output, output
            assert "not-the-password-42" not in output, output
        done = run_reactord("--port", "0", "--redis", f"redis://alice@{address}", "--redis-key", "auth", "--node-name", "c")
        assert done.returncode == 64 and "redis://USER:PASSWORD@HOST:PORT" in done.stdout + done.stderr, done
        for node in (a, b):
            assert "s3cret" not in node.log() and "wonder" not in node.log(), node.log()


def test_a_node_refused_by_redis_on_reconnecting_tries_again_until_it_is_served(cluster, redis):
    # Redis asks for a password the node does not have, and drops its connections: the node's new
    # ones are refused (NOAUTH, as they would be LOADING while a restarted Redis reads its data).
    # It says why, takes no writes, and is served again once Redis no longer asks.
    node = cluster.node("a")
    assert fire(node, INCREMENT) == 1
    with redis.client() as admin:
        assert admin.command("CONFIG", "SET", "requirepass", "only-for-this-test") == "OK"
        admin.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")

        def refused():
            info = cluster_info(node)
            return info if "NOAUTH" in info["redis"] else None

        info = wait_until(refused, 10, interval=0.1, message="the node says Redis refuses it")
        assert info["ready"] is False, info
        assert request(node, "GET", "/readyz").status == 503
        assert request(node, "POST", "/events", INCREMENT).status == 503
        assert admin.command("CONFIG", "SET", "requirepass", "") == "OK"
    wait_until(lambda: request(node, "GET", "/readyz").status == 200, 10, message="ready again once Redis serves it")
    assert cluster_info(node)["redis"] == "connected"
    assert fire(node, INCREMENT) == 2


@contextlib.contextmanager
def node_with_a_held_tail(cluster):
    """Nodes a and b, a at version 5 and b knowing that head while its tail read is held 2 s on its
    way to Redis (b still at version 0)."""
    proxy = HoldingProxy(cluster.redis.port, (b"XREAD",), seconds=2)
    try:
        a = cluster.node("a")
        b = cluster._reactord("--redis", f"redis://{HOST}:{proxy.port}", "--redis-key", cluster.key, "--node-name", "b")
        assert proxy.held.wait(10), "b's tail never read through the proxy"
        for _ in range(5):
            fire(a, INCREMENT)
        # b's heartbeat learns the head (5) within a second; its tail is still held.
        wait_until(lambda: cluster_info(b)["head"] == 5, 3, interval=0.05, message="b learns the head")
        yield a, b
    finally:
        proxy.close()


@pytest.mark.time_limit(60)
def test_a_subscriber_resuming_on_a_node_behind_waits_for_it_rather_than_go_back(cluster):
    """A client resuming on node b with a version it had from node a, while b's tail has not brought
    it yet, is answered once b has it: it gets what follows, not a snapshot of an older version.
    b's tail read is held 2 s on its way to Redis; a past version b has not reached is read alike."""
    with node_with_a_held_tail(cluster) as (a, b):
        assert cluster_info(b)["version"] == 0
        past: dict = {}
        reader = threading.Thread(target=lambda: past.update(answer=request(b, "GET", "/state?version=4", timeout=10)), daemon=True)
        reader.start()
        with subscribe(b, since=5) as ws:
            assert fire(a, INCREMENT) == 6
            message = next_json(ws)
            assert message["type"] == "patch" and message["version"] == 6, message
        reader.join(10)
        assert past["answer"].status == 200 and past["answer"].json() == {"n": 4}, past


def test_a_request_pipelined_behind_a_waiting_stream_is_not_run_unanswered(cluster):
    """An event stream takes its connection over once it is answered: requests pipelined behind it
    get no answer. While it waits for its version, they must not run either: a POST among them would
    be applied and its client never told. b's tail read is held 2 s on its way to Redis."""
    with node_with_a_held_tail(cluster) as (a, b):
        body = json.dumps(INCREMENT)
        with socket.create_connection((HOST, b.port), timeout=10) as connection:
            connection.sendall(
                (f"GET /stream?since=5 HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n"
                 f"POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = connection.recv(4096)
                assert chunk, f"b closed before answering the stream: {head!r}"
                head += chunk
            assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head, head
            # The stream was answered once b reached version 5; the POST behind it, had it run,
            # would have been appended since.
            wait_for_version([b], 5)
            time.sleep(1)
            assert state_and_version(a) == ({"n": 5}, 5)


def redis_client_ids(admin) -> set[str]:
    """The ids of the clients connected to Redis, but `admin` itself."""
    own = str(admin.command("CLIENT", "ID"))
    listing = admin.command("CLIENT", "LIST")
    listing = listing.decode() if isinstance(listing, bytes) else listing
    ids = {field[3:] for line in listing.splitlines() for field in line.split() if field.startswith("id=")}
    return ids - {own}


@pytest.mark.time_limit(60)
def test_a_node_that_connects_again_is_not_ready_until_it_has_caught_up(cluster, redis):
    """A node whose connections to Redis dropped while the others moved on (a partition, a proxy
    restarting) says it is not ready, once it has connected again, until it has applied what the
    log held then: a load balancer must not send clients to a node serving a state far behind."""
    a = cluster.node("a")
    with redis.client() as admin:
        others = redis_client_ids(admin)
        b = cluster.node("b")
        b_connections = redis_client_ids(admin) - others
        assert len(b_connections) == 2, b_connections
        with frozen(b):
            for _ in range(3000):
                fire(a, INCREMENT)
            for id in b_connections:
                admin.command("CLIENT", "KILL", "ID", id)
    b.wait_for_log("lost the connection to Redis")
    deadline = time.monotonic() + 20
    while True:
        answer = request(b, "GET", "/readyz")
        if answer.status == 200:
            assert answer.json()["version"] == 3000, f"b said it was ready at {answer.json()}, the log at 3000"
            break
        assert time.monotonic() < deadline, f"b never turned ready again: {answer.json()}"
    assert state_and_version(b) == ({"n": 3000}, 3000)


def test_get_cluster_names_the_node_its_versions_redis_and_its_peers(cluster):
    nodes = cluster.nodes("a", "b", "c")
    for i in range(5):
        fire(nodes[i % 3], INCREMENT)
    assert_converged(nodes, 5)
    for node in nodes:
        others = {other.name for other in nodes if other is not node}

        def sees_the_others():
            info = cluster_info(node)
            names = node_names(info.get("nodes"))
            return info if others <= names else None

        info = wait_until(sees_the_others, 10, interval=0.1, message=f"node {node.name} listing {sorted(others)}")
        assert info["node"] == node.name, info
        assert info["version"] == 5 and info["head"] == 5, info
        assert info["redis"] == "connected", info
        assert node.name not in node_names(info["nodes"]), f"{node.name} lists itself among the others: {info}"
    # Events fired on A move C's version and head.
    assert fire(nodes[0], INCREMENT) == 6
    wait_for_version([nodes[2]], 6)

    def c_at_6():
        info = cluster_info(nodes[2])
        return info if (info["version"], info["head"]) == (6, 6) else None

    assert wait_until(c_at_6, 10, message="C's /cluster at version and head 6")["node"] == "c"


def test_snapshots_trim_the_stream_and_a_late_node_starts_from_one(cluster, redis):
    # Every 10 events one node writes the state to Redis and trims the stream before the snapshot
    # it replaces.
    a, b = cluster.nodes("a", "b", extra=("--snapshot-events", "10"))
    for i in range(23):
        fire((a, b)[i % 2], INCREMENT)
    assert_converged([a, b], 23, {"n": 23})
    fields = pairs(redis.command("HGETALL", snapshot_key("e2e")))
    assert fields["version"] == "20" and json.loads(fields["state"]) == {"n": 20}, fields
    assert cluster.meta()["snapshot"] == "20"
    assert stream_versions(cluster.stream()) == list(range(11, 24))
    # A node started now has no journal of its own: it loads the snapshot and the three after it.
    c = cluster.node("c")
    assert state_and_version(c) == ({"n": 23}, 23)
    # History and time travel reach back to the snapshot, and say 410 beyond it.
    assert [entry["version"] for entry in all_history(c, since=20)] == [21, 22, 23]
    gone = request(c, "GET", "/history?since=5")
    problem = assert_problem(gone, 410, "history-gone")
    assert problem["oldestVersion"] == 20, problem
    assert_problem(request(a, "GET", "/state?version=5"), 410, "history-gone")
    assert state_and_version(a, "?version=21") == ({"n": 21}, 21)
    # Every node answers alike, whatever it still holds in memory: a applied all 23 events, and,
    # once it knows of the snapshot (from its next heartbeat, within a second), says what c says: what
    # Redis keeps after the snapshot before the newest one, 410 before it.
    wait_until(lambda: request(a, "GET", "/history?since=20").header("Reactor-Oldest-Version") == "20", 5,
               message="a learns of the snapshot")
    assert_problem(request(a, "GET", "/history?since=5"), 410, "history-gone")
    for node in (a, b, c):
        assert [entry["version"] for entry in all_history(node, since=10)] == list(range(11, 24)), node.name


def test_metrics_describe_the_cluster(cluster, redis):
    a, b = cluster.nodes("a", "b")
    for i in range(6):
        fire((a, b)[i % 2], INCREMENT)
    assert_converged([a, b], 6)

    def samples(node) -> dict[str, float]:
        text = request(node, "GET", "/metrics").body.decode()
        return {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
                if line.startswith("reactor_cluster_") or line.startswith("reactor_journal_ready")}

    wait_until(lambda: samples(a).get("reactor_cluster_peers") == 1, 10, message="a sees b")
    seen = samples(a)
    assert seen["reactor_cluster_redis_connected"] == 1 and seen["reactor_cluster_history_lost"] == 0, seen
    assert seen["reactor_cluster_head_version"] == 6 and seen["reactor_cluster_lag_events"] == 0, seen
    assert seen["reactor_journal_ready"] == 1, seen
    redis.stop()
    wait_until(lambda: samples(a)["reactor_cluster_redis_connected"] == 0, 10, message="a notices Redis is gone")
    assert samples(a)["reactor_journal_ready"] == 0
    redis.start()
    wait_until(lambda: samples(a)["reactor_cluster_redis_connected"] == 1, 15, message="a reconnects")
    assert samples(a)["reactor_cluster_redis_reconnects_total"] >= 1


def test_a_typed_swift_state_runs_as_a_two_node_cluster(redis, reactord):
    # The RPG example (a typed state with its own event registry), served by rpg-server.
    from conftest import REACTORD_BIN
    from pathlib import Path
    binary = str(Path(REACTORD_BIN).with_name("rpg-server"))
    nodes = [reactord("--redis", f"127.0.0.1:{redis.port}", "--redis-key", "rpg", "--node-name", name, binary=binary)
             for name in ("a", "b")]
    for node in nodes:
        wait_until(lambda: request(node, "GET", "/readyz").status == 200, 10, message="the node connects to Redis")
    firers = []
    for i in range(20):
        answer = post_events(nodes[i % 2], {"type": "levelUp", "playerID": i % 2})
        assert answer.status == 200, answer
        firers.append(answer.json()["version"])
    assert sorted(firers) == list(range(1, 21))
    refused = post_events(nodes[0], {"type": "levelUp", "playerID": 7})
    assert_problem(refused, 422, "event-rejected")
    for state, version in wait_for_version(nodes, 20):
        assert version == 20
        assert [player["level"] for player in state["players"]] == [11, 11], state


def test_with_wait_replicas_an_append_is_acknowledged_only_once_a_replica_has_it(redis, reactord, tmp_path):
    replica = RedisServer(tmp_path / "replica", extra=("--replicaof", "127.0.0.1", str(redis.port)))
    replica.start()
    try:
        wait_until(lambda: "master_link_status:up" in replica.command("INFO", "replication"), 10,
                   message="the replica follows the primary")
        node = reactord("--redis", redis.url, "--redis-key", "e2e", "--node-name", "a",
                        "--redis-wait-replicas", "1", "--redis-timeout", "1")
        # Listening comes before Redis answers: until then a write is refused (503), as it should be.
        wait_until(lambda: request(node, "GET", "/readyz").status == 200, 5, message="the node connects to Redis")
        answer = post_events(node, INCREMENT)
        assert answer.status == 200, answer
        # What was acknowledged is on the replica.
        assert replica.command("HGET", "reactor:{e2e}:meta", "version") == "1"
        replica.stop()
        started = time.monotonic()
        refused = post_events(node, INCREMENT)
        problem = assert_problem(refused, 503, "journal-unavailable")
        assert "replicas" in problem["detail"], problem
        assert refused.header("Retry-After"), refused
        assert time.monotonic() - started < 1 + SLACK
    finally:
        replica.close()


def test_a_retry_after_a_503_whose_event_went_in_gets_the_events_answer(cluster):
    # A asks for a replica that Redis does not have: its append goes in, WAIT says no, and its
    # client gets a 503. The event is in the stream all the same, and the key with it.
    a = cluster.node("a", "--redis-wait-replicas", "1", "--redis-timeout", "0.5")
    b = cluster.node("b")
    first = post_events(a, INCREMENT, headers=keyed("lost-answer"))
    problem = assert_problem(first, 503, "journal-unavailable")
    assert "replicas" in problem["detail"], problem
    wait_for_version([b], 1)
    # The retry, on B: the event's answer, not a second increment.
    retry = post_events(b, INCREMENT, headers=keyed("lost-answer"))
    assert retry.status == 200 and retry.json() == {"version": 1}, retry
    assert retry.header("Idempotent-Replayed") == "true"
    assert_converged([a, b], 1, {"n": 1})
    assert cluster.redis.stream_length(cluster.key) == 1


def test_a_retry_after_a_503_whose_request_of_several_events_went_in_gets_its_answer(cluster):
    # The same for a request of several events: their key's answer goes into Redis with the last.
    a = cluster.node("a", "--redis-wait-replicas", "1", "--redis-timeout", "0.5")
    b = cluster.node("b")
    batch = [INCREMENT, {"type": "set", "path": "/s", "value": "x"}]
    first = post_events(a, batch, headers=keyed("lost-answer"))
    assert_problem(first, 503, "journal-unavailable")
    wait_for_version([b], 2)
    retry = post_events(b, batch, headers=keyed("lost-answer"))
    assert retry.status == 200 and retry.json() == {"version": 2, "applied": 2}, retry
    assert retry.header("Idempotent-Replayed") == "true"
    assert_converged([a, b], 2, {"n": 1, "s": "x"})


@contextlib.contextmanager
def frozen(node):
    """`node` stopped (SIGSTOP) for the block, its connections open and unread; continued after."""
    node.process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        node.process.send_signal(signal.SIGCONT)


def test_a_node_a_few_events_behind_a_new_snapshot_reads_them_from_the_stream(cluster):
    a, b = cluster.nodes("a", "b", extra=("--snapshot-events", "10"))
    for _ in range(6):
        fire(a, INCREMENT)
    assert_converged([a, b], 6)
    # b is frozen while a crosses the snapshot at 10: the stream still holds what b missed.
    with frozen(b):
        for _ in range(6):
            fire(a, INCREMENT)
        wait_until(lambda: cluster.meta().get("snapshot") == "10", 5, message="a writes the snapshot at 10")
    assert_converged([a, b], 12, {"n": 12})
    assert "took the shared log's snapshot" not in b.log(), "b started again from the snapshot"
    assert fire(b, INCREMENT) == 13


def test_a_node_away_longer_than_the_stream_keeps_starts_again_from_the_snapshot(cluster):
    a, b = cluster.nodes("a", "b", extra=("--snapshot-events", "10"))
    fire(a, INCREMENT)
    assert_converged([a, b], 1)
    # b is frozen while a moves on past three snapshots, each of which trims the stream.
    with frozen(b):
        for _ in range(31):
            fire(a, INCREMENT)
    assert cluster.meta()["snapshot"] == "30"
    fire(a, INCREMENT)
    # b cannot read the events it missed any more: it takes the snapshot, then what follows it.
    assert_converged([a, b], 33, {"n": 33})
    b.wait_for_log("took the shared log's snapshot")
    assert request(b, "GET", "/readyz").status == 200
    # b's resume window jumped from 1 to 30: a subscriber resuming on b from a version it skipped
    # (one it had from a, say) starts over, one from 30 on gets the patches after it.
    for since in (1, 8, 28, 29, 31):
        with subscribe(b, since=since) as ws:
            message = next_json(ws)
            if since < 29:
                assert without_history(message) == {"type": "snapshot", "version": 33, "state": {"n": 33}, "resumed": False}, (since, message)
                assert_silent(ws, 0.2)
            else:
                assert message["type"] == "patch" and message["version"] == since + 1, (since, message)
    # The jump itself is one replacement of the whole state, right from any version before it.
    assert_resumes(b, 29, {"n": 29}, 33, {"n": 33}, "from the jump")
    assert_resumes(b, 31, {"n": 31}, 33, {"n": 33}, "from after the jump")
    assert b.process.poll() is None, "b died resuming a subscriber"


def test_three_nodes_behind_nginx_as_docs_cluster_md_shows_them(cluster, tmp_path):
    # deploy/nginx/reactord-cluster.conf, with loopback ports for the three nodes' addresses.
    import shutil
    from test_operations import Nginx, tls_websocket
    assert shutil.which("nginx") and shutil.which("openssl"), "nginx or openssl is missing: scripts/setup.sh installs them"
    # Without tokens behind a proxy that passes its public name on: --insecure says so.
    nodes = cluster.nodes("a", "b", "c", extra=("--insecure",))
    proxy = Nginx(tmp_path, [node.port for node in nodes], site_file="reactord-cluster.conf")
    try:
        ws = tls_websocket(proxy)
        try:
            assert ws.recv_json()["type"] == "snapshot"
            # Round robin spreads the POSTs over the three nodes; the subscriber, on one of them,
            # sees every version in order.
            for i in range(9):
                status, _, body = proxy.request("POST", "/events", INCREMENT)
                assert (status, json.loads(body)) == (200, {"version": i + 1}), body
            versions = [ws.recv_json()["version"] for _ in range(9)]
            assert versions == list(range(1, 10))
        finally:
            ws.close()
        entries = cluster.stream()
        assert {fields["n"] for _, fields in entries} == {"a", "b", "c"}, "nginx spread the events over every node"
        assert_converged(nodes, 9, {"n": 9})
    finally:
        proxy.stop()


def test_a_stream_that_went_back_under_the_same_epoch_is_noticed(cluster, redis):
    # What a failover to a replica that lacked the last events looks like: the same epoch, a lower head.
    a, b = cluster.nodes("a", "b")
    for i in range(5):
        fire((a, b)[i % 2], {"type": "set", "path": f"/k{i}", "value": i})
    assert_converged([a, b], 5)
    with subscribe(a) as ws:
        lost = next_json(ws)["history"]
    # The replica's stream: entries 1 to 3, and no trace of 4 and 5 (XDEL would leave the stream's
    # last ID at 5).
    kept = redis.command("XRANGE", log_key("e2e"), "-", "3-0")
    assert [entry_id for entry_id, _ in kept] == ["1-0", "2-0", "3-0"], kept
    redis.command("DEL", log_key("e2e"))
    for entry_id, fields in kept:
        redis.command("XADD", log_key("e2e"), entry_id, *fields)
    redis.command("HSET", "reactor:{e2e}:meta", "version", "3")
    for node in (a, b):
        wait_until(lambda: request(node, "GET", "/readyz").status == 503, 5, message=f"{node.name} notices the stream went back")
        refused = post_events(node, INCREMENT)
        problem = assert_problem(refused, 503, "journal-unavailable")
        assert "below version 5" in problem["detail"], problem
        assert state_and_version(node) == ({f"k{i}": i for i in range(5)}, 5)
    assert cluster.meta()["version"] == "3", "nothing was appended on the shorter history"

    # What cluster.md says to do: a new epoch, then the nodes restarted. They go on from version 3
    # in a history of another name: a subscriber resuming at version 5 of the lost one gets a
    # snapshot, not version 6's patch applied to a state the cluster no longer has.
    redis.command("HSET", "reactor:{e2e}:meta", "epoch", "after-the-failover")
    assert a.stop() == 0
    a = cluster.restart(a)
    for i in range(3):
        fire(a, {"type": "set", "path": f"/x{i}", "value": i})
    expected = {"k0": 0, "k1": 1, "k2": 2, "x0": 0, "x1": 1, "x2": 2}
    assert state_and_version(a) == (expected, 6)
    with subscribe(a, since=5, history=lost) as ws:
        message = next_json(ws)
    assert (message["type"], message["state"], message.get("resumed"), message["history"]) == ("snapshot", expected, False, "after-the-failover"), message


def test_an_entry_reactord_does_not_write_stops_writes_never_shows_another_history(cluster, redis):
    a, b = cluster.nodes("a", "b")
    for i in range(3):
        fire((a, b)[i % 2], INCREMENT)
    assert_converged([a, b], 3)
    with subscribe(b) as ws:
        assert next_json(ws)["version"] == 3
        # Something else than reactord writes the next entry, and moves the head past it.
        redis.command("XADD", log_key("e2e"), "4-0", "note", "not an event")
        redis.command("HSET", "reactor:{e2e}:meta", "version", "4")
        for node in (a, b):
            wait_until(lambda: request(node, "GET", "/readyz").status == 503, 5, message=f"{node.name} notices the entry")
            problem = assert_problem(post_events(node, INCREMENT), 503, "journal-unavailable")
            assert "4-0" in problem["detail"] and "refuses writes" in problem["detail"], problem
            assert state_and_version(node) == ({"n": 3}, 3), "the node shows the history it had"
        pushed = [m for m in drain(ws) if m.get("type") in ("snapshot", "patch", "state")]
        assert not pushed, f"the subscriber was shown something past the entry it could not read: {pushed[:3]}"
    assert cluster.meta()["version"] == "4", "nothing was appended after it"


# ---------------------------------------------------------------------------------------------
# The append script itself, run by a real Redis as the nodes send it


def append_script() -> tuple[str, int]:
    """ClusterScripts.append, as the nodes send it: its text in the Swift source, with the claim's
    settings filled in; and how many refusals in a row make a claim."""
    source = (REPO / "Sources/ReactorServer/Cluster/ClusterScripts.swift").read_text()
    body = textwrap.dedent(re.search(r'static let append = """\n(.*?)\n\s*"""', source, re.DOTALL).group(1))
    for name in ("claimMilliseconds", "claimAfterRefusals"):
        value = re.search(rf"static let {name} = (\d+)", source).group(1)
        body = body.replace(f"\\({name})", value)
    return body, int(re.search(r"static let claimAfterRefusals = (\d+)", source).group(1))


def test_the_append_script_compares_and_a_node_refused_again_and_again_holds_the_next_append(redis):
    (script, claiming), meta, log = append_script(), "reactor:{s}:meta", "reactor:{s}:log"
    redis.command("HSET", meta, "epoch", "e1", "version", "0", "snapshot", "0")

    def append(node, expected, records, refused=0, epoch="e1"):
        group = "".join(f"{len(r)} {r}\n" for r in records)
        return redis.command("EVAL", script, 2, meta, log, expected, epoch, node, len(records), group, refused)

    assert append("a", 0, ["x", "y z"]) == ["ok", "2"]
    assert redis.command("XRANGE", log, "-", "+") == [["2-0", ["n", "a", "g", "1 x\n3 y z\n"]]]
    # Behind: nothing written. Refused fewer times in a row than a claim takes, no claim; then the
    # next append is b's.
    assert append("b", 0, ["w"], refused=claiming - 1) == ["behind", "2"]
    assert "claim" not in redis.meta("s")
    assert append("b", 0, ["w"], refused=claiming) == ["behind", "2"]
    assert redis.meta("s")["claim"] == "b"
    # a is up to date, but b holds the next append: a waits, and nothing is written.
    assert append("a", 2, ["v"]) == ["wait", "2"]
    assert redis.command("XLEN", log) == 1
    assert append("b", 2, ["w"], refused=claiming + 1) == ["ok", "3"]
    assert "claim" not in redis.meta("s"), "an append ends its node's claim"
    assert append("a", 3, ["v"], refused=1) == ["ok", "4"]
    # A claim whose node never appends lapses.
    assert append("c", 0, ["u"], refused=claiming) == ["behind", "4"]
    assert append("a", 4, ["t"]) == ["wait", "4"]
    time.sleep(0.2)
    assert append("a", 4, ["t"]) == ["ok", "5"]
    assert "claim" not in redis.meta("s")
    # Another epoch: nothing written, the epoch Redis holds answered.
    assert append("a", 5, ["s"], epoch="e0") == ["epoch", "e1"]
    assert stream_versions(redis.stream("s")) == [1, 2, 3, 4, 5]
