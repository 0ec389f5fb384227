"""Subscriptions over WebSocket against a real reactord: the locally maintained state equals
`GET /state` after every change, selections, firing over the socket, tokens, and resuming after
the connection is cut from the test's side."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time

import pytest
from conftest import run

from reactor_client import Client, ReactorClientError, ReactorConnectionError, ReactorError


def same_json(a, b) -> bool:
    """Equal as JSON text: tells 1 from 1.0 from true, unlike ==."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


async def next_state(sub, timeout: float = 5):
    return await asyncio.wait_for(anext(sub), timeout)


def cut(sub) -> None:
    """Drops the subscription's TCP connection abruptly, as a network failure would."""
    assert sub._ws is not None, "the subscription is not connected"
    sub._ws.transport.abort()


# Every kind of event, each changing the document (so each version is sent).
EVENTS = [
    {"type": "set", "path": "/players", "value": [{"name": "Ayla", "level": 3, "tags": []}]},
    {"type": "increment", "path": "/players/0/level"},
    {"type": "append", "path": "/players/0/tags", "value": "new"},
    {"type": "set", "path": "/players/-", "value": {"name": "Bo", "level": 1.5}},
    {"type": "merge", "path": "/players/1", "value": {"level": None, "alive": True}},
    {"type": "set", "path": "/deep/er/still", "value": {"a~b/c": [1, 2, 3]}},
    {"type": "remove", "path": "/players/0/tags"},
    {"type": "patch", "ops": [{"op": "move", "from": "/deep/er", "path": "/moved"}, {"op": "copy", "from": "/players/1", "path": "/players/0/friend"}]},
    {"type": "set", "path": "/players/0", "value": "replaced"},
    {"type": "set", "path": "", "value": [0, {"x": False}, None, "é"]},
    {"type": "set", "path": "/1/x", "value": 0},
]


def test_snapshot_then_one_state_per_event_equal_to_get_state(client):
    async def main():
        async with client.subscribe() as sub:
            assert await next_state(sub) == (0, {})
            for event in EVENTS:
                fired = await asyncio.to_thread(client.fire, event)
                version, state = await next_state(sub)
                assert version == fired
                expected_version, expected = await asyncio.to_thread(client.state_with_version)
                assert (version, expected_version) == (fired, fired)
                assert same_json(state, expected), (event, state, expected)
                assert sub.version == version and sub.state is state
            assert sub.connections == 1 and sub.snapshots == 1

    run(main())


def test_yielded_states_are_not_changed_by_later_patches(client):
    async def main():
        async with client.subscribe() as sub:
            await next_state(sub)
            client.fire({"type": "set", "path": "/a", "value": {"n": 1}})
            _, first = await next_state(sub)
            client.fire({"type": "increment", "path": "/a/n"})
            _, second = await next_state(sub)
            assert first == {"a": {"n": 1}} and second == {"a": {"n": 2}}

    run(main())


def test_a_selection_follows_only_its_subtree(client):
    async def main():
        async with client.subscribe(path="/players/0") as sub:
            assert await next_state(sub) == (0, None)  # nothing there yet reads as null
            client.fire({"type": "set", "path": "/elsewhere", "value": 1})  # v1: not sent
            client.fire({"type": "set", "path": "/players", "value": [{"name": "Ayla", "level": 3}]})  # v2
            assert await next_state(sub) == (2, {"name": "Ayla", "level": 3})
            client.fire({"type": "increment", "path": "/elsewhere"})  # v3: not sent
            client.fire({"type": "increment", "path": "/players/0/level"})  # v4
            version, state = await next_state(sub)
            assert version == 4 and same_json(state, client.state("/players/0"))
            client.fire({"type": "remove", "path": "/players/0"})  # v5
            assert await next_state(sub) == (5, None)

    run(main())


def test_a_selection_with_characters_that_need_escaping(client):
    key = "a b/c~d?&#"
    pointer = "/" + key.replace("~", "~0").replace("/", "~1")

    async def main():
        client.fire({"type": "set", "path": pointer, "value": {"n": 1}})
        async with client.subscribe(path=pointer) as sub:
            assert await next_state(sub) == (1, {"n": 1})
            client.fire({"type": "increment", "path": pointer + "/n"})
            assert await next_state(sub) == (2, {"n": 2})

    run(main())


