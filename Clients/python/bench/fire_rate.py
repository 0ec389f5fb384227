"""Fires per second from one Python loop against a local reactord: the client before kept-alive
connections (loaded from git) against the current `Client` and `AsyncClient`, in the same run.

    python3 Clients/python/bench/fire_rate.py [--reactord PATH] [--runs 3] [--fires 5000] [--before REV]

Starts reactord with its default settings (in memory) on 127.0.0.1 with an ephemeral port, then
for each run times `--fires` sequential `fire({"type": "increment", ...})` calls with each client in
turn (interleaved, so that a slower moment of the machine hits all of them), and prints every
run's fires/s, the medians, and the connections reactord accepted for each client. A last line
fires from a bare socket with no client code at all: the most a sequential loop can get from
this reactord (a debug build is much slower than a release one).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import importlib.util
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLIENT_ROOT = Path(__file__).resolve().parents[1]
REPO = CLIENT_ROOT.parents[1]
sys.path.insert(0, str(CLIENT_ROOT))

import reactor_client  # noqa: E402
from reactor_client import AsyncClient, Client  # noqa: E402

# The last commit whose client opened a connection per call.
BEFORE = "d4e26b7"


def load_client_before(revision: str):
    """`Client` as of `revision`, imported as a module of the current package (for `.errors`)."""
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{revision}:Clients/python/reactor_client/client.py"],
        check=True, capture_output=True, text=True,
    ).stdout
    spec = importlib.util.spec_from_loader("reactor_client._client_before", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "reactor_client"
    exec(compile(source, f"{revision}:client.py", "exec"), module.__dict__)
    return module.Client


def start_reactord(binary: str) -> tuple[subprocess.Popen, int, Path]:
    log = Path(tempfile.mkstemp(prefix="reactord-bench-", suffix=".log")[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("REACTORD_")}
    with open(log, "wb") as output:
        process = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=output, env=env)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        match = re.search(r"address=127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
        if match:
            return process, int(match.group(1)), log
        if process.poll() is not None:
            break
        time.sleep(0.02)
    process.kill()
    raise SystemExit(f"reactord did not start:\n{log.read_text(errors='replace')}")


def accepted_connections(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/metrics", headers={"Connection": "close"})
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    return int(re.search(r"^reactor_http_connections_accepted_total (\d+)", text, re.M).group(1))


def time_sync(client, fires: int, path: str) -> float:
    event = {"type": "increment", "path": path}
    started = time.perf_counter()
    for _ in range(fires):
        client.fire(event)
    rate = fires / (time.perf_counter() - started)
    getattr(client, "close", lambda: None)()  # the client before had no connection to close
    return rate


def time_raw(port: int, fires: int, path: str) -> float:
    """No client at all: one socket, a prepared request, one `recv` per answer (which fits in one).
    What reactord itself allows a sequential loop, for scale."""
    body = json.dumps({"type": "increment", "path": path}).encode()
    request = (b"POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        started = time.perf_counter()
        for _ in range(fires):
            connection.sendall(request)
            if not connection.recv(65536).startswith(b"HTTP/1.1 200"):
                raise SystemExit("reactord refused a fire")
        return fires / (time.perf_counter() - started)


def time_async(url: str, fires: int, path: str) -> float:
    async def main() -> float:
        event = {"type": "increment", "path": path}
        async with AsyncClient(url, timeout=10) as client:
            started = time.perf_counter()
            for _ in range(fires):
                await client.fire(event)
            return fires / (time.perf_counter() - started)

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reactord", default=os.environ.get("REACTORD_BIN") or str(REPO / ".build" / "debug" / "reactord"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fires", type=int, default=5000)
    parser.add_argument("--before", default=BEFORE, help=f"the git revision of the client before (default {BEFORE})")
    options = parser.parse_args()

    ClientBefore = load_client_before(options.before)
    process, port, log = start_reactord(options.reactord)
    url = f"http://127.0.0.1:{port}"
    variants = {
        f"Client before ({options.before}), a connection per call": lambda path: time_sync(ClientBefore(url), options.fires, path),
        "Client, kept-alive connections": lambda path: time_sync(Client(url), options.fires, path),
        "AsyncClient, kept-alive connections": lambda path: time_async(url, options.fires, path),
        "no client: a raw socket loop (reactord's own bound)": lambda path: time_raw(port, options.fires, path),
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    connections: dict[str, int] = {name: 0 for name in variants}
    try:
        Client(url).fire({"type": "set", "path": "/warm-up", "value": 0})
        for run in range(1, options.runs + 1):
            for index, (name, measure) in enumerate(variants.items()):
                before = accepted_connections(port)
                rate = measure(f"/v{index}")
                connections[name] += accepted_connections(port) - before - 1  # not the metrics request
                rates[name].append(rate)
                print(f"run {run}  {name:<55} {rate:8.0f} fires/s", flush=True)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)
        log.unlink()
    print(f"\n{options.runs} runs of {options.fires} sequential fires, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, reactor_client {reactor_client.__version__}")
    for name in variants:
        print(f"median  {name:<55} {statistics.median(rates[name]):8.0f} fires/s   "
              f"({connections[name] / options.runs:.0f} connections per run)")


if __name__ == "__main__":
    main()
