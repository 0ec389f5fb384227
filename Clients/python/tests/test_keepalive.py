"""Kept-alive connections, for `Client` and `AsyncClient`: reused (counted by reactord's
`reactor_http_connections_accepted_total`), shared between threads or tasks without losing or
doubling an event, replaced when the server closed them, and sent again only when that cannot
apply an event twice."""

from __future__ import annotations

import asyncio
import gc
import http.server
import json
import socket
import threading
import time

import pytest
from conftest import run, stub_http_server

from reactor_client import AsyncClient, Client, ReactorClientError, ReactorConnectionError, ReactorTimeoutError

INCREMENT = {"type": "increment", "path": "/n"}


# ---------------------------------------------------------------------------------------------
# Client


def test_calls_reuse_one_connection(server):
    client = server.client()
    before = server.accepted_connections()
    for expected in range(1, 51):
        assert client.fire(INCREMENT) == expected
    assert client.fire_batch([INCREMENT, INCREMENT]) == {"version": 52, "applied": 2}
    for _ in range(10):
        assert client.state_with_version() == (52, {"n": 52})
    assert client.health() is True
    with pytest.raises(ReactorClientError):  # an error answer leaves the connection usable
        client.fire({"type": "nope"})
    assert client.state("/n") == 52
    assert server.accepted_connections() - before == 1


def test_threads_sharing_a_client_apply_every_fire_exactly_once(server):
    threads_count, fires_each = 8, 150
    client = server.client(pool_size=threads_count)
    before = server.accepted_connections()
    start = threading.Barrier(threads_count, timeout=10)
    versions: list[list[int]] = [[] for _ in range(threads_count)]
    errors: list[BaseException] = []

    def fire_many(mine: list[int]) -> None:
        try:
            start.wait()
            for _ in range(fires_each):
                mine.append(client.fire(INCREMENT))
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=fire_many, args=(versions[i],)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(25)
    assert not any(thread.is_alive() for thread in threads), "a thread is still firing"
    assert errors == []
    total = threads_count * fires_each
    every = sorted(version for mine in versions for version in mine)
    assert every == list(range(1, total + 1))  # each fire applied once, each answer its own
    assert all(mine == sorted(mine) for mine in versions)
    assert client.state_with_version() == (total, {"n": total})
    # A thread opens a connection only when every pooled one is in use by the others.
    assert 1 <= server.accepted_connections() - before <= threads_count


def test_pool_size_zero_opens_a_connection_per_call(server):
    client = server.client(pool_size=0)
    before = server.accepted_connections()
    for _ in range(5):
        client.fire(INCREMENT)
    assert server.accepted_connections() - before == 5


def test_close_closes_the_idle_connections_and_the_client_stays_usable(server):
    before = server.accepted_connections()
    with Client(server.url, timeout=5) as client:
        assert client.fire(INCREMENT) == 1
        assert client.fire(INCREMENT) == 2
    deadline = time.monotonic() + 5  # the server notices the close asynchronously
    while server.metric("reactor_http_connections_open") > 1:  # 1: the metrics request's own
        assert time.monotonic() < deadline, "the client's connection stayed open after close()"
        time.sleep(0.02)
    assert client.fire(INCREMENT) == 3
    client.close()
    assert server.accepted_connections() - before == 2


def test_a_connection_the_server_closed_while_idle_is_replaced(reactord):
    """reactord closes a connection idle past --idle-timeout (with a 408): the next call, even a
    fire without an idempotency key, goes out on a new connection and is applied once."""
    server = reactord("--idle-timeout", "0.3")
    client = server.client()
    before = server.accepted_connections()
    assert client.fire(INCREMENT) == 1
    time.sleep(1.0)
    assert client.fire(INCREMENT) == 2
    assert client.state() == {"n": 2}
    time.sleep(1.0)
    assert client.state_with_version() == (2, {"n": 2})
    assert server.accepted_connections() - before == 3