def test_state_mode_yields_whole_values(client):
    async def main():
        async with client.subscribe(path="/n", mode="state") as sub:
            assert await next_state(sub) == (0, None)
            for expected in (1, 2, 3):
                client.fire({"type": "increment", "path": "/n"})
                assert await next_state(sub) == (expected, expected)

    run(main())


def test_bad_subscription_parameters_are_refused_before_connecting(client):
    with pytest.raises(ValueError):
        client.subscribe(mode="diff")
    with pytest.raises(ValueError):
        client.subscribe(path="players")


# ---------------------------------------------------------------------------------------------
# Firing over the socket


def test_fire_over_the_socket_acks_after_its_own_patch(client):
    async def main():
        async with client.subscribe() as sub:
            await next_state(sub)
            version = await sub.fire({"type": "increment", "path": "/n"})
            assert version == 1
            # The patch arrives before the ack: by now the local state includes the event.
            assert sub.version == 1 and sub.state == {"n": 1}
            assert await next_state(sub) == (1, {"n": 1})
            versions = await asyncio.gather(*(sub.fire({"type": "append", "path": "/l", "value": i}) for i in range(5)))
            assert sorted(versions) == [2, 3, 4, 5, 6]
            assert sub.version == 6 and same_json(sub.state, client.state())

    run(main())


def test_fire_over_the_socket_raises_the_problem_and_the_connection_stays(client):
    async def main():
        async with client.subscribe() as sub:
            await next_state(sub)
            with pytest.raises(ReactorClientError) as caught:
                await sub.fire({"type": "explode"})
            error = caught.value
            assert error.status == 422 and error.type == "/problems/unknown-event-type"
            assert "set" in error.problem["knownTypes"] and str(error) == error.problem["detail"]
            with pytest.raises(ReactorError) as caught:
                await sub.fire({"type": "remove", "path": "/missing"})
            assert caught.value.type == "/problems/event-rejected"
            with pytest.raises(ReactorError) as caught:
                await sub.fire({"type": "set", "path": "/x"})
            assert caught.value.type == "/problems/invalid-event"
            assert await sub.fire({"type": "set", "path": "/x", "value": 1}) == 1
            assert sub.connections == 1

    run(main())


# ---------------------------------------------------------------------------------------------
# Tokens


def test_subscribing_with_tokens(reactord):
    server = reactord("--token", "reader:r3ad-s3cret:read", "--token", "both:b0th-s3cret:read+fire")

    async def main():
        for token, status in ((None, 401), ("wrong", 401)):
            with pytest.raises(ReactorClientError) as caught:
                async with server.client(token).subscribe():
                    pass
            assert caught.value.status == status and caught.value.type == "/problems/unauthorized"
        async with server.client("r3ad-s3cret").subscribe() as sub:
            assert await next_state(sub) == (0, {})
            with pytest.raises(ReactorClientError) as caught:
                await sub.fire({"type": "increment", "path": "/n"})
            assert caught.value.status == 403 and caught.value.type == "/problems/forbidden"
            await asyncio.to_thread(server.client("b0th-s3cret").fire, {"type": "increment", "path": "/n"})
            assert await next_state(sub) == (1, {"n": 1})  # the connection stayed open
        async with server.client("b0th-s3cret").subscribe() as sub:
            await next_state(sub)
            assert await sub.fire({"type": "increment", "path": "/n"}) == 2

    run(main())


def test_subscribing_to_an_unreachable_server_fails_fast():
    from conftest import Client

    async def main():
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with pytest.raises(ReactorConnectionError):
            async with Client(f"http://127.0.0.1:{port}", timeout=2).subscribe():
                pass

    run(main())


# ---------------------------------------------------------------------------------------------
# Resuming


