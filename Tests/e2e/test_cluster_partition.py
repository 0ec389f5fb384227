"""A real network partition between one cluster node and Redis (Linux network namespaces).

The test builds a small network of its own on this machine: a network namespace (a unique name,
reactor-e2e-<pid>-<n>) and a veth pair from the root namespace into it, with the two addresses of a
private /30 it picks (10.210.X.Y+1 in the root namespace, 10.210.X.Y+2 in the namespace) where no
address or route of the machine overlaps. Traffic only ever goes between those two ends and
127.0.0.1.

- redis-server runs in the root namespace, listening on 127.0.0.1 and on the root end's address;
- node A runs in the root namespace on 127.0.0.1, on redis://127.0.0.1:PORT;
- node B runs in the namespace (`ip netns exec`) on the namespace's address, on
  redis://<root end>:PORT, so all its Redis traffic crosses the veth; the test reaches B over the
  veth too.

The partition cuts B <-> Redis only, and silently: on each veth end an HTB root qdisc with a u32
filter sends the TCP segments of B's Redis connections (to the Redis port from the namespace, from
the Redis port to the namespace) to a `blackhole` qdisc, which drops them and tells nobody (no
RST, no ICMP, the link stays up): like `netem loss 100%`, which this kernel may lack, but only for
Redis's traffic, so the test can still talk to B over the same veth. Checked:

- within --redis-timeout (1 s) + slack, a POST to B answers 503 problem+json with Retry-After, and
  B's /readyz turns non-200; every write B answers while cut off is a 503 problem, none hangs;
- meanwhile A acknowledges every write, and B still serves its last state on GET /state;
- the link back: B acknowledges writes again within RECOVERY_DEADLINE, and converges to A's state
  and version (ETag); the counter equals the increments acknowledged (nothing acknowledged lost or
  doubled); the stream holds versions 1..head; the epoch is the same.

A write B refused may still reach Redis when the link returns (its TCP segments were only delayed):
it is fired on a path of its own and may count at most once.

Everything the test sets up is removed in fixtures' finally blocks, even when it fails: the nodes,
redis-server, the qdiscs, the veth pair and the namespace. If the namespace cannot be created (not
root, no CAP_SYS_ADMIN), the test fails and says so: it is never skipped.
"""

from __future__ import annotations

import http.client
import ipaddress
import itertools
import json
import os
import re
import shutil
import subprocess
import threading
import time

import pytest

from cluster import (
    RedisServer,
    assert_contiguous_stream,
    log_key,
    meta_key,
    pairs,
    problem_of,
)
from conftest import HOST, REACTORD_BIN, Reactord, Response, wait_until

INCREMENT = {"type": "increment", "path": "/n"}
REDIS_TIMEOUT = 1.0
# How much later than --redis-timeout a refusal may come (a debug build on a loaded 2-core machine).
SLACK = 3.0
# How long the link coming back may take to be noticed.
RECOVERY_DEADLINE = 15.0
# How long the partition lasts at least (several of B's 250 ms reconnection attempts die unanswered).
PARTITION_SECONDS = 4.0
KEY = "e2e"
IP = shutil.which("ip") or "/usr/sbin/ip"
TC = shutil.which("tc") or "/usr/sbin/tc"
COMMAND_TIMEOUT = 10

_names = itertools.count(1)