def test_a_restarted_server_on_the_same_port(reactord):
    """The server the pooled connection went to is gone (stopped, its connections closed) and
    another listens on the same port: calls go to the new one."""
    first = reactord()
    client = Client(first.url, timeout=5)
    try:
        assert client.fire(INCREMENT) == 1
        assert first.stop() == 0
        second = reactord("--port", str(first.port))  # the last --port wins
        assert second.port == first.port
        assert client.fire(INCREMENT) == 1  # a fresh, in-memory state
        assert client.state() == {"n": 1}
    finally:
        client.close()


# ---------------------------------------------------------------------------------------------
# Sending again after a kept-alive connection broke mid-request, on a stub server that answers
# the first request of each connection and drops the connection on the second, after reading it.


class DropsTheSecondRequest(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    wbufsize = -1  # one write per answer (no Nagle delay between its head and its body)
    received: list[str] = []  # "METHOD path key", across connections

    def setup(self) -> None:
        super().setup()
        self.served = 0

    def do_GET(self) -> None:
        self.serve()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.serve()

    def serve(self) -> None:
        self.received.append(f"{self.command} {self.path} {self.headers.get('Idempotency-Key')}")
        self.served += 1
        if self.served == 2:
            self.close_connection = True  # no answer: the connection closes after this
            return
        body = json.dumps({"version": len(self.received)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("ETag", f'"{len(self.received)}"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class SyncCalls:
    def __init__(self, url: str):
        self.client = Client(url, timeout=5)

    def __call__(self, name: str, *args, **kwargs):
        return getattr(self.client, name)(*args, **kwargs)

    def close(self) -> None:
        self.client.close()


class AsyncCalls:
    """The same calls on an AsyncClient, each run to completion on one event loop."""

    def __init__(self, url: str):
        self.loop = asyncio.new_event_loop()
        self.client = AsyncClient(url, timeout=5)

    def __call__(self, name: str, *args, **kwargs):
        return self.loop.run_until_complete(asyncio.wait_for(getattr(self.client, name)(*args, **kwargs), 10))

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


@pytest.fixture(params=[SyncCalls, AsyncCalls], ids=["Client", "AsyncClient"])
def calls_to_stub(request):
    DropsTheSecondRequest.received = []
    with stub_http_server(DropsTheSecondRequest, threaded=True) as url:
        calls = request.param(url)
        try:
            yield calls, DropsTheSecondRequest.received
        finally:
            calls.close()


def test_an_idempotent_request_is_sent_again_on_a_new_connection(calls_to_stub):
    calls, received = calls_to_stub
    assert calls("state") == {"version": 1}
    assert calls("state") == {"version": 3}  # dropped on the kept-alive connection, then answered
    assert received == ["GET /state None"] * 3


def test_a_fire_that_may_have_been_applied_is_not_sent_again(calls_to_stub):
    calls, received = calls_to_stub
    calls("state")
    with pytest.raises(ReactorConnectionError):
        calls("fire", INCREMENT)
    assert received == ["GET /state None", "POST /events None"]
    assert calls("fire", INCREMENT) == 3  # the failed connection was not kept


def test_a_fire_with_an_idempotency_key_is_sent_again(calls_to_stub):
    calls, received = calls_to_stub
    calls("state")
    assert calls("fire", INCREMENT, idempotency_key="k-1") == 3
    assert received == ["GET /state None", "POST /events k-1", "POST /events k-1"]


# ---------------------------------------------------------------------------------------------
# AsyncClient


def test_async_fire_and_friends(server):
    async def main():
        async with AsyncClient(server.url, timeout=5) as client:
            assert await client.fire({"type": "set", "path": "/players", "value": [{"level": 3}]}) == 1
            assert await client.fire({"type": "increment", "path": "/players/0/level"}, idempotency_key="a") == 2
            assert await client.fire({"type": "increment", "path": "/players/0/level"}, idempotency_key="a") == 2
            assert await client.fire_batch([INCREMENT, INCREMENT]) == {"version": 4, "applied": 2}
            answer = await client.fire_batch([INCREMENT, {"type": "nope"}], mode="prune")
            assert answer["version"] == 5 and answer["applied"] == 1 and answer["rejected"][0]["index"] == 1
            assert await client.state_with_version() == (5, {"players": [{"level": 4}], "n": 3})
            assert await client.state("/players/0/level") == 4
            assert await client.health() is True
            with pytest.raises(ReactorClientError) as caught:
                await client.fire({"type": "nope"})
            assert caught.value.status == 422 and caught.value.type == "/problems/unknown-event-type"
            with pytest.raises(ReactorClientError) as caught:
                await client.state("/missing")
            assert caught.value.status == 404
            with pytest.raises(ValueError):
                await client.fire({"type": "set", "path": "/x", "value": float("inf")})

    before = server.accepted_connections()
    run(main())
    assert server.accepted_connections() - before == 1


def test_async_fires_reuse_one_connection(server):
    async def main():
        async with AsyncClient(server.url, timeout=5) as client:
            for expected in range(1, 201):
                assert await client.fire(INCREMENT) == expected

    before = server.accepted_connections()
    run(main())
    assert server.accepted_connections() - before == 1


def test_async_concurrent_fires_apply_every_fire_exactly_once(server):
    total, limit = 400, 4

    async def main():
        async with AsyncClient(server.url, timeout=5, max_connections=limit) as client:
            versions = await asyncio.gather(*(client.fire(INCREMENT) for _ in range(total)))
            assert sorted(versions) == list(range(1, total + 1))
            assert await client.state_with_version() == (total, {"n": total})

    before = server.accepted_connections()
    run(main())
    assert 1 <= server.accepted_connections() - before <= limit


def test_async_a_connection_the_server_closed_while_idle_is_replaced(reactord):
    server = reactord("--idle-timeout", "0.3")

    async def main():
        async with AsyncClient(server.url, timeout=5) as client:
            assert await client.fire(INCREMENT) == 1
            await asyncio.sleep(1.0)  # the loop reads reactord's 408 and its close
            assert await client.fire(INCREMENT) == 2
            time.sleep(1.0)  # the loop does not run: the close waits unread on the socket
            assert await client.fire(INCREMENT) == 3
            assert await client.state() == {"n": 3}

    before = server.accepted_connections()
    run(main())
    assert server.accepted_connections() - before == 3


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_async_client_used_from_two_event_loops(server):
    """Not closed before its loop ended, a client starts over in the next loop (and the connection
    left behind with the closed loop warns, as unclosed transports do)."""
    client = AsyncClient(server.url, timeout=5)
    assert asyncio.run(client.fire(INCREMENT)) == 1

    async def second():
        try:
            return await client.fire(INCREMENT)
        finally:
            await client.close()

    assert asyncio.run(second()) == 2
    gc.collect()  # the warning, here rather than in a later test


def test_async_unreachable_and_silent_servers():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def unreachable():
        client = AsyncClient(f"http://127.0.0.1:{port}", timeout=2)
        assert await client.health() is False
        with pytest.raises(ReactorConnectionError):
            await client.fire(INCREMENT)

    run(unreachable())

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()

        async def no_answer():
            async with AsyncClient(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.5) as client:
                started = time.monotonic()
                with pytest.raises(ReactorTimeoutError):
                    await client.state()
                assert time.monotonic() - started < 2

        run(no_answer())


def test_async_client_subscribes_too(server):
    async def main():
        async with AsyncClient(server.url, timeout=5) as client:
            async with client.subscribe() as sub:
                version, state = await asyncio.wait_for(anext(sub), 5)
                assert (version, state) == (0, {})
                assert await client.fire(INCREMENT) == 1
                assert await asyncio.wait_for(anext(sub), 5) == (1, {"n": 1})

    run(main())
