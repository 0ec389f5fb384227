"""Crash safety: reactord killed with SIGKILL at random moments while clients fire events, again and
again on one data directory. After every restart, every acknowledged event is in the state exactly
once, nothing appears twice, nothing appears that no client sent, and the versions in /history are
contiguous from 1 to the current one.

An event that was sent but not answered when the server died may or may not be there (it can have
been journaled with its answer lost in the kill), but at most once.
"""

from __future__ import annotations

import collections
import http.client
import json
import random
import threading
import time

import pytest

from conftest import HOST, request
from journal import all_history, fire, readyz, state_and_version

ROUNDS = 20
CLIENTS = 4
# The fsync mode of each round, in turn: SIGKILL loses nothing the process wrote, whatever the mode.
FSYNC_MODES = ["batch", "always", "never"]


class Client(threading.Thread):
    """Fires `append` events with unique ids on one keep-alive connection until told to stop or the
    connection breaks (the server was killed). Each event is sent after the previous one's answer,
    so at most one is in flight."""

    def __init__(self, port: int, round_number: int, number: int, stop: threading.Event, body=None):
        super().__init__(daemon=True)
        self.port = port
        self.prefix = f"r{round_number}-c{number}-"
        self.number = number
        self.stop = stop
        # The request's body for an id and this client's number (default: one append of the id).
        self.body = body or (lambda event_id, _: json.dumps({"type": "append", "path": "/log", "value": event_id}))
        self.sent: list[str] = []
        self.acked: list[str] = []
        self.versions: list[int] = []
        self.refused: list[tuple[str, int, bytes]] = []

    def run(self) -> None:
        connection = http.client.HTTPConnection(HOST, self.port, timeout=5)
        try:
            while not self.stop.is_set():
                event_id = f"{self.prefix}{len(self.sent)}"
                body = self.body(event_id, self.number)
                self.sent.append(event_id)
                connection.request("POST", "/events", body=body, headers={"Content-Type": "application/json"})
                answer = connection.getresponse()
                data = answer.read()
                if 200 <= answer.status < 300:
                    self.acked.append(event_id)
                    self.versions.append(json.loads(data)["version"])
                else:
                    self.refused.append((event_id, answer.status, data[:300]))
                    return
        except (OSError, http.client.HTTPException):
            return  # the server is gone
        finally:
            connection.close()


class Ledger:
    """What the clients of every round sent and had acknowledged, which each restart is checked against."""

    def __init__(self) -> None:
        self.acked: set[str] = set()
        self.sent: set[str] = set()
        self.per_client: list[list[str]] = []
        self.acked_per_client: list[list[str]] = []
        self.last_version = 0

    def record(self, client: Client) -> None:
        self.acked.update(client.acked)
        self.sent.update(client.sent)
        self.per_client.append(client.sent)
        self.acked_per_client.append(client.acked)
        if client.versions:
            self.last_version = max(self.last_version, client.versions[-1])


def fire_until_killed(server, round_number: int, rng: random.Random, body=None) -> list[Client]:
    """CLIENTS clients fire at `server` until it is SIGKILLed after a random fraction of a second."""
    stop = threading.Event()
    clients = [Client(server.port, round_number, number, stop, body) for number in range(CLIENTS)]
    for client in clients:
        client.start()
    time.sleep(rng.uniform(0.05, 0.4))
    server.kill()
    stop.set()
    for client in clients:
        client.join(10)
        assert not client.is_alive(), "a client thread did not finish"
    return clients


def check_directory_state(server, ledger: Ledger, history_from: int | None = 0) -> tuple[int, list[str]]:
    """Checks the recovered state against what the clients saw; (the version, the log).

    The journal is read back from `history_from` (the oldest snapshot's version when snapshots trim
    it; None: from where the server says it starts)."""
    state, version = state_and_version(server)
    log = state.get("log", [])
    assert len(log) == version, f"{len(log)} events in the log at version {version}: every version is one append"
    duplicates = [item for item, count in collections.Counter(log).items() if count > 1]
    assert not duplicates, f"events applied twice after recovery: {duplicates[:20]}"
    missing = ledger.acked - set(log)
    assert not missing, f"{len(missing)} acknowledged events lost: {sorted(missing)[:20]}"
    invented = set(log) - ledger.sent
    assert not invented, f"events nobody sent: {sorted(invented)[:20]}"
    # Per connection, what survived is what was acknowledged, plus at most the one event in flight.
    present = set(log)
    for sent_ids, acked_ids in zip(ledger.per_client, ledger.acked_per_client):
        kept = [event_id for event_id in sent_ids if event_id in present]
        assert kept[: len(acked_ids)] == acked_ids, (acked_ids[-3:], kept[-3:])
        assert len(kept) - len(acked_ids) <= 1, f"more than the one event in flight survived: {kept[len(acked_ids):]}"
    # The journal holds versions 1..current without a gap, and its events make up the log.
    if history_from is None:
        history_from = int(request(server, "GET", f"/history?since={version}").header("Reactor-Oldest-Version"))
    history = all_history(server, since=history_from, limit=1000)
    versions = [line["version"] for line in history]
    assert versions == list(range(history_from + 1, version + 1)), f"versions are not {history_from + 1}..{version}: {len(versions)} lines"
    assert [line["event"]["value"] for line in history] == log[history_from:]
    assert readyz(server) == (200, {"status": "ready", "version": version})
    return version, log