def test_resume_after_cut_connections_misses_no_version(client):
    """Events are fired from another thread all along, and also while the connection is down;
    the connection is cut five times. Every version must be seen exactly once, in order, without
    a new snapshot, and the final state must be GET /state's."""
    background = 150
    cuts = 5
    per_cut = 3
    total = background + cuts * per_cut

    def fire_in_background():
        other = client.__class__(client.url, timeout=5)
        for _ in range(background):
            other.fire({"type": "increment", "path": "/n"})
            time.sleep(0.003)

    async def main():
        async with client.subscribe(backoff_max=0.3) as sub:
            done_cuts = 0

            async def cutter():
                nonlocal done_cuts
                while done_cuts < cuts:
                    await asyncio.sleep(0.15)
                    if sub._ws is not None:
                        cut(sub)
                        # The event loop is blocked here, so the client cannot reconnect before
                        # these are applied: it must get them by resuming.
                        for _ in range(per_cut):
                            client.fire({"type": "increment", "path": "/n"})
                        done_cuts += 1

            seen = [(await next_state(sub))[0]]
            thread = threading.Thread(target=fire_in_background)
            thread.start()
            cutting = asyncio.create_task(cutter())
            try:
                while seen[-1] < total:
                    version, state = await next_state(sub)
                    seen.append(version)
                    assert state == {"n": version}
                await cutting
            finally:
                cutting.cancel()
                await asyncio.to_thread(thread.join, 10)
            assert done_cuts == cuts
            assert seen == list(range(total + 1)), "a version was skipped or repeated"
            assert sub.connections == 1 + cuts and sub.snapshots == 1
            assert client.state_with_version() == (total, {"n": total}) == (sub.version, sub.state)

    run(main(), timeout=25)


def test_resume_a_selection_after_a_cut(client):
    async def main():
        client.fire({"type": "set", "path": "/sel", "value": {"n": 0}})
        async with client.subscribe(path="/sel") as sub:
            assert await next_state(sub) == (1, {"n": 0})
            cut(sub)
            client.fire({"type": "increment", "path": "/sel/n"})
            client.fire({"type": "set", "path": "/other", "value": 1})
            client.fire({"type": "set", "path": "/sel/added", "value": [1]})
            version, state = await next_state(sub)  # one replace of the whole selection
            assert version == 4 and same_json(state, client.state("/sel"))
            assert sub.connections == 2 and sub.snapshots == 1
            client.fire({"type": "increment", "path": "/sel/n"})
            assert await next_state(sub) == (5, {"n": 2, "added": [1]})

    run(main())


def test_a_resume_the_server_cannot_serve_gets_a_fresh_snapshot(reactord):
    server = reactord("--resume-window", "2")
    client = server.client()

    async def main():
        async with client.subscribe() as sub:
            await next_state(sub)
            client.fire({"type": "set", "path": "/log", "value": []})
            assert await next_state(sub) == (1, {"log": []})
            cut(sub)
            for i in range(6):  # more than the window while we are away
                client.fire({"type": "append", "path": "/log", "value": i})
            version, state = await next_state(sub)
            assert sub.snapshots == 2 and sub.connections == 2
            assert (version, state) == client.state_with_version() == (7, {"log": [0, 1, 2, 3, 4, 5]})
            client.fire({"type": "append", "path": "/log", "value": 6})
            assert await next_state(sub) == (8, {"log": [0, 1, 2, 3, 4, 5, 6]})

    run(main())


def test_a_server_that_started_over_at_the_same_version_sends_a_snapshot(reactord, tcp_proxy):
    """Two servers in memory, each at version 5 of a history of its own: resuming with since=5
    alone would take the second for the first (nothing to send, another state). The subscription
    sends the history its snapshot named, and gets the second server's snapshot."""
    first, second = reactord(), reactord()
    one, two = first.client(), second.client()
    for i in range(5):
        one.fire({"type": "append", "path": "/old", "value": i})
        two.fire({"type": "set", "path": f"/new{i}", "value": i})
    proxy = tcp_proxy(first.port)
    through = Client(proxy.url, timeout=5)

    async def main():
        async with through.subscribe() as sub:
            assert await next_state(sub) == (5, {"old": [0, 1, 2, 3, 4]})
            history = sub.history
            assert isinstance(history, str) and history
            proxy.upstream_port = second.port
            assert first.stop() == 0
            assert await next_state(sub, timeout=10) == two.state_with_version()
            assert sub.snapshots == 2 and sub.history != history

    try:
        run(main())
    finally:
        through.close()


