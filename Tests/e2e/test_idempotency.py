"""Idempotency-Key: a retry gets the first answer and applies nothing."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from conftest import REACTORD_BIN, assert_problem, curl_response, get_state, post_events, request, wait_until

INCREMENT = {"type": "increment", "path": "/n"}


def keyed(key: str, extra: dict | None = None) -> dict:
    return {"Idempotency-Key": key, **(extra or {})}


def test_retry_replays_the_first_answer(server):
    first = post_events(server, INCREMENT, headers=keyed("k-1"))
    assert first.status == 200 and first.json() == {"version": 1}
    assert first.header("Idempotent-Replayed") is None
    post_events(server, {"type": "set", "path": "/other", "value": 1})  # version 2 in between
    retry = post_events(server, INCREMENT, headers=keyed("k-1"))
    assert retry.status == 200
    assert retry.json() == {"version": 1}  # the first answer, not a new one
    assert retry.header("Idempotent-Replayed") == "true"
    assert retry.header("Content-Type") == "application/json"
    assert get_state(server) == {"n": 1, "other": 1}
    assert request(server, "GET", "/readyz").json()["version"] == 2


def test_many_retries_apply_once(server):
    for _ in range(5):
        assert post_events(server, INCREMENT, headers=keyed("same")).json() == {"version": 1}
    assert get_state(server) == {"n": 1}


def test_different_keys_apply_twice(server):
    assert post_events(server, INCREMENT, headers=keyed("a")).json() == {"version": 1}
    assert post_events(server, INCREMENT, headers=keyed("b")).json() == {"version": 2}
    assert get_state(server) == {"n": 2}


def test_same_key_different_body_is_refused(server):
    assert post_events(server, INCREMENT, headers=keyed("k")).status == 200
    answer = post_events(server, {"type": "increment", "path": "/n", "by": 5}, headers=keyed("k"))
    problem = assert_problem(answer, 422, "idempotency-key-reused")
    assert "k" in problem["detail"]
    assert answer.header("Idempotent-Replayed") is None
    assert get_state(server) == {"n": 1}


def test_same_key_different_target_is_refused(server):
    batch = [INCREMENT]
    assert post_events(server, batch, headers=keyed("k")).json() == {"version": 1, "applied": 1}
    assert_problem(post_events(server, batch, path="/events?mode=prune", headers=keyed("k")), 422, "idempotency-key-reused")
    assert get_state(server) == {"n": 1}


def test_batch_retry_is_replayed(server):
    batch = [INCREMENT, {"type": "append", "path": "/l", "value": "x"}]
    first = post_events(server, batch, headers=keyed("batch-1"))
    assert first.json() == {"version": 2, "applied": 2}
    retry = post_events(server, batch, headers=keyed("batch-1"))
    assert retry.json() == {"version": 2, "applied": 2}
    assert retry.header("Idempotent-Replayed") == "true"
    assert get_state(server) == {"n": 1, "l": ["x"]}


def test_a_rejected_request_is_replayed_as_rejected(server):
    event = {"type": "remove", "path": "/missing"}
    first = post_events(server, event, headers=keyed("r"))
    assert_problem(first, 422, "event-rejected")
    # Even once the path exists, the retry gets the first answer and is not applied.
    post_events(server, {"type": "set", "path": "/missing", "value": 1})
    retry = post_events(server, event, headers=keyed("r"))
    assert retry.header("Idempotent-Replayed") == "true"
    assert_problem(retry, 422, "event-rejected")
    assert get_state(server) == {"missing": 1}


def test_keys_are_per_token(reactord):
    server = reactord("--token", "alice:al1ce-secret:read+fire", "--token", "bob:b0b-secret:fire")
    alice = {"Authorization": "Bearer al1ce-secret"}
    bob = {"Authorization": "Bearer b0b-secret"}
    assert post_events(server, INCREMENT, headers=keyed("shared", alice)).json() == {"version": 1}
    # Bob's request with the same key is his own: applied, not a replay of Alice's, not a reuse.
    answer = post_events(server, {"type": "increment", "path": "/n", "by": 10}, headers=keyed("shared", bob))
    assert answer.status == 200 and answer.json() == {"version": 2}
    assert answer.header("Idempotent-Replayed") is None
    # And each one's retry replays their own answer.
    assert post_events(server, INCREMENT, headers=keyed("shared", alice)).json() == {"version": 1}
    assert post_events(server, {"type": "increment", "path": "/n", "by": 10}, headers=keyed("shared", bob)).json() == {"version": 2}
    assert request(server, "GET", "/state", headers=alice).json() == {"n": 11}


def test_idempotent_retry_with_curl(server):
    args = ("-H", "Content-Type: application/json", "-H", "Idempotency-Key: order-42", "--data-binary", json.dumps(INCREMENT))
    first = curl_response(f"{server.base_url}/events", *args)
    second = curl_response(f"{server.base_url}/events", *args)
    assert first.json() == second.json() == {"version": 1}
    assert first.header("Idempotent-Replayed") is None
    assert second.header("Idempotent-Replayed") == "true"
    assert get_state(server) == {"n": 1}


def test_a_request_refused_before_it_ran_does_not_use_up_its_key(server):
    """A 415 (or 400) is not remembered: the client fixes the request and retries with the same key."""
    key = {"Idempotency-Key": "fix-and-retry"}
    event = json.dumps({"type": "increment", "path": "/fixed"})
    refused = request(server, "POST", "/events", body=event, headers={**key, "Content-Type": "text/plain"})
    assert_problem(refused, 415, "unsupported-media-type")
    fixed = request(server, "POST", "/events", body=event, headers={**key, "Content-Type": "application/json"})
    assert fixed.status == 200, fixed
    assert fixed.header("Idempotent-Replayed") is None
    replay = request(server, "POST", "/events", body=event, headers={**key, "Content-Type": "application/json"})
    assert replay.status == 200 and replay.header("Idempotent-Replayed") == "true", replay
    assert get_state(server)["fixed"] == 1


def test_a_key_first_refused_keeps_the_fixed_request_s_answer_for_its_whole_window(reactord):
    """The refused first request's window ending does not end the fixed one's: a retry between the
    two is still a replay, not a second application."""
    server = reactord("--idempotency-window", "2")
    key = {"Idempotency-Key": "refused-then-fixed"}
    event = json.dumps({"type": "increment", "path": "/n"})
    assert_problem(request(server, "POST", "/events", body=event, headers={**key, "Content-Type": "text/plain"}), 415, "unsupported-media-type")
    time.sleep(1.0)
    assert request(server, "POST", "/events", body=event, headers={**key, "Content-Type": "application/json"}).json() == {"version": 1}
    time.sleep(1.3)  # past the refused request's window, within the fixed one's
    replay = request(server, "POST", "/events", body=event, headers={**key, "Content-Type": "application/json"})
    assert replay.status == 200 and replay.header("Idempotent-Replayed") == "true", replay
    assert get_state(server) == {"n": 1}


def test_a_key_longer_than_255_bytes_or_empty_is_refused(server):
    for key in ("", "k" * 256, "é" * 128):
        answer = request(server, "POST", "/events", body=json.dumps(INCREMENT), headers={"Idempotency-Key": key, "Content-Type": "application/json"})
        assert_problem(answer, 400, "invalid-parameter")
    answer = request(server, "POST", "/events", body=json.dumps(INCREMENT), headers={"Idempotency-Key": "k" * 255, "Content-Type": "application/json"})
    assert answer.status == 200, answer
    assert get_state(server) == {"n": 1}


# With a data directory, a key answered by an event is kept in the event's journal record (and in
# the snapshots that fold it in): a retry after a restart, a crash before the client heard, say,
# gets the first answer and applies nothing twice.


def test_a_retry_after_a_crash_gets_the_answer_of_the_event_that_went_in(reactord, tmp_path):
    data_dir = tmp_path / "data"
    server = reactord("--data-dir", str(data_dir))
    batch = [INCREMENT, {"type": "append", "path": "/l", "value": "x"}, {"type": "remove", "path": "/missing"}]
    assert post_events(server, INCREMENT, headers=keyed("single")).json() == {"version": 1}
    pruned = post_events(server, batch, path="/events?mode=prune", headers=keyed("batch"))
    assert pruned.status == 200
    first_batch_answer = pruned.json()
    assert first_batch_answer["version"] == 3 and first_batch_answer["applied"] == 2
    assert [rejected["index"] for rejected in first_batch_answer["rejected"]] == [2]
    assert post_events(server, INCREMENT).json() == {"version": 4}
    server.kill()

    server = reactord("--data-dir", str(data_dir))
    retry = post_events(server, INCREMENT, headers=keyed("single"))
    assert (retry.status, retry.json(), retry.header("Idempotent-Replayed")) == (200, {"version": 1}, "true")
    assert retry.header("Content-Type") == "application/json"
    batch_retry = post_events(server, batch, path="/events?mode=prune", headers=keyed("batch"))
    assert (batch_retry.status, batch_retry.json(), batch_retry.header("Idempotent-Replayed")) == (200, first_batch_answer, "true")
    # The key still belongs to the first request, and a new key applies.
    assert_problem(post_events(server, {"type": "increment", "path": "/n", "by": 5}, headers=keyed("single")), 422, "idempotency-key-reused")
    assert post_events(server, INCREMENT, headers=keyed("new")).json() == {"version": 5}
    assert get_state(server) == {"n": 4, "l": ["x"]}


def test_keys_survive_reactord_compact(reactord, tmp_path):
    data_dir = tmp_path / "data"
    server = reactord("--data-dir", str(data_dir))
    assert post_events(server, INCREMENT, headers=keyed("before-compact")).json() == {"version": 1}
    server.stop()
    compacted = subprocess.run([REACTORD_BIN, "compact", "--data-dir", str(data_dir)], capture_output=True, timeout=20)
    assert compacted.returncode == 0, compacted.stderr
    assert not list((data_dir / "journal").iterdir())
    server = reactord("--data-dir", str(data_dir))
    retry = post_events(server, INCREMENT, headers=keyed("before-compact"))
    assert (retry.json(), retry.header("Idempotent-Replayed")) == ({"version": 1}, "true")
    assert get_state(server) == {"n": 1}


def test_keys_survive_the_snapshot_that_removes_their_events_segment(reactord, tmp_path):
    data_dir = tmp_path / "data"
    flags = ("--data-dir", str(data_dir), "--snapshot-events", "10", "--segment-bytes", "4096")
    server = reactord(*flags)
    assert post_events(server, INCREMENT, headers=keyed("early")).json() == {"version": 1}
    for i in range(2, 61):
        assert post_events(server, {"type": "set", "path": f"/k{i % 5}", "value": "y" * 200}).json() == {"version": i}
    wait_until(lambda: sorted(p.name for p in (data_dir / "journal").iterdir())[0] != "00000000000000000001.log",
               message="the first segment removed by a snapshot")
    server.stop()

    server = reactord(*flags)
    retry = post_events(server, INCREMENT, headers=keyed("early"))
    assert (retry.status, retry.json(), retry.header("Idempotent-Replayed")) == (200, {"version": 1}, "true")
    assert get_state(server)["n"] == 1



@pytest.mark.parametrize("compact", [False, True])
def test_one_tokens_keys_never_push_out_anothers_and_a_restart_keeps_it_so(reactord, tmp_path, compact):
    """Each token has the whole capacity to itself, in memory, in the journal and in a snapshot:
    another token firing many keyed requests cannot make a retry of this one apply twice."""
    data_dir = tmp_path / "data"
    flags = ("--data-dir", str(data_dir), "--idempotency-keys", "5",
             "--token", "alice:al1ce-secret:read+fire", "--token", "mallory:m4llory-secret:fire")
    alice = {"Authorization": "Bearer al1ce-secret"}
    mallory = {"Authorization": "Bearer m4llory-secret"}
    server = reactord(*flags)
    assert post_events(server, INCREMENT, headers=keyed("pay-42", alice)).json() == {"version": 1}
    for index in range(12):
        assert post_events(server, {"type": "increment", "path": "/m"}, headers=keyed(f"k{index}", mallory)).status == 200
    replay = post_events(server, INCREMENT, headers=keyed("pay-42", alice))
    assert (replay.json(), replay.header("Idempotent-Replayed")) == ({"version": 1}, "true")
    server.stop()
    if compact:
        done = subprocess.run([REACTORD_BIN, "compact", "--data-dir", str(data_dir)], capture_output=True, timeout=20)
        assert done.returncode == 0, done.stderr
    server = reactord(*flags)
    replay = post_events(server, INCREMENT, headers=keyed("pay-42", alice))
    assert (replay.json(), replay.header("Idempotent-Replayed")) == ({"version": 1}, "true")
    assert request(server, "GET", "/state", headers=alice).json() == {"n": 1, "m": 12}