@pytest.mark.time_limit(90)
def test_acknowledged_events_survive_repeated_sigkill(reactord, tmp_path, record_property, capsys):
    data_dir = tmp_path / "data"
    rng = random.Random(5)
    flags = ("--data-dir", str(data_dir), "--segment-bytes", "65536", "--log-level", "notice")
    ledger = Ledger()
    kills_with_events = 0
    started = time.monotonic()
    for round_number in range(ROUNDS + 1):
        fsync = FSYNC_MODES[round_number % len(FSYNC_MODES)]
        server = reactord(*flags, "--fsync", fsync)
        version, log = check_directory_state(server, ledger)
        assert version >= ledger.last_version, f"the version went back from {ledger.last_version} to {version}"
        if round_number == ROUNDS:
            assert fire(server, {"type": "append", "path": "/log", "value": "last"}) == version + 1
            break
        round_acked = 0
        for client in fire_until_killed(server, round_number, rng):
            assert not client.refused, f"events refused while the server ran: {client.refused[:3]}"
            assert client.versions == sorted(client.versions) and len(set(client.versions)) == len(client.versions)
            ledger.record(client)
            round_acked += len(client.acked)
        kills_with_events += round_acked > 0
    elapsed = time.monotonic() - started
    summary = (
        f"crash test: {len(ledger.acked)} acknowledged events checked after {ROUNDS} SIGKILLs "
        f"({len(ledger.sent) - len(ledger.acked)} sent but unanswered), {elapsed:.1f} s"
    )
    record_property("acknowledged_events_checked", len(ledger.acked))
    with capsys.disabled():
        print(f"\n{summary}")
    assert kills_with_events >= ROUNDS // 2, f"too few rounds fired anything before the kill: {summary}"
    assert len(ledger.acked) >= 200, f"too few events to say much: {summary}"


@pytest.mark.time_limit(60)
def test_sigkill_during_snapshots_and_segment_rolls(reactord, tmp_path, capsys):
    """The same, with a snapshot every 100 events and 4 KiB segments: kills land while snapshots are
    written and segments removed or started."""
    data_dir = tmp_path / "data"
    rng = random.Random(11)
    flags = ("--data-dir", str(data_dir), "--segment-bytes", "4096", "--snapshot-events", "100", "--log-level", "notice")
    ledger = Ledger()
    rounds = 10
    for round_number in range(rounds + 1):
        server = reactord(*flags)
        version, _ = check_directory_state(server, ledger, history_from=None)
        assert version >= ledger.last_version
        if round_number == rounds:
            break
        for client in fire_until_killed(server, round_number, rng):
            assert not client.refused, client.refused[:3]
            ledger.record(client)
    # A kill between writing a snapshot and removing the one it replaces leaves both; the last
    # start (the loop's final round) kept the newest and removed the rest.
    assert server.stop() == 0
    snapshots = sorted((data_dir / "snapshots").glob("*.snapshot"))
    assert len(snapshots) == 1 and int(snapshots[0].stem) > 0, snapshots
    with capsys.disabled():
        print(f"\ncrash test with snapshots: {len(ledger.acked)} acknowledged events checked after {rounds} SIGKILLs")
    assert len(ledger.acked) >= 200