def test_a_drop_before_the_ack_fails_that_fire_and_later_fires_work():
    """Against a stub server (websockets' own) that drops the connection when it gets the first
    fire, without answering: that fire must fail (it may or may not have been applied), and the
    client must reconnect with `since` and fire again. A stub, because doing this to reactord
    kills it (see test_a_subscriber_closing_right_after_a_fire_does_not_kill_reactord)."""
    from websockets.asyncio.server import serve

    from conftest import Client

    requests = []

    async def handler(ws):
        requests.append(ws.request.path)
        await ws.send(json.dumps({"type": "snapshot", "version": 3, "state": {"n": 3}}))
        async for raw in ws:
            message = json.loads(raw)
            if len(requests) == 1:
                ws.transport.abort()  # no patch, no ack
                return
            await ws.send(json.dumps({"type": "patch", "version": 4, "ops": [{"op": "replace", "path": "/n", "value": 4}]}))
            await ws.send(json.dumps({"type": "ack", "id": message["id"], "version": 4}))

    async def main():
        async with serve(handler, "127.0.0.1", 0) as stub:
            port = stub.sockets[0].getsockname()[1]
            async with Client(f"http://127.0.0.1:{port}", timeout=5).subscribe() as sub:
                assert await next_state(sub) == (3, {"n": 3})
                with pytest.raises(ReactorConnectionError) as caught:
                    await sub.fire({"type": "increment", "path": "/n"})
                assert "may or may not have been applied" in str(caught.value)
                assert await sub.fire({"type": "increment", "path": "/n"}) == 4
                assert (sub.version, sub.state, sub.connections) == (4, {"n": 4}, 2)
        assert requests == ["/subscribe?mode=patch", "/subscribe?mode=patch&since=3"]

    run(main())


def test_a_subscriber_closing_right_after_a_fire_does_not_kill_reactord(tmp_path):
    """The subscriber sends a fire and closes its socket at once: reactord writes the patch (the
    peer answers with RST) and then the ack, a write to a reset connection that must fail with
    EPIPE rather than kill the process with SIGPIPE."""
    from conftest import Reactord

    server = Reactord([], tmp_path)
    client = server.client()

    async def main():
        async with client.subscribe(reconnect_attempts=2, backoff_initial=0.05) as sub:
            await next_state(sub)
            ws = sub._ws
            await ws.send(json.dumps({"type": "fire", "id": "x", "event": {"type": "increment", "path": "/n"}}))
            ws.transport.abort()
            await asyncio.sleep(0.2)

    try:
        for attempt in range(1, 6):  # the crash depends on timing: give it several chances
            try:
                run(main())
            except ReactorConnectionError:
                pass  # the subscription could not reconnect: the server is gone, as asserted below
            assert server.process.poll() is None, f"reactord died with status {server.process.returncode} at attempt {attempt}"
        assert client.state_with_version() == (5, {"n": 5})
    finally:
        server.stop()


def test_the_iteration_fails_once_reconnection_gives_up(reactord):
    server = reactord()
    client = server.client()

    async def main():
        async with client.subscribe(reconnect_attempts=3, backoff_initial=0.05, backoff_max=0.1) as sub:
            assert await next_state(sub) == (0, {})
            assert await asyncio.to_thread(server.stop) == 0  # every subscriber gets 1001
            with pytest.raises(ReactorConnectionError) as caught:
                await next_state(sub)
            assert "3 attempts" in str(caught.value)
            with pytest.raises(ReactorConnectionError):
                await sub.fire({"type": "increment", "path": "/n"})

    run(main())


def test_closing_ends_the_iteration(client):
    async def main():
        sub = client.subscribe()
        async with sub:
            await next_state(sub)
        seen = [item async for item in sub]
        assert seen == []
        with pytest.raises(ReactorConnectionError):
            await sub.fire({"type": "increment", "path": "/n"})

    run(main())


