#!/usr/bin/env python3
"""Fan-out delay across a reactord cluster, for scripts/bench-cluster.sh.

One WebSocket subscriber on node A and one on node B (`/subscribe?path=P`, patches); events
`{"type":"set","path":P,"value":i}` POSTed to node A at a fixed rate over a few keep-alive
connections. For each event, the delay from the moment its POST was written to the socket to the
moment each subscriber received the patch carrying value i (one process, one monotonic clock).

Prints one line, `RESULT key=value ...` (delays in ms), plus `WARNING ...` lines when something was
off (an event acknowledged that a subscriber never saw, a non-2xx answer, sends that fell behind
the schedule). Bounded in time: everything is given up after --seconds + --drain + 20 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from websockets.asyncio.client import connect


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-fraction * len(ordered) // 1))))
    return ordered[rank - 1]


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1000:.3f}"


class Subscriber:
    def __init__(self, name: str, url: str):
        self.name = name
        self.url = url
        self.arrivals: dict[int, float] = {}
        self.snapshots = 0
        self.other = 0
        self.closed: str | None = None

    async def run(self, ws) -> None:
        try:
            async for message in ws:
                now = time.perf_counter()
                data = json.loads(message)
                kind = data.get("type")
                if kind == "snapshot":
                    self.snapshots += 1  # the first one, or a slow consumer's conflation
                    continue
                if kind != "patch":
                    self.other += 1
                    continue
                for op in data.get("ops", []):
                    value = op.get("value")
                    if isinstance(value, int) and not isinstance(value, bool):
                        self.arrivals.setdefault(value, now)
        except Exception as error:  # noqa: BLE001 - a closed socket ends the measurement for it
            self.closed = repr(error)


class Connection:
    """One keep-alive HTTP/1.1 connection; `post` answers (status, body)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int):
        self.reader, self.writer = reader, writer
        self.head = f"POST /events HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n".encode()

    async def post(self, body: bytes, sent: list[float], index: int) -> tuple[int, bytes]:
        request = self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body
        sent[index] = time.perf_counter()
        self.writer.write(request)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        return status, await self.reader.readexactly(length)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--a-port", type=int, required=True, help="node A: events are POSTed here, one subscriber")
    parser.add_argument("--b-port", type=int, required=True, help="node B: one subscriber")
    parser.add_argument("--rate", type=float, default=500, help="events per second")
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections to node A")
    parser.add_argument("--path", default="/fanout", help="the JSON Pointer the events set")
    parser.add_argument("--drain", type=float, default=5, help="seconds to wait for the last patches")
    args = parser.parse_args()

    count = max(1, int(args.rate * args.seconds))
    subscribers = [Subscriber("A", f"ws://{args.host}:{args.a_port}/subscribe?path={args.path}"),
                   Subscriber("B", f"ws://{args.host}:{args.b_port}/subscribe?path={args.path}")]
    sockets = []
    for subscriber in subscribers:
        ws = await connect(subscriber.url, max_size=None, ping_interval=None, open_timeout=5, close_timeout=2)
        sockets.append(ws)
    # The snapshot first: the subscription is live before the first event goes out.
    for ws, subscriber in zip(sockets, subscribers):
        first = json.loads(await asyncio.wait_for(ws.recv(), 5))
        assert first.get("type") == "snapshot", first
        subscriber.snapshots += 1
    readers = [asyncio.create_task(s.run(ws)) for s, ws in zip(subscribers, sockets)]

    pool: asyncio.Queue = asyncio.Queue()
    for _ in range(args.connections):
        reader, writer = await asyncio.open_connection(args.host, args.a_port)
        pool.put_nowait(Connection(reader, writer, args.host, args.a_port))

    sent = [0.0] * count
    answered = [0.0] * count
    statuses = [0] * count

    waited = 0

    async def fire(index: int) -> None:
        nonlocal waited
        if pool.empty():
            waited += 1  # every connection busy: this POST goes out late
        connection = await pool.get()
        body = json.dumps({"type": "set", "path": args.path, "value": index}).encode()
        try:
            status, _ = await connection.post(body, sent, index)
            answered[index] = time.perf_counter()
            statuses[index] = status
        finally:
            pool.put_nowait(connection)

    tasks = []
    start = time.perf_counter() + 0.05
    for index in range(count):
        target = start + index / args.rate
        delay = target - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(fire(index)))
    done, pending = await asyncio.wait(tasks, timeout=args.drain + 10)
    for task in pending:
        task.cancel()
    errors = [task.exception() for task in done if not task.cancelled() and task.exception()]

    acked = [i for i in range(count) if 200 <= statuses[i] < 300]
    # How late the POSTs went out after their slots: the client's own jitter (its event loop is busy
    # or not scheduled), which delays the receive timestamps alike.
    send_lag = [sent[i] - (start + i / args.rate) for i in range(count) if sent[i]]
    deadline = time.perf_counter() + args.drain
    while time.perf_counter() < deadline and any(
            not all(i in s.arrivals for i in acked) for s in subscribers if s.closed is None):
        await asyncio.sleep(0.02)
    for ws in sockets:
        await ws.close()
    for task in readers:
        task.cancel()

    fields = {"events": count, "acked": len(acked), "non2xx": sum(1 for s in statuses if s and not 200 <= s < 300),
              "unanswered": sum(1 for s in statuses if not s), "waited_for_connection": waited,
              "send_lag_p50_ms": ms(percentile(send_lag, 0.50)), "send_lag_p99_ms": ms(percentile(send_lag, 0.99)),
              "achieved_rate": f"{count / max(1e-9, max(sent) - start):.1f}"}
    fields["ack_p50_ms"] = ms(percentile([answered[i] - sent[i] for i in acked], 0.50))
    fields["ack_p99_ms"] = ms(percentile([answered[i] - sent[i] for i in acked], 0.99))
    delays = {}
    for subscriber in subscribers:
        values = [subscriber.arrivals[i] - sent[i] for i in acked if i in subscriber.arrivals]
        delays[subscriber.name] = values
        key = "a" + subscriber.name.lower()
        fields[f"{key}_p50_ms"] = ms(percentile(values, 0.50))
        fields[f"{key}_p99_ms"] = ms(percentile(values, 0.99))
        fields[f"{key}_max_ms"] = ms(max(values) if values else None)
        fields[f"{key}_missing"] = len(acked) - len(values)
        fields[f"{key}_snapshots"] = subscriber.snapshots - 1
        if subscriber.closed:
            print(f"WARNING subscriber on node {subscriber.name} ended early: {subscriber.closed}")
    for name, value in (("non-2xx answers", fields["non2xx"]), ("unanswered POSTs", fields["unanswered"]),
                        ("acknowledged events node A's subscriber never saw", fields["aa_missing"]),
                        ("acknowledged events node B's subscriber never saw", fields["ab_missing"])):
        if value:
            print(f"WARNING {value} {name}")
    if waited > count // 100:
        print(f"WARNING {waited} of {count} POSTs waited for one of the {args.connections} connections "
              f"(every one busy): the rate was not held")
    if errors:
        print(f"WARNING {len(errors)} POSTs failed: {errors[0]!r}")
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