@pytest.mark.time_limit(60)
@pytest.mark.parametrize("extra", [(), ("--segment-bytes", "4096", "--snapshot-events", "40")], ids=["plain", "snapshots-and-rolls"])
def test_a_request_of_several_events_survives_sigkill_whole_or_not_at_all(reactord, tmp_path, capsys, extra):
    """Requests of four events each with `--fsync always`, which writes and syncs each request on its
    own, in one write: no kill leaves part of a request, also with small segments and frequent
    snapshots, so that kills land while they roll."""
    data_dir = tmp_path / "data"
    rng = random.Random(17)
    flags = ("--data-dir", str(data_dir), "--fsync", "always", "--log-level", "notice", *extra)
    size, rounds = 4, 10

    def array(request_id: str, _: int) -> str:
        return json.dumps([{"type": "append", "path": "/log", "value": f"{request_id}.{k}"} for k in range(size)])

    sent: list[str] = []
    acked: set[str] = set()
    cut = 0
    for round_number in range(rounds + 1):
        server = reactord(*flags)
        cut += "began a request" in server.log() or "first events of a request" in server.log()
        state, version = state_and_version(server)
        log = state.get("log", [])
        assert len(log) == version and len(set(log)) == len(log), f"{len(log)} events at version {version}, or some twice"
        kept = {value.rsplit(".", 1)[0] for value in log}
        for request_id in kept:
            whole = [f"{request_id}.{k}" for k in range(size)]
            at = log.index(whole[0]) if whole[0] in log else -1
            assert at >= 0 and log[at:at + size] == whole, f"request {request_id} kept in part: {[v for v in log if v.startswith(request_id + '.')]}"
        assert not acked - kept, f"acknowledged requests lost: {sorted(acked - kept)[:10]}"
        assert kept <= set(sent), f"requests nobody sent: {sorted(kept - set(sent))[:10]}"
        if round_number == rounds:
            break
        for client in fire_until_killed(server, round_number, rng, body=array):
            assert not client.refused, client.refused[:3]
            sent += client.sent
            acked.update(client.acked)
    assert server.stop() == 0
    with capsys.disabled():
        print(f"\ncrash test with requests of {size} events: {len(acked)} acknowledged requests checked after {rounds} SIGKILLs")
    assert len(acked) >= 50
    assert cut == 0, "with --fsync always a request is written in one piece: no kill leaves part of it"


@pytest.mark.time_limit(90)
def test_a_request_written_in_pieces_survives_sigkill_whole_or_not_at_all(reactord, tmp_path, capsys):
    """Requests of four events of 300 KB each: the journal writes and syncs more than 1 MiB in
    pieces, and a kill between the pieces leaves a request's first records on disk, which recovery
    cuts off. Each client sets keys of its own, so the state stays small: after every restart a
    client's four keys hold one request, the last acknowledged or the one in flight after it.

    Where the kills land is chance: with a release build about one restart in four finds a request
    cut (the summary line counts them); with a debug build, whose parsing of the bodies takes most
    of the time, few do. test_durability.py and JournalWriterTests make that case on purpose."""
    data_dir = tmp_path / "data"
    rng = random.Random(23)
    flags = ("--data-dir", str(data_dir), "--max-body-bytes", "4194304", "--snapshot-bytes", "33554432", "--log-level", "notice")
    size, rounds = 4, 12
    pad = "x" * 300_000

    def sets(request_id: str, number: int) -> str:
        return json.dumps([{"type": "set", "path": f"/c{number}-{k}", "value": {"id": request_id, "pad": pad}} for k in range(size)])

    sent: dict[int, list[str]] = collections.defaultdict(list)
    acked: dict[int, list[str]] = collections.defaultdict(list)
    cut = 0
    for round_number in range(rounds + 1):
        server = reactord(*flags)
        cut += "first events of a request" in server.log()
        state, _ = state_and_version(server)
        for number in range(CLIENTS):
            ids = {state[key]["id"] if key in state else None for key in (f"c{number}-{k}" for k in range(size))}
            assert len(ids) == 1, f"client {number}'s keys hold parts of several requests: {sorted(map(str, ids))}"
            (present,) = ids
            if acked[number]:
                assert present in sent[number], f"client {number}: {present} was never sent"
                assert sent[number].index(present) >= sent[number].index(acked[number][-1]), \
                    f"client {number}: {present} is older than {acked[number][-1]}, acknowledged"
        if round_number == rounds:
            break
        for client in fire_until_killed(server, round_number, rng, body=sets):
            assert not client.refused, client.refused[:3]
            sent[client.number] += client.sent
            acked[client.number] += client.acked
    assert server.stop() == 0
    total = sum(len(ids) for ids in acked.values())
    with capsys.disabled():
        print(f"\ncrash test with requests of 1.2 MB: {total} acknowledged requests checked after {rounds} SIGKILLs, {cut} restarts cut off a request's first events")
    assert total >= 20
