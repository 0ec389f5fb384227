"""The synchronous client against a real reactord: firing, batches, reading, idempotency, health."""

from __future__ import annotations

import json
import socket

import pytest

from conftest import answering_handler, stub_http_server
from reactor_client import Client, ReactorClientError, ReactorConnectionError, ReactorError, ReactorTimeoutError


def same_json(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_fire_returns_each_version_and_state_follows(client):
    assert client.fire({"type": "set", "path": "/players", "value": [{"name": "Ayla", "level": 3}]}) == 1
    assert client.fire({"type": "increment", "path": "/players/0/level"}) == 2
    assert client.fire({"type": "increment", "path": "/score", "by": 2.5}) == 3
    assert same_json(client.state(), {"players": [{"name": "Ayla", "level": 4}], "score": 2.5})


def test_state_with_version_pairs_the_state_with_its_etag(client):
    assert client.state_with_version() == (0, {})
    client.fire({"type": "set", "path": "/a", "value": 1})
    client.fire({"type": "set", "path": "/b", "value": [True, None]})
    version, state = client.state_with_version()
    assert version == 2 and same_json(state, {"a": 1, "b": [True, None]})
    assert client.state_with_version("/b") == (2, [True, None])


def test_state_at_a_path_including_characters_that_need_escaping(client):
    awkward = "a b/c~d?e&f#g%h=é"
    client.fire({"type": "set", "path": "", "value": {awkward: {"list": [10, 20]}, "other": 1}})
    pointer = "/" + awkward.replace("~", "~0").replace("/", "~1")
    assert client.state(pointer) == {"list": [10, 20]}
    assert client.state(pointer + "/list/1") == 20
    assert client.state("") == {awkward: {"list": [10, 20]}, "other": 1}
    with pytest.raises(ValueError):
        client.state("no-leading-slash")


def test_fire_batch_strict_applies_all_with_consecutive_versions(client):
    answer = client.fire_batch(
        [
            {"type": "set", "path": "/log", "value": []},
            {"type": "append", "path": "/log", "value": "a"},
            {"type": "append", "path": "/log", "value": "b"},
        ]
    )
    assert answer == {"version": 3, "applied": 3}
    assert client.state("/log") == ["a", "b"]


def test_fire_batch_strict_is_all_or_nothing(client):
    client.fire({"type": "set", "path": "/n", "value": 1})
    with pytest.raises(ReactorClientError) as caught:
        client.fire_batch([{"type": "increment", "path": "/n"}, {"type": "remove", "path": "/missing"}])
    assert caught.value.status == 422 and caught.value.type == "/problems/event-rejected"
    assert caught.value.problem["index"] == 1
    assert client.state_with_version() == (1, {"n": 1})


def test_fire_batch_prune_applies_the_accepted_and_reports_the_rejected(client):
    answer = client.fire_batch(
        [
            {"type": "increment", "path": "/n"},
            {"type": "remove", "path": "/missing"},
            {"type": "nope"},
            {"type": "increment", "path": "/n", "by": 10},
        ],
        mode="prune",
    )
    assert answer["version"] == 2 and answer["applied"] == 2
    assert [entry["index"] for entry in answer["rejected"]] == [1, 2]
    assert answer["rejected"][0]["problem"]["type"] == "/problems/event-rejected"
    assert answer["rejected"][1]["problem"]["type"] == "/problems/unknown-event-type"
    assert client.state() == {"n": 11}


def test_fire_batch_refuses_an_unknown_mode_before_sending(client):
    with pytest.raises(ValueError):
        client.fire_batch([{"type": "increment", "path": "/n"}], mode="lenient")
    assert client.state_with_version() == (0, {})


def test_idempotency_key_replays_instead_of_applying_twice(client):
    event = {"type": "increment", "path": "/n"}
    assert client.fire(event, idempotency_key="k-1") == 1
    assert client.fire(event, idempotency_key="k-1") == 1  # the first answer again
    assert client.fire(event, idempotency_key="k-2") == 2
    assert client.state() == {"n": 2}
    batch = [event, event]
    assert client.fire_batch(batch, idempotency_key="k-3") == {"version": 4, "applied": 2}
    assert client.fire_batch(batch, idempotency_key="k-3") == {"version": 4, "applied": 2}
    assert client.state() == {"n": 4}


def test_idempotency_key_reused_for_another_request_is_refused(client):
    client.fire({"type": "increment", "path": "/n"}, idempotency_key="same")
    with pytest.raises(ReactorClientError) as caught:
        client.fire({"type": "increment", "path": "/n", "by": 5}, idempotency_key="same")
    assert caught.value.status == 422 and caught.value.type == "/problems/idempotency-key-reused"
    assert client.state() == {"n": 1}


def test_health(client):
    assert client.health() is True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_server_raises_a_connection_error_and_is_not_healthy():
    client = Client(f"http://127.0.0.1:{free_port()}", timeout=2)
    assert client.health() is False
    with pytest.raises(ReactorConnectionError) as caught:
        client.fire({"type": "increment", "path": "/n"})
    assert isinstance(caught.value, ConnectionError) and not isinstance(caught.value, ReactorError)
    assert "127.0.0.1" in str(caught.value)
    with pytest.raises(ConnectionError):
        client.state()


def test_a_server_that_never_answers_times_out():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        client = Client(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.5)
        with pytest.raises(ReactorTimeoutError) as caught:
            client.state()
        assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, ConnectionError)


def test_a_url_prefix_is_kept_in_front_of_every_path():
    """Behind a reverse proxy reactord may live under a prefix; a stub server records the targets."""
    seen: list[str] = []
    handler = answering_handler(200, b'{"ok":true}', {"Content-Type": "application/json", "ETag": '"7"'}, seen=seen)
    with stub_http_server(handler) as url:
        client = Client(f"{url}/reactor/", timeout=2)
        assert client.state_with_version("/a b") == (7, {"ok": True})
        assert seen == ["/reactor/state?path=/a%20b"]


def test_a_bad_url_is_refused():
    with pytest.raises(ValueError):
        Client("ftp://127.0.0.1:7070")
