"""Fan-out: 1,000 concurrent WebSocket subscribers (asyncio + websockets, one process) all see every
version, in order."""

from __future__ import annotations

import asyncio
import json
import time

from websockets.asyncio.client import connect

from conftest import get_state, post_events
from subscriptions import apply_patch, assert_same_json, without_history, ws_url

SUBSCRIBERS = 1000
EVENTS = 20


async def open_all(url: str, count: int, parallel: int = 100):
    gate = asyncio.Semaphore(parallel)

    async def one():
        async with gate:
            ws = await connect(url, max_size=None, ping_interval=None, open_timeout=15, close_timeout=2)
            snapshot = json.loads(await asyncio.wait_for(ws.recv(), 10))
            return ws, snapshot

    return await asyncio.gather(*(one() for _ in range(count)))


async def read_until(ws, snapshot: dict, last: int):
    versions, state = [], snapshot["state"]
    while not versions or versions[-1] < last:
        message = json.loads(await asyncio.wait_for(ws.recv(), 15))
        assert message["type"] == "patch", message
        versions.append(message["version"])
        state = apply_patch(state, message["ops"])
    return versions, state


def test_a_thousand_subscribers_see_every_version_in_order(server):
    started = time.monotonic()

    async def main():
        url = ws_url(server)
        subscribers = await open_all(url, SUBSCRIBERS)
        try:
            assert all(without_history(snapshot) == {"type": "snapshot", "version": 0, "state": {}} for _, snapshot in subscribers)
            readers = [asyncio.create_task(read_until(ws, snapshot, EVENTS)) for ws, snapshot in subscribers]
            for i in range(EVENTS):
                event = {"type": "increment", "path": "/n"} if i % 2 else {"type": "append", "path": "/log", "value": {"i": i}}
                answer = await asyncio.to_thread(post_events, server, event)
                assert answer.json()["version"] == i + 1
            results = await asyncio.wait_for(asyncio.gather(*readers), 25)
        finally:
            await asyncio.gather(*(ws.close() for ws, _ in subscribers), return_exceptions=True)
        return results

    results = asyncio.run(main())
    expected = get_state(server)
    for versions, state in results:
        assert versions == list(range(1, EVENTS + 1))
        assert_same_json(state, expected)
    assert time.monotonic() - started < 30