def test_a_patch_that_does_not_apply_makes_the_client_start_over_from_a_snapshot(client):
    async def main():
        async with client.subscribe() as sub:
            await next_state(sub)
            client.fire({"type": "set", "path": "/n", "value": 1})
            assert await next_state(sub) == (1, {"n": 1})
            sub.state = {}  # diverge on purpose: the next patch removes /n, which is not there
            client.fire({"type": "remove", "path": "/n"})
            assert await next_state(sub) == (2, {})
            assert sub.snapshots == 2 and sub.connections == 2
            client.fire({"type": "set", "path": "/m", "value": 3})
            assert await next_state(sub) == (3, {"m": 3})

    run(main())


def test_a_fire_waiting_for_a_reconnection_fails_when_the_subscription_gives_up(reactord):
    server = reactord()
    client = server.client(timeout=15)

    async def main():
        async with client.subscribe(reconnect_attempts=3, backoff_initial=0.2, backoff_max=0.4) as sub:
            await next_state(sub)
            assert await asyncio.to_thread(server.stop) == 0
            while sub._connected.is_set():  # until the reader has seen the close
                await asyncio.sleep(0.01)
            started = time.monotonic()
            with pytest.raises(ReactorConnectionError) as caught:
                await sub.fire({"type": "increment", "path": "/n"})  # fire_timeout is 15 s
            assert not isinstance(caught.value, TimeoutError), caught.value
            assert time.monotonic() - started < 5
            assert "3 attempts" in str(caught.value)

    run(main())


# ---------------------------------------------------------------------------------------------
# Refusals, close codes, closing, compression


def test_a_reconnection_refused_by_the_connection_rate_limit_waits_and_goes_on(reactord, caplog):
    """reactord answers connections past --max-connection-rate with 429 and Retry-After (at least
    1 s): a reconnection that meets one waits that long and tries again, rather than ending the
    subscription while the limit passes within a second."""
    server = reactord("--max-connection-rate", "1")
    client = server.client()
    client.fire({"type": "set", "path": "/n", "value": 0})  # its kept-alive connection is never limited

    def use_up_the_connection_rate() -> None:
        for _ in range(10):
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as probe:
                probe.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
                if probe.recv(1024).startswith(b"HTTP/1.1 429"):
                    return
        raise AssertionError("the connection rate limit never answered 429")

    def refusals() -> int:
        return sum("refused (429 /problems/rate-limited)" in record.getMessage() for record in caplog.records)

    async def main():
        caplog.set_level(logging.INFO, logger="reactor_client")
        async with client.subscribe(backoff_initial=0.01, backoff_max=0.05, reconnect_attempts=5) as sub:
            assert await next_state(sub) == (1, {"n": 0})
            # The limiter refills continuously: a reconnection may rarely find a new token in the
            # few milliseconds after the rate was used up. Then it is done again.
            for cuts in range(1, 4):
                await asyncio.to_thread(use_up_the_connection_rate)
                cut(sub)
                dropped = time.monotonic()
                version = await asyncio.to_thread(client.fire, {"type": "increment", "path": "/n"})
                assert await next_state(sub, timeout=10) == (version, {"n": cuts})
                if refusals():
                    assert time.monotonic() - dropped >= 0.95, "it waited for the Retry-After"
                    break
            assert refusals() >= 1, caplog.text
            assert sub.connections == 1 + cuts

    run(main())


def refusing_stub(refusals: list):
    """A websockets stub of reactord whose first connection serves a snapshot and is then cut, and
    whose next handshakes are refused with `refusals` in turn, `(status, headers, problem)` each;
    later ones are served. Yields the times of the handshakes, and the stub's port."""
    from websockets.asyncio.server import serve
    from websockets.datastructures import Headers
    from websockets.http11 import Response

    handshakes: list[float] = []

    def process_request(connection, request):
        handshakes.append(time.monotonic())
        if 1 < len(handshakes) <= 1 + len(refusals):
            status, headers, problem = refusals[len(handshakes) - 2]
            body = json.dumps(problem).encode()
            head = Headers({"Content-Type": "application/problem+json", "Content-Length": str(len(body)), **headers})
            return Response(status, "Refused", head, body)
        return None

    async def handler(ws):
        await ws.send(json.dumps({"type": "snapshot", "version": len(handshakes), "state": {"n": len(handshakes)}}))
        if len(handshakes) == 1:
            await asyncio.sleep(0.05)
            ws.transport.abort()
            return
        await ws.wait_closed()

    return handshakes, serve(handler, "127.0.0.1", 0, process_request=process_request)