# ---------------------------------------------------------------------------------------------
# The test's own network: a namespace, a veth pair, and a partition on it


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(list(args), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if check and done.returncode != 0:
        raise AssertionError(f"`{' '.join(args)}` failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done


def used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 address (as its network) and route destination of the root namespace."""
    networks = []
    addresses = run(IP, "-4", "-o", "addr", "show").stdout
    for match in re.finditer(r"\binet (\d+\.\d+\.\d+\.\d+(?:/\d+)?)", addresses):
        networks.append(ipaddress.ip_interface(match.group(1)).network)
    routes = run(IP, "-4", "route", "show", "table", "all").stdout
    for line in routes.splitlines():
        words = line.split()
        if words and words[0] in ("local", "broadcast", "unicast", "blackhole", "unreachable", "prohibit", "throw", "anycast", "multicast"):
            words = words[1:]
        if words and re.fullmatch(r"\d+\.\d+\.\d+\.\d+(/\d+)?", words[0]):
            networks.append(ipaddress.ip_network(words[0], strict=False))
    return networks


def free_subnet(seed: int) -> ipaddress.IPv4Network:
    """A /30 of 10.210.0.0/16 that overlaps no address or route here."""
    used = used_networks()
    candidates = list(ipaddress.ip_network("10.210.0.0/16").subnets(new_prefix=30))
    for i in range(len(candidates)):
        subnet = candidates[(seed + i * 7919) % len(candidates)]
        if not any(subnet.overlaps(network) for network in used if network.prefixlen > 0):
            return subnet
    raise AssertionError("no free /30 in 10.210.0.0/16 for the test's veth pair")


class Network:
    """The namespace `name`, and a veth pair: `root_if` (`root_ip`) in the root namespace, `ns_if`
    (`ns_ip`) in the namespace. `cut(port)` drops B<->Redis traffic silently; `restore()` ends that."""

    def __init__(self):
        n = next(_names)
        pid = os.getpid()
        self.name = f"reactor-e2e-{pid}-{n}"
        self.root_if = f"rxr{pid}-{n}"[:15]
        self.ns_if = f"rxn{pid}-{n}"[:15]
        self.subnet = free_subnet(pid * 31 + n)
        hosts = list(self.subnet.hosts())
        self.root_ip, self.ns_ip = str(hosts[0]), str(hosts[1])
        self.namespace_created = False
        self.cut_port: int | None = None

    def create(self) -> None:
        done = run(IP, "netns", "add", self.name, check=False)
        if done.returncode != 0:
            pytest.fail(
                f"cannot create the network namespace {self.name} (`ip netns add` exited {done.returncode}: "
                f"{done.stderr.strip()}); this test needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and "
                "Linux network namespaces, and is not skipped without them",
                pytrace=False,
            )
        self.namespace_created = True
        prefix = self.subnet.prefixlen
        run(IP, "link", "add", self.root_if, "type", "veth", "peer", "name", self.ns_if, "netns", self.name)
        run(IP, "addr", "add", f"{self.root_ip}/{prefix}", "dev", self.root_if)
        run(IP, "-n", self.name, "addr", "add", f"{self.ns_ip}/{prefix}", "dev", self.ns_if)
        run(IP, "link", "set", self.root_if, "up")
        run(IP, "-n", self.name, "link", "set", self.ns_if, "up")
        run(IP, "-n", self.name, "link", "set", "lo", "up")

    # The partition: on each end, HTB at the root, every packet to class 1:10 (plain) but B's Redis
    # traffic, which u32 sends to 1:20, whose qdisc is a blackhole (drops it, says nothing).

    def _blackhole(self, tc: list[str], dev: str, match: list[str]) -> None:
        run(*tc, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
        run(*tc, "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit")
        run(*tc, "class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit")
        run(*tc, "qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "blackhole")
        run(*tc, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
            "match", "ip", "protocol", "6", "0xff", *match, "flowid", "1:20")

    def cut(self, redis_port: int) -> None:
        """From now on, Redis's answers to B and B's packets to Redis vanish."""
        self.cut_port = redis_port
        # Redis -> B, leaving the root end; B -> Redis, leaving the namespace's end.
        self._blackhole([TC], self.root_if,
                        ["match", "ip", "src", f"{self.root_ip}/32", "match", "ip", "sport", str(redis_port), "0xffff"])
        self._blackhole([TC, "-n", self.name], self.ns_if,
                        ["match", "ip", "dst", f"{self.root_ip}/32", "match", "ip", "dport", str(redis_port), "0xffff"])

    def restore(self, check: bool = True) -> None:
        """The link as it was: no qdisc of the test's on either end."""
        errors = []
        for tc, dev in (([TC], self.root_if), ([TC, "-n", self.name], self.ns_if)):
            done = run(*tc, "qdisc", "del", "dev", dev, "root", check=False)
            if done.returncode != 0 and self.cut_port is not None:
                errors.append(f"{dev}: {done.stderr.strip()}")
        self.cut_port = None
        if check and errors:
            raise AssertionError(f"could not remove the partition's qdiscs: {errors}")

    def qdiscs(self) -> str:
        return run(TC, "qdisc", "show", "dev", self.root_if, check=False).stdout + \
            run(TC, "-n", self.name, "qdisc", "show", "dev", self.ns_if, check=False).stdout

    def ns_connect_outcome(self, port: int, timeout: float = 1.0) -> str:
        """What a fresh TCP connection from inside the namespace to root_ip:port meets: 'timeout'
        (dropped silently), 'connected' or the error."""
        script = (
            "import socket,sys\n"
            f"try:\n socket.create_connection(({self.root_ip!r}, {port}), timeout={timeout}).close(); print('connected')\n"
            "except socket.timeout: print('timeout')\n"
            "except OSError as e: print(repr(e))\n"
        )
        done = run(IP, "netns", "exec", self.name, "python3", "-c", script, check=False)
        return (done.stdout.strip() or done.stderr.strip())

    def close(self) -> list[str]:
        """Removes the qdiscs, the veth pair and the namespace; what could not be removed."""
        errors = []
        if not self.namespace_created:
            return errors
        self.restore(check=False)
        if run(IP, "link", "show", self.root_if, check=False).returncode == 0:
            done = run(IP, "link", "del", self.root_if, check=False)
            if done.returncode != 0:
                errors.append(f"ip link del {self.root_if}: {done.stderr.strip()}")
        done = run(IP, "netns", "del", self.name, check=False)
        if done.returncode != 0:
            errors.append(f"ip netns del {self.name}: {done.stderr.strip()}")
        if self.name in run(IP, "netns", "list", check=False).stdout.split():
            errors.append(f"the namespace {self.name} is still listed")
        if run(IP, "link", "show", self.root_if, check=False).returncode == 0:
            errors.append(f"the veth {self.root_if} is still there")
        return errors


# ---------------------------------------------------------------------------------------------
# A reactord inside the namespace


class NetnsReactord(Reactord):
    """A reactord started with `ip netns exec NAME reactord serve --host <namespace address> ...`
    (ip execs reactord: the process is reactord itself)."""

    def __init__(self, network: Network, args: list[str], log_dir):
        self.host = network.ns_ip
        self.address_line = re.compile(r"address=" + re.escape(self.host) + r":(\d+)")
        self.description = "reactord in the namespace"
        if not os.access(REACTORD_BIN, os.X_OK):
            raise AssertionError(f"reactord binary not found at {REACTORD_BIN}: run `swift build --product reactord` or set REACTORD_BIN")
        # --insecure: reactord refuses to serve an address other than loopback without tokens; this
        # one exists only between the test's two namespaces.
        super().__init__(["netns", "exec", network.name, REACTORD_BIN, "serve", "--host", self.host, "--port", "0",
                          "--insecure", *args],
                         None, None, log_dir, binary=IP)
        self.base_url = f"http://{self.host}:{self.port}"


# ---------------------------------------------------------------------------------------------
# Fixtures: set up network -> redis -> nodes; torn down nodes -> redis -> network


@pytest.fixture
def network():
    """The test's network, not created yet: the test creates it first thing (`create()`), so that a
    machine that cannot make namespaces fails the test itself, with a message that says why."""
    net = Network()
    try:
        yield net
    finally:
        errors = net.close()
        if errors:
            pytest.fail(f"could not clean up the test's network: {errors}")


@pytest.fixture
def redis(network, tmp_path):
    """redis-server on 127.0.0.1 and the veth's root end, not started yet (`start()` once the network
    exists); stopped at teardown, after the nodes, before the network goes."""
    # Protected mode would refuse B (it accepts only loopback clients when no password is set); Redis
    # listens on 127.0.0.1 and the root end of the test's veth, nothing else.
    server = RedisServer(tmp_path / "redis", extra=("--protected-mode", "no"), bind=(HOST, network.root_ip))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def netns_reactord(network, redis, tmp_path):
    """Starts reactord nodes inside the namespace; each is stopped with SIGTERM at teardown (before
    Redis and the network go) and must exit 0."""
    started: list[NetnsReactord] = []

    def start(*args: str) -> NetnsReactord:
        node = NetnsReactord(network, list(args), tmp_path)
        started.append(node)
        return node

    yield start
    failures = []
    for node in started:
        try:
            code = node.stop()
            if code != 0:
                failures.append(f"reactord in the namespace exited with {code}, not 0:\n{node.log()[-4000:]}")
        finally:
            node.close()
    if failures:
        pytest.fail("\n".join(failures))


# ---------------------------------------------------------------------------------------------
# HTTP to either node (A on 127.0.0.1, B on the namespace's address)


def call(node, method: str, path: str, body=None, timeout: float = 5) -> Response:
    headers = {}
    if body is not None:
        body = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection = http.client.HTTPConnection(getattr(node, "host", HOST), node.port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return Response(answer.status, answer.getheaders(), answer.read(), answer.reason)
    finally:
        connection.close()


def timed(node, method: str, path: str, body=None, timeout: float = REDIS_TIMEOUT + SLACK + 2) -> tuple[Response, float]:
    started = time.monotonic()
    try:
        answer = call(node, method, path, body, timeout)
    except TimeoutError:
        raise AssertionError(f"{method} {path} on node {node.name} got no answer within {timeout} s (a hang)") from None
    return answer, time.monotonic() - started


def fire(node, event) -> int:
    answer = call(node, "POST", "/events", event)
    assert answer.status == 200, (node.name, answer)
    return answer.json()["version"]


def state_and_version(node) -> tuple[object, int, str]:
    answer = call(node, "GET", "/state")
    assert answer.status == 200, (node.name, answer)
    etag = answer.header("ETag")
    assert etag and etag.startswith('"') and etag.endswith('"'), answer
    return answer.json(), int(etag.strip('"')), etag


def cluster_info(node) -> dict:
    answer = call(node, "GET", "/cluster")
    assert answer.status == 200, answer
    return answer.json()


def converge(nodes, version: int, timeout: float = 10) -> tuple[object, str]:
    """Every node reaches exactly `version` with the same state and ETag; that state and ETag."""
    seen = []
    for node in nodes:
        def reached():
            state, current, etag = state_and_version(node)
            return (state, current, etag) if current >= version else None
        state, current, etag = wait_until(reached, timeout, interval=0.05, message=f"node {node.name} at version {version}")
        assert current == version, f"node {node.name} is at version {current}, beyond {version}"
        seen.append((node.name, state, etag))
    for name, state, etag in seen[1:]:
        assert (state, etag) == (seen[0][1], seen[0][2]), f"node {name} has {state} {etag}, node {seen[0][0]} {seen[0][1]} {seen[0][2]}"
    return seen[0][1], seen[0][2]


class Writer(threading.Thread):
    """Fires increments of /n at a node, one after the other, until stopped; keeps every answer's
    status and latency, and the versions acknowledged."""

    def __init__(self, node):
        super().__init__(daemon=True)
        self.node = node
        self.stop = threading.Event()
        self.versions: list[int] = []
        self.refused: list[Response] = []
        self.latencies: list[float] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                answer, elapsed = timed(self.node, "POST", "/events", INCREMENT)
                self.latencies.append(elapsed)
                if answer.status == 200:
                    self.versions.append(answer.json()["version"])
                else:
                    self.refused.append(answer)
                time.sleep(0.02)
        except BaseException as error:  # reported by the test
            self.error = error


# ---------------------------------------------------------------------------------------------
# The test


def assert_refusal(node, answer: Response, elapsed: float, what: str) -> dict:
    assert answer.status == 503, f"{what}: node {node.name} answered {answer}, not 503"
    problem = problem_of(answer)
    retry_after = answer.header("Retry-After")
    assert retry_after is not None and retry_after.isdigit(), f"{what}: no Retry-After: {answer}"
    assert elapsed <= REDIS_TIMEOUT + SLACK, f"{what}: refused after {elapsed:.2f} s (--redis-timeout {REDIS_TIMEOUT})"
    return problem


@pytest.mark.time_limit(60)
def test_a_node_partitioned_from_redis_refuses_writes_in_time_and_rejoins_with_nothing_lost(network, redis, reactord, netns_reactord):
    network.create()
    redis.start()
    flags = ("--redis-key", KEY, "--redis-timeout", f"{REDIS_TIMEOUT:g}")
    a = reactord("--redis", f"redis://{HOST}:{redis.port}", "--node-name", "a", *flags)
    a.name = "a"
    b = netns_reactord("--redis", f"redis://{network.root_ip}:{redis.port}", "--node-name", "b", *flags)
    b.name = "b"
    timings: dict[str, object] = {}

    # Both nodes take writes, B's over the veth.
    acked_n = 0
    for i in range(10):
        fire((a, b)[i % 2], INCREMENT)
        acked_n += 1
    before_state, before_etag = converge([a, b], 10)
    assert before_state == {"n": 10} and before_etag == '"10"', (before_state, before_etag)
    before_version = 10
    assert call(b, "GET", "/readyz").status == 200
    assert cluster_info(b).get("redis") == "connected"
    epoch = pairs(redis.command("HGETALL", meta_key(KEY)))["epoch"]
    assert network.ns_connect_outcome(redis.port) == "connected", "the namespace does not reach Redis before the cut"

    writer = Writer(a)
    writer.start()
    refused_on_b = 0
    try:
        wait_until(lambda: len(writer.versions) >= 3, 10, interval=0.05, message="A acknowledging writes before the cut")
        acked_before_cut = len(writer.versions)

        # -- The cut: B's Redis traffic vanishes both ways; the test still reaches B over the veth.
        network.cut(redis.port)
        cut_at = time.monotonic()
        try:
            answer, elapsed = timed(b, "POST", "/events", {"type": "increment", "path": "/refused"})
            refused_on_b += 1
            timings["first POST on B after the cut"] = round(elapsed, 2)
            assert_refusal(b, answer, elapsed, "the first POST on B after the cut")

            wait_until(lambda: call(b, "GET", "/readyz").status != 200, max(0.1, cut_at + REDIS_TIMEOUT + SLACK - time.monotonic()),
                       interval=0.05, message="B's /readyz non-200 after the cut")
            timings["B's /readyz non-200 after"] = round(time.monotonic() - cut_at, 2)
            # B serves the last state it had: a version of the one history (only /n increments were
            # acknowledged so far, so n equals the version), no older than what it served before
            # the writer started on A, and no newer than what A acknowledged.
            b_state, b_version, b_etag = state_and_version(b)
            assert b_state == {"n": b_version} and before_version <= b_version <= max(writer.versions), \
                f"B serves {b_state} at {b_etag} (A acknowledged up to {max(writer.versions)})"
            assert cluster_info(b).get("redis") != "connected"
            # The partition is a silent drop: a fresh connection from the namespace meets nothing.
            assert network.ns_connect_outcome(redis.port) == "timeout", "the cut does not drop B's Redis traffic silently"

            # B goes on refusing every write, each in time, none with another status; A goes on.
            latencies = []
            while time.monotonic() < cut_at + PARTITION_SECONDS:
                answer, elapsed = timed(b, "POST", "/events", {"type": "increment", "path": "/refused"})
                refused_on_b += 1
                latencies.append(elapsed)
                assert_refusal(b, answer, elapsed, f"POST {refused_on_b} on B while cut off")
                assert call(b, "GET", "/readyz").status != 200
                time.sleep(0.1)
            timings["B's later refusals (max s)"] = round(max(latencies, default=0), 2)
            assert len(writer.versions) > acked_before_cut + 3, f"A acknowledged only {len(writer.versions) - acked_before_cut} writes during the cut"
            assert not writer.refused and writer.error is None, (writer.refused[:3], writer.error)
            # Still that state, though A moved on.
            assert state_and_version(b) == (b_state, b_version, b_etag), "B's state changed while it was cut off"
            assert state_and_version(a)[1] > b_version
        finally:
            network.restore()
        restored_at = time.monotonic()

        # -- The link back: B acknowledges writes again within the deadline, every answer before
        # that a 503 problem.
        probes = 0
        while True:
            answer, elapsed = timed(b, "POST", "/events", {"type": "increment", "path": "/probe"})
            probes += 1
            if answer.status == 200:
                break
            assert answer.status == 503, f"B answered {answer} after the link returned"
            problem_of(answer)
            assert time.monotonic() < restored_at + RECOVERY_DEADLINE, \
                f"B still refused writes {RECOVERY_DEADLINE} s after the link returned: {answer}\n{b.log()[-3000:]}"
            time.sleep(0.1)
        timings["B's first 200 after the link returned"] = round(time.monotonic() - restored_at, 2)
        wait_until(lambda: call(b, "GET", "/readyz").status == 200, RECOVERY_DEADLINE, interval=0.05, message="B's /readyz 200 again")
        timings["refused writes on B"] = refused_on_b
        timings["probes until acknowledged"] = probes
    finally:
        writer.stop.set()
        writer.join(REDIS_TIMEOUT + SLACK + 5)
    assert not writer.is_alive(), "the writer on A did not finish"
    assert not writer.refused and writer.error is None, (writer.refused[:3], writer.error)
    acked_n += len(writer.versions)
    timings["A's writes acknowledged (slowest s)"] = (len(writer.versions), round(max(writer.latencies), 2))
    assert writer.versions == sorted(set(writer.versions)), "A answered versions out of order"

    for i in range(10):
        fire((a, b)[i % 2], INCREMENT)
        acked_n += 1

    # B converges to A's state and version; nothing acknowledged lost or doubled.
    head = int(pairs(redis.command("HGETALL", meta_key(KEY)))["version"])
    state, etag = converge([a, b], head)
    assert etag == f'"{head}"'
    assert state["n"] == acked_n, f"acknowledged increments lost or doubled: n={state['n']}, acknowledged {acked_n}"
    assert 1 <= state["probe"] <= probes, state
    # A write B refused may have reached Redis late (its segments were delayed, not lost): once at most.
    assert state.get("refused", 0) <= refused_on_b, state
    timings["refused writes applied later"] = state.get("refused", 0)
    assert pairs(redis.command("HGETALL", meta_key(KEY)))["epoch"] == epoch, "the cluster's epoch changed"
    assert_contiguous_stream(redis, KEY, head)
    assert redis.command("XLEN", log_key(KEY)) == head
    assert cluster_info(b).get("redis") == "connected"
    print(f"partition timings: {timings}")