@pytest.mark.parametrize(
    "status, headers, problem, waits",
    [
        (429, {"Retry-After": "1"}, {"type": "/problems/rate-limited", "status": 429, "retryAfter": 1}, 1.0),
        (429, {"Retry-After": "1"}, {"type": "/problems/rate-limited", "status": 429}, 1.0),
        (408, {}, {"type": "/problems/request-timeout", "status": 408}, 0),
        (503, {}, {"type": "/problems/too-many-connections", "status": 503}, 0),
    ],
    ids=["429-retryAfter", "429-header", "408", "503"],
)
def test_a_reconnection_refused_with_a_passing_refusal_is_retried_after_its_retry_after(status, headers, problem, waits):
    from conftest import Client

    async def main():
        handshakes, stub = refusing_stub([(status, headers, problem)])
        async with stub as running:
            port = running.sockets[0].getsockname()[1]
            async with Client(f"http://127.0.0.1:{port}", timeout=5).subscribe(backoff_initial=0.01, backoff_max=0.02) as sub:
                assert await next_state(sub) == (1, {"n": 1})
                assert await next_state(sub, timeout=10) == (3, {"n": 3})
                assert len(handshakes) == 3 and sub.connections == 2
                waited = handshakes[2] - handshakes[1]
                assert waits <= waited < waits + 1, f"waited {waited:.2f} s after a {status}"

    run(main())


def test_a_reconnection_refused_for_good_ends_the_subscription_with_the_problem():
    from conftest import Client

    async def main():
        handshakes, stub = refusing_stub([(403, {}, {"type": "/problems/forbidden", "status": 403, "detail": "revoked"})])
        async with stub as running:
            port = running.sockets[0].getsockname()[1]
            async with Client(f"http://127.0.0.1:{port}", timeout=5).subscribe(backoff_initial=0.01) as sub:
                assert await next_state(sub) == (1, {"n": 1})
                with pytest.raises(ReactorClientError) as caught:
                    await next_state(sub)
                assert caught.value.status == 403 and str(caught.value) == "revoked"
                assert len(handshakes) == 2

    run(main())


def test_a_fire_larger_than_max_message_bytes_raises_413_and_was_not_applied(reactord):
    """reactord closes with 1009 at a message over its --max-message-bytes, without reading it:
    the fire fails for certain, as POST /events would with 413, not as "may have been applied"."""
    server = reactord("--max-message-bytes", "4096")
    client = server.client()

    async def main():
        async with client.subscribe(backoff_initial=0.01) as sub:
            await next_state(sub)
            with pytest.raises(ReactorClientError) as caught:
                await sub.fire({"type": "set", "path": "/big", "value": "x" * 5000})
            error = caught.value
            assert error.status == 413 and error.type == "/problems/body-too-large"
            assert "the event was not applied" in str(error) and "1009" in str(error)
            assert client.state_with_version() == (0, {})
            assert await sub.fire({"type": "set", "path": "/small", "value": "x" * 3000}) == 1
            assert sub.connections == 2

    run(main())


def test_closing_over_a_silent_network_waits_the_client_timeout(server, tcp_proxy):
    """Closing sends a close frame and waits for the server's: over a network that went silent
    none comes, and the wait is the client's timeout (websockets' own default is 10 s)."""
    from conftest import Client

    proxy = tcp_proxy(server.port)

    async def main():
        sub = Client(proxy.url, timeout=0.5).subscribe()
        await sub.open()
        await next_state(sub)
        proxy.freeze()
        started = time.monotonic()
        await sub.close()
        assert time.monotonic() - started < 3

    run(main())


def test_the_subscription_agrees_to_permessage_deflate(client):
    async def main():
        async with client.subscribe() as sub:
            assert [extension.name for extension in sub._ws.protocol.extensions] == ["permessage-deflate"]
            await next_state(sub)
            client.fire({"type": "set", "path": "/text", "value": "compressible " * 1000})
            version, state = await next_state(sub)
            assert (version, state) == client.state_with_version()

    run(main())
