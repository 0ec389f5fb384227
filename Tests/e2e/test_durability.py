"""Durability (--data-dir): the journal and snapshots on disk, restarts, /history and
/state?version=N, start-up recovery from a torn tail and refusal of damage, `reactord check`,
`compact`, `export` and `import`, disk errors (a file-size limit makes journal writes fail with
EFBIG), the fsync modes, and acknowledgements and subscribers that only ever see journaled states.

Every server here runs on a data directory under the test's tmp_path. A server that the test means
to crash is ended with `kill()` (SIGKILL); every other one must exit 0 on SIGTERM.
"""

from __future__ import annotations

import http.client
import json
import random
import resource
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import (
    HOST,
    REACTORD_BIN,
    assert_problem,
    clean_environment,
    post_events,
    request,
    run_reactord,
    wait_until,
)
from journal import (
    HEADER_SIZE,
    RECORD_HEADER_SIZE,
    all_history,
    encode_header,
    encode_record,
    files_under,
    fire,
    flip_byte,
    history_page,
    journaled_versions,
    parse_file,
    readyz,
    segment_path,
    segment_versions,
    snapshot_path,
    snapshot_versions,
    state_and_version,
)
from sse import finished_stream, id_version
from subscriptions import apply_patch, assert_resumes, assert_silent, EventGenerator, next_json, strict_equal, subscribe, without_history

FIRST_SEGMENT = "journal/00000000000000000001.log"


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


def stop(server) -> None:
    """SIGTERM; the server must exit 0 (the fixture would say so too, but only at teardown)."""
    code = server.stop()
    assert code == 0, f"reactord exited with {code} on SIGTERM, not 0:\n{server.log()[-3000:]}"


def start(reactord, data_dir: Path, *flags: str, **options):
    return reactord("--data-dir", str(data_dir), *flags, **options)


def reactord_tool(*args: str, input: bytes | None = None, timeout: float = 20, preexec_fn=None) -> subprocess.CompletedProcess:
    """`reactord check|compact|export|import ...`: the finished process (output as bytes)."""
    return subprocess.run(
        [REACTORD_BIN, *args],
        input=input if input is not None else b"",
        capture_output=True,
        env=clean_environment(),
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def refuse_to_start(data_dir: Path, *flags: str, timeout: float = 5) -> str:
    """Runs reactord on `data_dir`, which must refuse to start: its standard error."""
    args = [REACTORD_BIN, "--port", "0", "--data-dir", str(data_dir), *flags]
    try:
        done = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, env=clean_environment(), timeout=timeout)
    except subprocess.TimeoutExpired as running:
        log = (running.stderr or b"").decode(errors="replace")
        raise AssertionError(f"reactord started on {data_dir} instead of refusing to:\n{log}") from None
    assert done.returncode != 0, done
    return done.stderr.decode(errors="replace")


def text(done: subprocess.CompletedProcess) -> str:
    return done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")


def torn_warnings(server) -> list[str]:
    """The log's warnings about a torn journal tail cut off at start-up."""
    return [line for line in server.log().splitlines() if " warning " in line and "last record was cut short or is damaged" in line]


def random_history(server, count: int, seed: int) -> list[tuple[int, object]]:
    """Fires `count` accepted random events of every type; [(version, state after it)]."""
    generator = EventGenerator(seed)
    fire(server, {"type": "set", "path": "", "value": {"players": [{"name": "Ayla", "level": 1}], "n": 0}})
    states = [state_and_version(server)[::-1]]
    while len(states) < count:
        state = states[-1][1]
        answer = post_events(server, generator.event(state))
        if answer.status != 200:
            assert answer.status in (404, 409, 422), answer
            continue
        current, version = state_and_version(server)
        assert version == answer.json()["version"] == states[-1][0] + 1
        states.append((version, current))
    return states


# ---------------------------------------------------------------------------------------------
# The directory's layout and the file format


def test_a_fresh_directory_gets_snapshot_0_of_the_initial_state_and_a_lock(reactord, data_dir, tmp_path):
    initial = {"players": [], "title": "ünï ✓", "n": 1.5}
    initial_file = tmp_path / "initial.json"
    initial_file.write_text(json.dumps(initial))
    server = start(reactord, data_dir, "--initial-state", str(initial_file))
    assert state_and_version(server) == (initial, 0)
    assert (data_dir / "LOCK").is_file()
    assert snapshot_versions(data_dir) == [0]
    snapshot = parse_file(snapshot_path(data_dir, 0))
    assert (snapshot.magic, snapshot.format, snapshot.reserved, snapshot.version) == (b"RSNP", 3, 0, 0)
    assert len(snapshot.records) == 1 and snapshot.trailing == b""
    record = snapshot.records[0]
    assert record.version == 0 and record.crc_ok and record.offset == HEADER_SIZE
    assert strict_equal(record.json(), initial)
    assert "created a data directory" in server.log()


def test_a_start_that_cannot_listen_leaves_no_data_directory_it_made(reactord, tmp_path):
    new, empty, used = tmp_path / "new" / "data", tmp_path / "empty", tmp_path / "used"
    empty.mkdir()
    stop(start(reactord, used))
    before = {name: (used / name).read_bytes() for name in files_under(used) if name != "LOCK"}
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for directory in (new, empty, used):
            done = run_reactord("--port", port, "--data-dir", str(directory))
            assert done.returncode != 0 and "cannot listen" in done.stderr, done
    assert not new.exists()
    assert empty.is_dir() and list(empty.iterdir()) == []
    assert {name: (used / name).read_bytes() for name in files_under(used) if name != "LOCK"} == before


def test_an_acknowledged_event_is_in_the_journal_file_before_the_answer(reactord, data_dir):
    server = start(reactord, data_dir)
    event = {"type": "set", "path": "/a", "value": {"b": [1, "two", None, True]}}
    assert fire(server, event) == 1
    segment = parse_file(data_dir / FIRST_SEGMENT)  # read while the server runs, right after the 200
    assert (segment.magic, segment.format, segment.reserved, segment.version) == (b"RJNL", 3, 0, 1)
    assert [r.version for r in segment.records] == [1] and segment.trailing == b""
    record = segment.records[0]
    assert record.crc_ok and record.offset == HEADER_SIZE and record.length == len(record.payload)
    assert strict_equal(record.json(), event)
    # The bytes on disk are exactly what the format says (length, CRC-32C of version + payload, version, payload).
    raw = (data_dir / FIRST_SEGMENT).read_bytes()
    assert raw[HEADER_SIZE : segment.records_end] == encode_record(1, record.payload)
    # Then zeros: the room the writer keeps ahead, written over in place by the next appends.
    assert segment.room > 0 and raw[segment.records_end :] == bytes(segment.room)
    for version in range(2, 30):
        assert fire(server, {"type": "increment", "path": "/n"}) == version
        assert journaled_versions(data_dir)[-1] == version, "acknowledged before it was written"
    assert journaled_versions(data_dir) == list(range(1, 30))


def test_data_dir_from_the_environment_and_from_the_config_file(reactord, tmp_path):
    from_env = tmp_path / "from-env"
    server = reactord(env={"REACTORD_DATA_DIR": str(from_env), "REACTORD_FSYNC": "always"})
    assert fire(server, {"type": "increment", "path": "/n"}) == 1
    assert journaled_versions(from_env) == [1]

    from_file = tmp_path / "from-file"
    config = tmp_path / "reactord.json"
    config.write_text(json.dumps({"dataDir": str(from_file), "fsync": "never", "segmentBytes": 4096, "snapshotEvents": 1000}))
    server = reactord("--config", str(config))
    assert fire(server, {"type": "increment", "path": "/n"}) == 1
    assert journaled_versions(from_file) == [1]
    assert "unknown keys" not in server.log()


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--segment-bytes", "4095"], "segment-bytes"),
        (["--snapshot-events", "0"], "snapshot-events"),
        (["--snapshot-bytes", "0"], "snapshot-bytes"),
        (["--fsync", "sometimes"], "fsync"),
    ],
)
def test_bad_journal_settings_refuse_to_start(data_dir, flags, words):
    done = run_reactord("--port", "0", "--data-dir", str(data_dir), *flags)
    assert done.returncode != 0
    assert words in done.stderr, done.stderr


def test_a_second_reactord_on_the_same_directory_refuses_to_start(reactord, data_dir):
    server = start(reactord, data_dir)
    fire(server, {"type": "increment", "path": "/n"})
    done = run_reactord("--port", "0", "--data-dir", str(data_dir))
    assert done.returncode != 0
    assert "in use" in done.stderr and str(data_dir) in done.stderr, done.stderr
    # Offline tools refuse too while the server holds the lock, and leave everything as it was.
    before = {name: (data_dir / name).read_bytes() for name in files_under(data_dir)}
    for tool in (["check"], ["compact"], ["export"]):
        done = reactord_tool(*tool, "--data-dir", str(data_dir))
        assert done.returncode != 0, (tool, text(done))
        assert "in use" in text(done), (tool, text(done))
    assert {name: (data_dir / name).read_bytes() for name in files_under(data_dir)} == before
    assert state_and_version(server) == ({"n": 1}, 1)


# ---------------------------------------------------------------------------------------------
# Restarts


def test_a_restart_has_the_same_state_and_versions(reactord, data_dir):
    server = start(reactord, data_dir)
    states = random_history(server, 120, seed=5)
    state, version = state_and_version(server)
    assert version == 120
    history = all_history(server)
    assert [line["version"] for line in history] == list(range(1, 121))
    stop(server)

    server = start(reactord, data_dir)
    assert state_and_version(server) == (state, version)
    assert strict_equal(state_and_version(server)[0], state)
    assert readyz(server) == (200, {"status": "ready", "version": 120})
    assert all_history(server) == history  # read back from the files now
    # Every past state rebuilds from the journal.
    for past_version, past_state in states[::7]:
        got, etag = state_and_version(server, f"?version={past_version}")
        assert etag == past_version and strict_equal(got, past_state), past_version
    assert fire(server, {"type": "set", "path": "/after", "value": "restart"}) == 121
    stop(server)

    server = start(reactord, data_dir)
    assert state_and_version(server) == ({**state, "after": "restart"}, 121)


def test_a_directory_of_the_former_format_is_read_and_appends_go_to_a_segment_of_the_current_one(reactord, data_dir):
    (data_dir / "journal").mkdir(parents=True)
    (data_dir / "snapshots").mkdir()
    snapshot_path(data_dir, 0).write_bytes(encode_header(b"RSNP", 0, format=1) + encode_record(0, b'{"n":10}'))
    segment_path(data_dir, 1).write_bytes(
        encode_header(b"RJNL", 1, format=1) + encode_record(1, b'{"type":"increment","path":"/n"}') + encode_record(2, b'{"type":"increment","path":"/n"}')
    )
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({"n": 12}, 2)
    assert post_events(server, {"type": "increment", "path": "/n"}, headers={"Idempotency-Key": "up"}).json() == {"version": 3}
    stop(server)
    assert segment_versions(data_dir) == [1, 3]
    assert parse_file(segment_path(data_dir, 1)).format == 1  # left as it was
    assert parse_file(segment_path(data_dir, 3)).format == 3
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({"n": 13}, 3)
    assert [line["version"] for line in all_history(server)] == [1, 2, 3]
    replay = post_events(server, {"type": "increment", "path": "/n"}, headers={"Idempotency-Key": "up"})
    assert (replay.json(), replay.header("Idempotent-Replayed")) == ({"version": 3}, "true")


def test_the_initial_state_only_seeds_a_fresh_directory(reactord, data_dir, tmp_path):
    first = tmp_path / "first.json"
    first.write_text('{"seed": 1}')
    server = start(reactord, data_dir, "--initial-state", str(first))
    fire(server, {"type": "increment", "path": "/n"})
    stop(server)
    second = tmp_path / "second.json"
    second.write_text('{"other": 2}')
    server = start(reactord, data_dir, "--initial-state", str(second))
    assert state_and_version(server) == ({"seed": 1, "n": 1}, 1)
    assert "--initial-state is not used" in server.log()


def test_many_concurrent_clients_get_contiguous_versions_that_survive_a_restart(reactord, data_dir):
    server = start(reactord, data_dir)
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def client(number: int):
        try:
            versions = []
            for i in range(25):
                answer = post_events(server, {"type": "append", "path": f"/c{number}", "value": i})
                assert answer.status == 200, answer
                versions.append(answer.json()["version"])
            results[number] = versions
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert not errors, errors
    versions = sorted(v for vs in results.values() for v in vs)
    assert versions == list(range(1, 201))
    for vs in results.values():
        assert vs == sorted(vs)
    expected = {f"c{n}": list(range(25)) for n in range(8)}
    assert state_and_version(server) == (expected, 200)
    assert journaled_versions(data_dir) == list(range(1, 201))
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server) == (expected, 200)


# ---------------------------------------------------------------------------------------------
# GET /history


def test_history_lists_the_events_as_json_lines(reactord, data_dir):
    server = start(reactord, data_dir)
    events = [
        {"type": "set", "path": "/a", "value": 1},
        {"type": "increment", "path": "/a", "by": 2},
        {"type": "append", "path": "/list", "value": "ünï ✓\n\"q\""},
        {"type": "merge", "path": "", "value": {"m": {"x": None}}},
        {"type": "patch", "ops": [{"op": "remove", "path": "/a"}]},
    ]
    for event in events:
        fire(server, event)
    answer, lines = history_page(server)
    assert answer.status == 200, answer
    assert answer.header("Content-Type") == "application/x-ndjson"
    assert answer.header("Reactor-Oldest-Version") == "0"
    assert answer.header("Reactor-Version") == "5"
    assert [line["version"] for line in lines] == [1, 2, 3, 4, 5]
    for line, event in zip(lines, events):
        assert set(line) == {"version", "event"}
        assert strict_equal(line["event"], event), (line, event)
    assert [line["version"] for line in history_page(server, since=2)[1]] == [3, 4, 5]
    assert [line["version"] for line in history_page(server, since=0, limit=2)[1]] == [1, 2]
    assert [line["version"] for line in history_page(server, since=3, limit=1)[1]] == [4]
    answer, lines = history_page(server, since=5)
    assert answer.status == 200 and lines == [] and answer.body == b""
    assert answer.header("Reactor-Version") == "5"


def test_history_pages_default_to_100_and_allow_up_to_10000(reactord, data_dir):
    server = start(reactord, data_dir)
    assert fire(server, [{"type": "increment", "path": "/n"}] * 150) == 150
    assert [line["version"] for line in history_page(server)[1]] == list(range(1, 101))
    assert [line["version"] for line in history_page(server, since=100)[1]] == list(range(101, 151))
    assert len(history_page(server, limit=10000)[1]) == 150
    assert len(history_page(server, limit=1)[1]) == 1


@pytest.mark.parametrize(
    "query, name",
    [
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("limit=-1", "limit"),
        ("limit=ten", "limit"),
        ("limit=", "limit"),
        ("limit=1.5", "limit"),
        ("since=-1", "since"),
        ("since=abc", "since"),
        ("since=1e3", "since"),
        ("since=99999999999999999999999", "since"),
    ],
)
def test_history_bad_parameters_are_400(reactord, data_dir, query, name):
    server = start(reactord, data_dir)
    fire(server, {"type": "increment", "path": "/n"})
    problem = assert_problem(request(server, "GET", "/history?" + query), 400, "invalid-parameter")
    assert name in problem["detail"], problem


def test_history_without_a_data_dir_is_not_kept(server):
    fire(server, {"type": "increment", "path": "/n"})
    assert_problem(request(server, "GET", "/history"), 404, "history-not-kept")
    assert_problem(request(server, "GET", "/history?since=0&limit=5"), 404, "history-not-kept")
    # The current version is still served by /state?version=N; earlier ones are not kept.
    assert state_and_version(server, "?version=1") == ({"n": 1}, 1)
    assert_problem(request(server, "GET", "/state?version=0"), 404, "history-not-kept")


def test_history_across_segments_read_back_from_the_files(reactord, data_dir):
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    payload = "x" * 300
    for i in range(60):
        fire(server, {"type": "set", "path": f"/k{i % 7}", "value": f"{i}-{payload}"})
    segments = segment_versions(data_dir)
    assert len(segments) >= 4, segments
    assert segments[0] == 1
    # Each segment starts where the one before it ended, and none grows much past the limit.
    expected_first = 1
    for first in segments:
        parsed = parse_file(segment_path(data_dir, first))
        assert parsed.version == first and parsed.records[0].version == expected_first
        expected_first = parsed.records[-1].version + 1
        if first != segments[-1]:
            assert parsed.size <= 4096 or len(parsed.records) == 1, (first, parsed.size)
    stop(server)
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    history = all_history(server, limit=7)
    assert [line["version"] for line in history] == list(range(1, 61))
    assert history[59]["event"] == {"type": "set", "path": f"/k{59 % 7}", "value": f"59-{payload}"}
    # Pages that start inside a later segment.
    for since in (segments[1] - 1, segments[2], 58):
        lines = history_page(server, since=since, limit=3)[1]
        assert [line["version"] for line in lines] == list(range(since + 1, min(since + 4, 61)))


# ---------------------------------------------------------------------------------------------
# GET /state?version=N


def test_state_at_a_past_version(reactord, data_dir):
    server = start(reactord, data_dir)
    states = {0: {}}
    events = [
        {"type": "set", "path": "/game", "value": {"score": 0, "players": ["a"]}},
        {"type": "increment", "path": "/game/score", "by": 5},
        {"type": "append", "path": "/game/players", "value": "b"},
        {"type": "remove", "path": "/game/score"},
        {"type": "set", "path": "/other", "value": True},
    ]
    for event in events:
        version = fire(server, event)
        states[version] = state_and_version(server)[0]
    for version, state in states.items():
        answer = request(server, "GET", f"/state?version={version}")
        assert answer.status == 200, answer
        assert answer.header("ETag") == f'"{version}"'
        assert answer.header("Content-Type") == "application/json"
        assert strict_equal(answer.json(), state), version
    assert state_and_version(server, "?version=2&path=/game/score") == (5, 2)
    assert state_and_version(server, "?version=3&path=/game/players") == (["a", "b"], 3)
    assert state_and_version(server, "?path=/game/players/1&version=3") == ("b", 3)
    assert_problem(request(server, "GET", "/state?version=4&path=/game/score"), 404, "path-not-found")
    assert_problem(request(server, "GET", "/state?version=0&path=/game"), 404, "path-not-found")
    problem = assert_problem(request(server, "GET", "/state?version=6"), 404, "version-not-found")
    assert problem.get("currentVersion") == 5
    assert_problem(request(server, "GET", "/state?version=99999"), 404, "version-not-found")
    for bad in ("abc", "-1", "1.0", "", "0x1"):
        assert_problem(request(server, "GET", f"/state?version={bad}"), 400, "invalid-parameter")
    stop(server)
    server = start(reactord, data_dir)
    for version, state in states.items():
        assert state_and_version(server, f"?version={version}") == (state, version)


# ---------------------------------------------------------------------------------------------
# Snapshots


def wait_for_snapshot(server, data_dir: Path, version: int) -> None:
    """Waits until the snapshot at `version` is the only one, and the server reports it as its oldest
    (it is then done with it: the next snapshot can start)."""

    def settled():
        if snapshot_versions(data_dir) != [version]:
            return False
        answer = request(server, "GET", f"/history?since={version}&limit=1")
        return answer.status == 200 and answer.header("Reactor-Oldest-Version") == str(version)

    wait_until(settled, message=f"a single snapshot at version {version} (there are {snapshot_versions(data_dir)})")


def test_snapshots_trim_the_journal_and_the_history_before_them(reactord, data_dir):
    flags = ("--snapshot-events", "10", "--segment-bytes", "4096")
    server = start(reactord, data_dir, *flags)
    states = {}
    for i in range(1, 106):
        assert fire(server, {"type": "set", "path": f"/k{i % 5}", "value": f"{i}:" + "y" * 200}) == i
        states[i] = state_and_version(server)[0]
        if i % 10 == 0:
            # Every 10th event is followed by a snapshot of its version; waiting for it makes the
            # next one start exactly 10 events later.
            wait_for_snapshot(server, data_dir, i)
    oldest = 100
    assert not list((data_dir / "snapshots").glob("*.tmp"))
    snapshot = parse_file(snapshot_path(data_dir, oldest))
    assert (snapshot.magic, snapshot.version) == (b"RSNP", oldest)
    assert snapshot.records[0].version == oldest and strict_equal(snapshot.records[0].json(), states[oldest])
    # The segments whose records all precede the snapshot are gone, but for the one that was being
    # appended to when the snapshot was taken (it goes with the next snapshot).
    segments = segment_versions(data_dir)
    before_snapshot = [first for first, following in zip(segments, segments[1:]) if following <= oldest + 1]
    assert len(before_snapshot) <= 1, (segments, oldest)
    assert segments[0] > 80, segments
    assert segments[-1] <= 101, segments
    assert "snapshot written" in server.log()

    for since in (0, 1, 50, segments[0] - 2):
        gone = assert_problem(request(server, "GET", f"/history?since={since}"), 410, "history-gone")
        assert gone["oldestVersion"] == oldest, gone
    for version in (0, 1, 50, 99):
        assert_problem(request(server, "GET", f"/state?version={version}"), 410, "history-gone")
    # Recent versions still work.
    answer, lines = history_page(server, since=oldest)
    assert answer.status == 200 and answer.header("Reactor-Oldest-Version") == str(oldest)
    assert [line["version"] for line in lines] == list(range(101, 106))
    for version in range(oldest, 106):
        assert state_and_version(server, f"?version={version}") == (states[version], version)
    stop(server)

    server = start(reactord, data_dir, *flags)
    assert state_and_version(server) == (states[105], 105)
    assert f"snapshot={oldest}" in server.log() and "replayed=5" in server.log(), server.log()
    assert_problem(request(server, "GET", "/history?since=0"), 410, "history-gone")
    assert_problem(request(server, "GET", "/state?version=99"), 410, "history-gone")
    assert [line["version"] for line in all_history(server, since=oldest)] == list(range(101, 106))
    assert state_and_version(server, "?version=103") == (states[103], 103)
    assert fire(server, {"type": "increment", "path": "/n"}) == 106


def test_snapshot_bytes_triggers_snapshots_too(reactord, data_dir):
    # Each event is larger than --snapshot-bytes (a snapshot follows each) and than --segment-bytes
    # (each starts a segment).
    flags = ("--snapshot-bytes", "3000", "--segment-bytes", "4096")
    server = start(reactord, data_dir, *flags)
    for version in (1, 2, 3):
        assert fire(server, {"type": "set", "path": f"/k{version}", "value": "z" * 5000}) == version
        wait_for_snapshot(server, data_dir, version)
    wait_until(lambda: segment_versions(data_dir) == [3], message=f"only segment 3 left ({segment_versions(data_dir)})")
    for since in (0, 1):
        assert_problem(request(server, "GET", f"/history?since={since}"), 410, "history-gone")
    assert [line["version"] for line in history_page(server, since=2)[1]] == [3]
    assert_problem(request(server, "GET", "/state?version=2"), 410, "history-gone")
    assert state_and_version(server, "?version=3")[1] == 3
    stop(server)
    server = start(reactord, data_dir, *flags)
    assert state_and_version(server)[1] == 3
    assert "snapshot=3" in server.log()


# ---------------------------------------------------------------------------------------------
# Start-up recovery: a torn tail is cut off, damage is refused


def fire_five(server) -> list[object]:
    """Versions 1-5, each a different state; the states after each, [state0..state5]."""
    states = [{}]
    for i in range(1, 6):
        fire(server, {"type": "set", "path": f"/v{i}", "value": "w" * (10 * i)})
        states.append(state_and_version(server)[0])
    return states


def tear(path: Path, how: str) -> tuple[int, bool]:
    """Damages the end of a segment as a crash mid-write would. Returns (the offset recovery must
    cut at, whether the last whole record is lost with it)."""
    parsed = parse_file(path)
    last = parsed.records[-1]
    room = parsed.room
    assert parsed.trailing == b"" and parsed.records_end == last.end
    # The tears of a file that grows with each write (`--fsync never`, or a journal written before
    # the writer kept room) are made without the room; the one of a write over it, with it.
    data = path.read_bytes()[: last.end]
    next_record = encode_record(last.version + 1, b'{"type":"increment","path":"/n"}')
    if how == "unwritten-sector":
        # A write of two records over the room, of which the disk got the second's sectors only.
        assert room > 0, "a server that syncs keeps room after its records"
        filler = b'{"type":"set","path":"/f","value":"' + b"f" * 1100 + b'"}'
        write = encode_record(last.version + 1, filler) + encode_record(last.version + 2, b'{"type":"increment","path":"/n"}')
        written = bytearray(data + write + bytes(room))
        first_sector = (last.end // 512 + 1) * 512
        written[last.end : first_sector + 512] = bytes(first_sector + 512 - last.end)
        path.write_bytes(bytes(written))
        return last.end, False
    if how == "partial-header":
        path.write_bytes(data + next_record[:7])
        return last.end, False
    if how == "partial-payload":
        path.write_bytes(data + next_record[:-5])
        return last.end, False
    if how == "random-bytes":
        path.write_bytes(data + random.Random(7).randbytes(37))
        return last.end, False
    if how == "whole-record-bad-checksum":
        path.write_bytes(data + next_record[:-1] + bytes([next_record[-1] ^ 0x20]))
        return last.end, False
    if how == "cut-mid-record":
        path.write_bytes(data[: last.end - 5])
        return last.offset, True
    if how == "cut-in-record-header":
        path.write_bytes(data[: last.offset + 9])
        return last.offset, True
    raise ValueError(how)


TEARS = ["partial-header", "partial-payload", "random-bytes", "unwritten-sector", "whole-record-bad-checksum", "cut-mid-record", "cut-in-record-header"]


@pytest.mark.parametrize("how", TEARS)
def test_a_torn_final_record_is_cut_off_at_start_up(reactord, data_dir, how):
    server = start(reactord, data_dir)
    states = fire_five(server)
    server.kill()
    segment = data_dir / FIRST_SEGMENT
    offset, loses_last = tear(segment, how)
    damaged = segment.read_bytes()

    # `check` reports it, exits 0, and changes nothing.
    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 0, text(done)
    output = done.stdout.decode()
    warnings = [line for line in output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, output
    assert FIRST_SEGMENT in warnings[0] and f"offset {offset}" in warnings[0], output
    assert any(line.startswith("ok:") for line in output.splitlines()), output
    assert segment.read_bytes() == damaged

    server = start(reactord, data_dir)
    last = 4 if loses_last else 5
    assert state_and_version(server) == (states[last], last)
    warnings = torn_warnings(server)
    assert len(warnings) == 1, server.log()
    assert FIRST_SEGMENT in warnings[0] and f"offset {offset}" in warnings[0], warnings[0]
    assert segment.stat().st_size == offset
    assert readyz(server) == (200, {"status": "ready", "version": last})
    # New events go after the cut, and survive another restart.
    assert fire(server, {"type": "set", "path": "/after", "value": 1}) == last + 1
    assert journaled_versions(data_dir) == list(range(1, last + 2))
    assert parse_file(segment).trailing == b""
    stop(server)
    assert parse_file(segment).room == 0, "a segment closed by a clean stop ends with its records"
    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 0 and "warning" not in done.stdout.decode(), text(done)
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({**states[last], "after": 1}, last + 1)
    assert not torn_warnings(server)


def test_a_request_of_several_events_is_kept_whole_or_not_at_all_across_a_crash(reactord, data_dir):
    server = start(reactord, data_dir, "--fsync", "always")
    assert fire(server, {"type": "increment", "path": "/n"}) == 1
    batch = [{"type": "increment", "path": "/n"}, {"type": "append", "path": "/l", "value": "x"}, {"type": "increment", "path": "/n", "by": 10}]
    keyed = {"Idempotency-Key": "order-17"}
    answer = post_events(server, batch, headers=keyed)
    assert (answer.status, answer.json()) == (200, {"version": 4, "applied": 3})
    server.kill()
    # Each record of the request but its last says that the next holds more of it.
    segment = data_dir / FIRST_SEGMENT
    records = parse_file(segment).records
    assert [(record.version, record.continued) for record in records] == [(1, False), (2, True), (3, True), (4, False)]
    assert records[2].json() == batch[1]
    # What a crash leaves when it comes between the pieces of a write over 1 MiB, the request's
    # records in both: its first two records, and not its last, which carried the key's answer.
    with open(segment, "r+b") as file:
        file.truncate(records[3].offset)

    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 0, text(done)
    output = done.stdout.decode()
    assert f"{FIRST_SEGMENT} at offset {records[1].offset}: versions 2 to 3, to be truncated there" in output, output
    assert "last version 1" in output, output

    server = start(reactord, data_dir, "--fsync", "always")
    assert state_and_version(server) == ({"n": 1}, 1)
    assert f"{FIRST_SEGMENT} at offset {records[1].offset}: versions 2 to 3, truncated there" in server.log(), server.log()
    assert segment.stat().st_size == records[1].offset
    # The client never heard, and retries: the request applies once, all of it.
    retry = post_events(server, batch, headers=keyed)
    assert (retry.status, retry.json(), retry.header("Idempotent-Replayed")) == (200, {"version": 4, "applied": 3}, None)
    assert state_and_version(server) == ({"n": 12, "l": ["x"]}, 4)
    server.kill()
    server = start(reactord, data_dir, "--fsync", "always")
    assert state_and_version(server) == ({"n": 12, "l": ["x"]}, 4)
    replayed = post_events(server, batch, headers=keyed)
    assert (replayed.json(), replayed.header("Idempotent-Replayed")) == ({"version": 4, "applied": 3}, "true")


@pytest.mark.parametrize("leftover", ["empty-new-segment", "new-segment-with-half-a-header", "snapshot-temporary-file"])
def test_what_a_crash_leaves_besides_records_is_cleaned_up_or_ignored(reactord, data_dir, leftover):
    server = start(reactord, data_dir)
    states = fire_five(server)
    server.kill()
    if leftover == "empty-new-segment":
        path = segment_path(data_dir, 6)
        path.write_bytes(b"")
    elif leftover == "new-segment-with-half-a-header":
        path = segment_path(data_dir, 6)
        path.write_bytes(b"RJNL\x01\x00\x00")
    else:
        path = data_dir / "snapshots" / "00000000000000000005.snapshot.tmp"
        path.write_bytes(b"RSNP\x01\x00\x00\x00" + bytes(20))
    assert reactord_tool("check", "--data-dir", str(data_dir)).returncode == 0
    server = start(reactord, data_dir)
    assert state_and_version(server) == (states[5], 5)
    assert fire(server, {"type": "set", "path": "/after", "value": 1}) == 6
    assert journaled_versions(data_dir) == [1, 2, 3, 4, 5, 6]
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({**states[5], "after": 1}, 6)
    stop(server)
    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 0 and "warning" not in done.stdout.decode(), text(done)


def test_a_crash_between_a_snapshot_and_the_removal_of_the_journal_before_it(reactord, data_dir, tmp_path):
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    for i in range(1, 51):
        fire(server, {"type": "set", "path": f"/k{i % 6}", "value": f"{i}" + "r" * 300})
    state, _ = state_and_version(server)
    stop(server)
    segments = {path.name: path.read_bytes() for path in (data_dir / "journal").glob("*.log")}
    assert len(segments) >= 3
    assert reactord_tool("compact", "--data-dir", str(data_dir)).returncode == 0
    # The segments come back, as if the crash came after the snapshot's rename but before they went.
    for name, data in segments.items():
        (data_dir / "journal" / name).write_bytes(data)
    assert reactord_tool("check", "--data-dir", str(data_dir)).returncode == 0
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    assert state_and_version(server) == (state, 50)
    assert fire(server, {"type": "increment", "path": "/n"}) == 51
    assert [line["version"] for line in all_history(server, since=50)] == [51]
    assert_problem(request(server, "GET", "/history?since=0"), 410, "history-gone")
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({**state, "n": 1}, 51)
    assert not torn_warnings(server)


def damage_early_record(path: Path, where: str) -> int:
    """Flips a byte of the second record (more follow it); the offset of that record."""
    record = parse_file(path).records[1]
    offsets = {
        "payload": record.offset + RECORD_HEADER_SIZE + 3,
        "checksum": record.offset + 4,
        "version": record.offset + 8,
        "length-low-byte": record.offset,
        "length-high-byte": record.offset + 3,
    }
    flip_byte(path, offsets[where], 0x01 if where == "length-low-byte" else 0x40)
    return record.offset


@pytest.mark.parametrize("where", ["payload", "checksum", "version", "length-low-byte", "length-high-byte"])
def test_damage_inside_the_journal_refuses_to_start(reactord, data_dir, where):
    server = start(reactord, data_dir)
    fire_five(server)
    stop(server)
    segment = data_dir / FIRST_SEGMENT
    offset = damage_early_record(segment, where)
    damaged = segment.read_bytes()

    stderr = refuse_to_start(data_dir)
    assert FIRST_SEGMENT in stderr and f"offset {offset}" in stderr, stderr
    assert segment.read_bytes() == damaged, "the damaged journal was changed"

    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 1, text(done)
    assert FIRST_SEGMENT in text(done) and f"offset {offset}" in text(done), text(done)
    assert segment.read_bytes() == damaged


def test_a_torn_record_in_a_segment_that_is_not_the_last_refuses_to_start(reactord, data_dir):
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    for i in range(40):
        fire(server, {"type": "set", "path": "/k", "value": "q" * 300})
    stop(server)
    segments = segment_versions(data_dir)
    assert len(segments) >= 2
    first = segment_path(data_dir, segments[0])
    last = parse_file(first).records[-1]
    first.write_bytes(first.read_bytes()[: last.end - 3])
    stderr = refuse_to_start(data_dir)
    assert first.name in stderr and f"offset {last.offset}" in stderr, stderr
    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 1 and first.name in text(done) and f"offset {last.offset}" in text(done), text(done)


def test_a_missing_segment_refuses_to_start(reactord, data_dir):
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    for i in range(60):
        fire(server, {"type": "set", "path": "/k", "value": "q" * 300})
    stop(server)
    segments = segment_versions(data_dir)
    assert len(segments) >= 3
    segment_path(data_dir, segments[1]).unlink()
    stderr = refuse_to_start(data_dir)
    assert segment_path(data_dir, segments[2]).name in stderr and "missing" in stderr, stderr
    assert reactord_tool("check", "--data-dir", str(data_dir)).returncode == 1


@pytest.mark.parametrize("where", ["payload", "header-magic", "trailing-bytes"])
def test_a_damaged_snapshot_refuses_to_start(reactord, data_dir, where):
    server = start(reactord, data_dir)
    fire_five(server)
    stop(server)
    snapshot = snapshot_path(data_dir, 0)
    relative = "snapshots/00000000000000000000.snapshot"
    if where == "payload":
        flip_byte(snapshot, HEADER_SIZE + RECORD_HEADER_SIZE, 0x01)  # "{" becomes "z"
        offset = HEADER_SIZE
    elif where == "header-magic":
        flip_byte(snapshot, 1, 0x20)
        offset = 0
    else:
        snapshot.write_bytes(snapshot.read_bytes() + b"extra")
        offset = snapshot.stat().st_size - 5
    stderr = refuse_to_start(data_dir)
    assert relative in stderr and f"offset {offset}" in stderr, stderr
    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 1 and relative in text(done) and f"offset {offset}" in text(done), text(done)


# ---------------------------------------------------------------------------------------------
# reactord check, compact, export, import


def test_check_a_sound_directory(reactord, data_dir):
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    for i in range(30):
        fire(server, {"type": "set", "path": "/k", "value": "c" * 300})
    stop(server)
    before = {name: (data_dir / name).read_bytes() for name in files_under(data_dir)}
    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 0, text(done)
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ok:"), lines
    assert "30" in lines[0], lines
    assert {name: (data_dir / name).read_bytes() for name in files_under(data_dir)} == before


def test_check_a_directory_that_is_not_one(tmp_path):
    done = reactord_tool("check", "--data-dir", str(tmp_path / "nothing-here"))
    assert done.returncode == 1, text(done)
    assert not (tmp_path / "nothing-here").exists()


def test_compact_keeps_the_state_and_drops_the_journal(reactord, data_dir):
    server = start(reactord, data_dir, "--segment-bytes", "4096")
    for i in range(50):
        fire(server, {"type": "set", "path": f"/k{i % 4}", "value": f"{i}" + "p" * 200})
    state, version = state_and_version(server)
    stop(server)
    assert len(segment_versions(data_dir)) >= 2
    done = reactord_tool("compact", "--data-dir", str(data_dir))
    assert done.returncode == 0, text(done)
    assert "50" in done.stdout.decode(), text(done)
    assert snapshot_versions(data_dir) == [50]
    assert segment_versions(data_dir) == []
    assert strict_equal(parse_file(snapshot_path(data_dir, 50)).records[0].json(), state)
    assert reactord_tool("check", "--data-dir", str(data_dir)).returncode == 0

    server = start(reactord, data_dir, "--segment-bytes", "4096")
    assert state_and_version(server) == (state, version)
    assert_problem(request(server, "GET", "/history?since=0"), 410, "history-gone")
    assert_problem(request(server, "GET", "/state?version=49"), 410, "history-gone")
    answer, lines = history_page(server, since=50)
    assert answer.status == 200 and lines == [] and answer.header("Reactor-Oldest-Version") == "50"
    assert fire(server, {"type": "increment", "path": "/n"}) == 51
    assert segment_versions(data_dir) == [51]
    assert [line["version"] for line in all_history(server, since=50)] == [51]
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({**state, "n": 1}, 51)
    # Compacting twice in a row is harmless.
    stop(server)
    assert reactord_tool("compact", "--data-dir", str(data_dir)).returncode == 0
    assert reactord_tool("compact", "--data-dir", str(data_dir)).returncode == 0
    assert snapshot_versions(data_dir) == [51] and segment_versions(data_dir) == []


def export_lines(data_dir: Path) -> list[dict]:
    done = reactord_tool("export", "--data-dir", str(data_dir))
    assert done.returncode == 0, text(done)
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_export_then_import_gives_the_same_state_and_versions(reactord, data_dir, tmp_path):
    server = start(reactord, data_dir)
    random_history(server, 60, seed=11)
    state, version = state_and_version(server)
    history = all_history(server)
    stop(server)

    lines = export_lines(data_dir)
    assert lines[0] == {"version": 0, "state": {}}
    assert lines[1:] == history
    exported = tmp_path / "export.jsonl"
    done = reactord_tool("export", "--data-dir", str(data_dir), "-o", str(exported))
    assert done.returncode == 0, text(done)
    assert [json.loads(line) for line in exported.read_text().splitlines()] == lines

    for source in ("file", "stdin"):
        target = tmp_path / f"imported-{source}"
        if source == "file":
            done = reactord_tool("import", "--data-dir", str(target), str(exported))
        else:
            done = reactord_tool("import", "--data-dir", str(target), "-", input=exported.read_bytes())
        assert done.returncode == 0, text(done)
        assert reactord_tool("check", "--data-dir", str(target)).returncode == 0
        server = start(reactord, target)
        assert state_and_version(server) == (state, version)
        assert strict_equal(state_and_version(server)[0], state)
        assert all_history(server) == history
        assert fire(server, {"type": "set", "path": "/imported", "value": source}) == version + 1
        stop(server)


def test_a_retry_after_an_export_and_import_is_answered_not_applied_again(reactord, data_dir, tmp_path):
    server = start(reactord, data_dir)
    keyed = {"Idempotency-Key": "order-9", "Content-Type": "application/json"}
    batch_keyed = {"Idempotency-Key": "order-10", "Content-Type": "application/json"}
    event = {"type": "increment", "path": "/n", "by": 5}
    batch = [{"type": "increment", "path": "/n"}, {"type": "append", "path": "/l", "value": 1}]
    assert request(server, "POST", "/events", body=event, headers=keyed).json() == {"version": 1}
    assert request(server, "POST", "/events", body=batch, headers=batch_keyed).json() == {"version": 3, "applied": 2}
    fire(server, {"type": "set", "path": "/x", "value": 1})
    stop(server)
    # Compacted first, so that one answer rides on the snapshot's line and the others on events'.
    assert reactord_tool("compact", "--data-dir", str(data_dir)).returncode == 0
    server = start(reactord, data_dir)
    fire(server, {"type": "set", "path": "/y", "value": 2})
    assert request(server, "POST", "/events", body=event, headers={**keyed, "Idempotency-Key": "order-11"}).json() == {"version": 6}
    stop(server)

    exported = tmp_path / "export.jsonl"
    done = reactord_tool("export", "--data-dir", str(data_dir), "-o", str(exported))
    assert done.returncode == 0, text(done)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [line["version"] for line in lines] == [4, 5, 6]
    assert sorted(answer["version"] for answer in lines[0]["answers"]) == [1, 3]
    assert "answers" not in lines[1] and [answer["version"] for answer in lines[2]["answers"]] == [6]

    target = tmp_path / "imported"
    done = reactord_tool("import", "--data-dir", str(target), str(exported))
    assert done.returncode == 0, text(done)
    server = start(reactord, target)
    for headers, body, answer in [(keyed, event, {"version": 1}), (batch_keyed, batch, {"version": 3, "applied": 2}),
                                  ({**keyed, "Idempotency-Key": "order-11"}, event, {"version": 6})]:
        retry = request(server, "POST", "/events", body=body, headers=headers)
        assert retry.status == 200 and retry.json() == answer, (retry.status, retry.body)
        assert retry.header("Idempotent-Replayed") == "true"
    # Another request under a key already answered is still told so.
    assert_problem(request(server, "POST", "/events", body={"type": "increment", "path": "/n"}, headers=keyed), 422, "idempotency-key-reused")
    assert state_and_version(server) == ({"n": 11, "l": [1], "x": 1, "y": 2}, 6)


def test_export_after_a_snapshot_starts_at_the_snapshot(reactord, data_dir, tmp_path):
    server = start(reactord, data_dir)
    for i in range(10):
        fire(server, {"type": "append", "path": "/l", "value": i})
    stop(server)
    assert reactord_tool("compact", "--data-dir", str(data_dir)).returncode == 0
    server = start(reactord, data_dir)
    fire(server, {"type": "append", "path": "/l", "value": 10})
    fire(server, {"type": "increment", "path": "/n"})
    state, _ = state_and_version(server)
    stop(server)
    lines = export_lines(data_dir)
    assert lines[0] == {"version": 10, "state": {"l": list(range(10))}}
    assert [line["version"] for line in lines[1:]] == [11, 12]
    exported = tmp_path / "export.jsonl"
    exported.write_text("".join(json.dumps(line) + "\n" for line in lines))
    target = tmp_path / "imported"
    assert reactord_tool("import", "--data-dir", str(target), str(exported)).returncode == 0
    server = start(reactord, target)
    assert state_and_version(server) == (state, 12)
    assert_problem(request(server, "GET", "/history?since=0"), 410, "history-gone")
    assert [line["version"] for line in all_history(server, since=10)] == [11, 12]


def good_export() -> list[dict]:
    return [
        {"version": 0, "state": {}},
        {"version": 1, "event": {"type": "set", "path": "/a", "value": 1}},
        {"version": 2, "event": {"type": "increment", "path": "/a"}},
        {"version": 3, "event": {"type": "append", "path": "/l", "value": "x"}},
    ]


def lines_text(lines) -> bytes:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()


@pytest.mark.parametrize(
    "case, line",
    [
        ("gap", 3),
        ("repeated-version", 3),
        ("event-does-not-apply", 3),
        ("not-json", 3),
        ("no-state-first", 1),
        ("unknown-event-type", 2),
        ("no-event-member", 4),
    ],
)
def test_a_bad_export_is_refused_naming_the_line_and_leaves_no_journal(reactord, tmp_path, case, line):
    lines: list = good_export()
    if case == "gap":
        lines[2] = {"version": 4, "event": {"type": "increment", "path": "/a"}}
    elif case == "repeated-version":
        lines[2] = {"version": 1, "event": {"type": "increment", "path": "/a"}}
    elif case == "event-does-not-apply":
        lines[2] = {"version": 2, "event": {"type": "remove", "path": "/missing"}}
    elif case == "not-json":
        lines[2] = '{"version": 2, "event": '
    elif case == "no-state-first":
        lines = lines[1:]
    elif case == "unknown-event-type":
        lines[1] = {"version": 1, "event": {"type": "teleport", "path": "/a"}}
    elif case == "no-event-member":
        lines[3] = {"version": 3, "state": {}}
    exported = tmp_path / "bad.jsonl"
    exported.write_bytes(lines_text(lines))
    target = tmp_path / "target"
    done = reactord_tool("import", "--data-dir", str(target), str(exported))
    assert done.returncode != 0, text(done)
    assert f"line {line}" in text(done), text(done)
    assert not target.exists(), f"a failed import left {sorted(files_under(target))} behind"
    # The directory is still good for an import, and for a server.
    exported.write_bytes(lines_text(good_export()))
    done = reactord_tool("import", "--data-dir", str(target), str(exported))
    assert done.returncode == 0, text(done)
    server = start(reactord, target)
    assert state_and_version(server) == ({"a": 2, "l": ["x"]}, 3)


# ---------------------------------------------------------------------------------------------
# Bad input to the data directory and its tools: an error, never a crash


def serve_exit(data_dir: Path, *, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """reactord on `data_dir`, expected to refuse to start: the finished process."""
    return subprocess.run([REACTORD_BIN, "--port", "0", "--data-dir", str(data_dir)], stdin=subprocess.DEVNULL, capture_output=True,
                          env=clean_environment(), timeout=10, cwd=cwd)


def test_a_data_directory_of_one_character_serves_and_imports(reactord, tmp_path):
    """`--data-dir d` (or `.`) once trapped in Foundation, finding the directory's parent."""
    server = reactord("--data-dir", "d", cwd=tmp_path)
    assert fire(server, {"type": "increment", "path": "/n"}) == 1
    stop(server)
    assert (tmp_path / "d" / "journal").is_dir()
    exported = tmp_path / "export.jsonl"
    exported.write_bytes(lines_text(good_export()))
    done = subprocess.run([REACTORD_BIN, "import", "--data-dir", "q", str(exported)], capture_output=True, env=clean_environment(), timeout=20, cwd=tmp_path)
    assert done.returncode == 0, text(done)
    assert reactord_tool("check", "--data-dir", str(tmp_path / "q")).returncode == 0


@pytest.mark.parametrize("case", ["segment-at-version-0", "record-at-the-highest-version", "snapshot-at-the-highest-version"])
def test_crafted_versions_are_damage_named_by_check_and_start_not_a_crash(reactord, data_dir, case):
    """Versions no writer makes (a segment from version 0, a record or a snapshot at 2^64 - 1)
    once overflowed arithmetic, killing `check` and the server: they are damage, with the file."""
    server = start(reactord, data_dir)
    stop(server)
    highest = 2**64 - 1
    if case == "segment-at-version-0":
        for first in segment_versions(data_dir):
            segment_path(data_dir, first).unlink()
        segment_path(data_dir, 0).write_bytes(encode_header(b"RJNL", 0))
        named = "journal/00000000000000000000.log"
    elif case == "record-at-the-highest-version":
        segment_path(data_dir, 1).write_bytes(encode_header(b"RJNL", 1) + encode_record(highest, b'{"type":"increment","path":"/n"}'))
        named = "journal/00000000000000000001.log"
    else:
        snapshot_path(data_dir, highest).write_bytes(encode_header(b"RSNP", highest) + encode_record(highest, b"{}"))
        named = f"snapshots/{highest}.snapshot"
    done = reactord_tool("check", "--data-dir", str(data_dir))
    assert done.returncode == 1 and named in text(done), (done.returncode, text(done))
    done = serve_exit(data_dir)
    assert done.returncode == 1 and named in text(done), (done.returncode, text(done)[-2000:])


def test_a_failed_export_leaves_the_previous_export_as_it_was(reactord, data_dir, tmp_path):
    """`export -o` writes beside the file and renames it over it once whole: an export that fails
    (the directory in use, here) does not empty last night's backup."""
    server = start(reactord, data_dir)
    fire(server, {"type": "increment", "path": "/n"})
    backup = tmp_path / "backup.jsonl"
    backup.write_bytes(b"the previous export\n")
    done = reactord_tool("export", "--data-dir", str(data_dir), "-o", str(backup))
    assert done.returncode == 1 and "in use" in text(done), text(done)
    assert backup.read_bytes() == b"the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("backup")) == ["backup.jsonl"], "a partial file was left behind"
    stop(server)
    assert reactord_tool("export", "--data-dir", str(data_dir), "-o", str(backup)).returncode == 0
    assert [json.loads(line)["version"] for line in backup.read_text().splitlines()] == [0, 1]


def test_an_import_at_a_version_past_what_clients_read_exactly_is_refused(tmp_path):
    """Versions reach clients as JSON integers: past 2^53 - 1 a JavaScript client misreads them,
    and past 2^63 - 1 the export would not import again. The journal holds none beyond."""
    exported = tmp_path / "high.jsonl"
    exported.write_bytes(lines_text([{"version": 2**53, "state": {}}]))
    done = reactord_tool("import", "--data-dir", str(tmp_path / "target"), str(exported))
    assert done.returncode == 1 and "line 1" in text(done) and "highest" in text(done), text(done)
    assert not (tmp_path / "target").exists()
    exported.write_bytes(lines_text([{"version": 2**53 - 1, "state": {}}, {"version": 2**53, "event": {"type": "increment", "path": "/n"}}]))
    done = reactord_tool("import", "--data-dir", str(tmp_path / "target"), str(exported))
    assert done.returncode == 1 and "line 2" in text(done), text(done)


def test_an_imported_event_with_a_carriage_return_inside_keeps_history_one_line_per_event(reactord, tmp_path):
    """A CR inside an exported line (between its members) is not kept in the record's bytes:
    records become lines of /history and of the next export."""
    exported = tmp_path / "cr.jsonl"
    exported.write_bytes(b'{"version":0,"state":{}}\n{"version":1,"event":{"type":"increment",\r"path":"/n"}}\n'
                         b'{"version":2,"event":{"type":"increment","path":"/n"}}\n')
    assert reactord_tool("import", "--data-dir", str(tmp_path / "target"), str(exported)).returncode == 0
    server = start(reactord, tmp_path / "target")
    answer = request(server, "GET", "/history?since=0")
    assert answer.status == 200
    lines = answer.body.decode().splitlines()
    assert [json.loads(line)["version"] for line in lines] == [1, 2], answer.body


def test_check_and_export_read_a_directory_they_cannot_write(reactord, data_dir, tmp_path):
    """`check` verifies without changing anything, and so does `export`: a read-only copy (a
    backup on a read-only mount) is read under a shared lock rather than refused."""
    server = start(reactord, data_dir)
    fire(server, {"type": "increment", "path": "/n"})
    stop(server)
    mount_point = tmp_path / "read-only"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True, text=True)
    assert done.returncode == 0, f"cannot mount a tmpfs ({done.stderr.strip()}): this test needs root"
    try:
        shutil.copytree(data_dir, mount_point / "data")
        remount = subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], capture_output=True, text=True)
        assert remount.returncode == 0, remount.stderr
        done = reactord_tool("check", "--data-dir", str(mount_point / "data"))
        assert done.returncode == 0, text(done)
        done = reactord_tool("export", "--data-dir", str(mount_point / "data"))
        assert done.returncode == 0 and b'"version":1' in done.stdout, text(done)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_import_into_a_directory_that_holds_a_journal_is_refused(reactord, data_dir, tmp_path):
    server = start(reactord, data_dir)
    fire(server, {"type": "increment", "path": "/n"})
    stop(server)
    exported = tmp_path / "export.jsonl"
    exported.write_bytes(lines_text(good_export()))
    before = {name: (data_dir / name).read_bytes() for name in files_under(data_dir)}
    done = reactord_tool("import", "--data-dir", str(data_dir), str(exported))
    assert done.returncode != 0, text(done)
    assert "empty" in text(done), text(done)
    assert {name: (data_dir / name).read_bytes() for name in files_under(data_dir)} == before
    # A fresh directory a server started on once (only snapshot 0) is not empty either.
    fresh = tmp_path / "fresh"
    stop(start(reactord, fresh))
    done = reactord_tool("import", "--data-dir", str(fresh), str(exported))
    assert done.returncode != 0, text(done)


# ---------------------------------------------------------------------------------------------
# fsync modes


@pytest.mark.parametrize("ending", ["sigterm", "sigkill"])
@pytest.mark.parametrize("mode", ["always", "batch", "never"])
def test_every_fsync_mode_acknowledges_and_survives(reactord, data_dir, mode, ending):
    server = start(reactord, data_dir, "--fsync", mode)
    fire(server, {"type": "set", "path": "/mode", "value": mode})
    fire(server, [{"type": "append", "path": "/l", "value": i} for i in range(5)])
    with subscribe(server) as ws:
        next_json(ws)
        ws.send(json.dumps({"type": "fire", "id": "w", "event": {"type": "increment", "path": "/n", "by": 2}}))
        assert next_json(ws)["type"] == "patch"
        assert next_json(ws) == {"type": "ack", "id": "w", "version": 7}
    errors = []

    def client(n):
        try:
            for i in range(10):
                assert post_events(server, {"type": "append", "path": f"/c{n}", "value": i}).status == 200
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert not errors, errors
    state, version = state_and_version(server)
    assert version == 37
    if ending == "sigterm":
        stop(server)
    else:
        server.kill()
    server = start(reactord, data_dir, "--fsync", mode)
    assert state_and_version(server) == (state, version)
    assert not torn_warnings(server)
    assert [line["version"] for line in all_history(server)] == list(range(1, 38))


@pytest.mark.parametrize("ending", ["sigterm", "kill"])
def test_a_subscriber_resumes_across_a_restart(reactord, data_dir, ending):
    """The journal's last events, replayed at start-up, fill the resume window again: a client that
    reconnects after a restart gets what it missed as patches (WebSocket `since`, SSE
    `Last-Event-ID`), as it would have without the restart, not a snapshot."""
    server = start(reactord, data_dir, "--snapshot-events", "20")
    for i in range(30):
        assert fire(server, {"type": "set", "path": f"/k{i % 7}", "value": {"i": i, "l": [i] * (i % 3)}}) == i + 1
    at_24 = state_and_version(server, "?version=24")[0]
    wait_until(lambda: snapshot_versions(data_dir)[-1] == 20, 10, message="the snapshot of version 20")
    if ending == "sigterm":
        stop(server)
    else:
        server.kill()
    assert snapshot_versions(data_dir)[-1] == 20
    server = start(reactord, data_dir, "--snapshot-events", "20")
    state, version = state_and_version(server)
    assert version == 30
    assert fire(server, {"type": "increment", "path": "/n"}) == 31
    state = {**state, "n": 1}

    assert_resumes(server, 24, at_24, 31, state, "resumed after a restart")

    status, _, records = finished_stream(server, "/stream", "-H", "Last-Event-ID: 27")
    assert status == 200
    data = [record for record in records if "data" in record]
    assert [(id_version(r), r["event"]) for r in data] == [(str(v), "patch") for v in range(28, 32)]

    # Before the snapshot the start-up began from (version 20), the window holds nothing.
    with subscribe(server, since=12) as ws:
        message = next_json(ws)
        assert message["type"] == "snapshot" and message["version"] == 31 and message.get("resumed") is False, message


def history_of(server, **query) -> tuple[dict, str]:
    """The snapshot a new subscriber gets, and the name of the history it gives."""
    with subscribe(server, **query) as ws:
        message = next_json(ws)
    assert message["type"] == "snapshot" and isinstance(message.get("history"), str), message
    return message, message["history"]


def test_a_subscriber_resuming_on_a_server_that_started_over_gets_a_snapshot(reactord, data_dir):
    """Versions mean one state only within one history: a server without a data directory starts
    a new one at each start, as does a new or imported data directory. A client resuming with the
    history its version came from gets a fresh snapshot from a server that started over, even at
    the same version (which would otherwise send nothing, or another history's patches), and what
    it missed from the same server after a restart."""
    first = reactord()
    for i in range(3):
        fire(first, {"type": "set", "path": f"/old{i}", "value": i})
    _, old = history_of(first)
    first.stop()
    second = reactord()
    for i in range(5):
        fire(second, {"type": "set", "path": f"/new{i}", "value": i})
    snapshot, new = history_of(second)
    assert new != old
    for since in (3, 5):
        with subscribe(second, since=since, history=old) as ws:
            message = next_json(ws)
        assert message == {**snapshot, "resumed": False}, (since, message)
    status, _, records = finished_stream(second, f"/stream?history={old}", "-H", "Last-Event-ID: 3")
    assert status == 200 and [(r.get("event"), json.loads(r["data"]).get("resumed")) for r in records if "data" in r] == [("snapshot", False)], records
    # The same history resumes: patches, and nothing when up to date.
    with subscribe(second, since=3, history=new) as ws:
        assert [next_json(ws)["version"] for _ in range(2)] == [4, 5]
        assert_silent(ws)
    assert_problem(request(second, "GET", "/stream?history=a%20b"), 400, "invalid-parameter")

    # A data directory keeps its history across restarts, and an import starts another.
    server = start(reactord, data_dir)
    fire(server, {"type": "increment", "path": "/n"})
    _, kept = history_of(server)
    stop(server)
    server = start(reactord, data_dir)
    fire(server, {"type": "increment", "path": "/n"})
    with subscribe(server, since=1, history=kept) as ws:
        assert next_json(ws)["type"] == "patch"
    assert history_of(server)[1] == kept
    stop(server)


# ---------------------------------------------------------------------------------------------
# Acknowledgements, subscribers and reads only see journaled states


def test_subscribers_and_reads_only_see_journaled_versions(reactord, data_dir):
    server = start(reactord, data_dir, "--fsync", "always")
    stop_firing = threading.Event()
    errors = []

    def firer(n):
        try:
            i = 0
            while not stop_firing.is_set() and i < 150:
                answer = post_events(server, {"type": "append", "path": f"/f{n}", "value": i})
                assert answer.status == 200, answer
                version = answer.json()["version"]
                assert version in journaled_versions(data_dir), f"version {version} acknowledged before it was journaled"
                i += 1
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    with subscribe(server) as ws:
        snapshot = next_json(ws)
        mirror = snapshot["state"]
        threads = [threading.Thread(target=firer, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        seen = 0
        reader = http.client.HTTPConnection(HOST, server.port, timeout=5)
        try:
            while seen < 300:
                message = next_json(ws)
                assert message["type"] == "patch", message
                on_disk = journaled_versions(data_dir)
                assert on_disk and on_disk[-1] >= message["version"], f"patch {message['version']} sent before it was journaled"
                mirror = apply_patch(mirror, message["ops"])
                seen += 1
                if seen % 10 == 0:
                    reader.request("GET", "/state")
                    answer = reader.getresponse()
                    body = answer.read()
                    etag = int(answer.getheader("ETag").strip('"'))
                    assert etag <= journaled_versions(data_dir)[-1], f"GET /state served version {etag} before it was journaled"
                    assert json.loads(body) is not None
        finally:
            reader.close()
            stop_firing.set()
            for thread in threads:
                thread.join(20)
    assert not errors, errors
    assert strict_equal(mirror, state_and_version(server)[0])


def test_server_sent_events_only_carry_journaled_versions(reactord, data_dir):
    server = start(reactord, data_dir, "--fsync", "always")
    process = subprocess.Popen(
        ["curl", "-sS", "-N", "--max-time", "15", f"http://{HOST}:{server.port}/stream"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        ids: list[int] = []

        def read_ids(count: int) -> None:
            while len(ids) < count:
                line = process.stdout.readline().decode()
                assert line, f"the stream ended after ids {ids}"
                if line.startswith("id:"):
                    version = int(id_version({"id": line[3:].strip()}))
                    if version > 0:
                        assert version <= journaled_versions(data_dir)[-1], f"SSE sent version {version} before it was journaled"
                    ids.append(version)

        read_ids(1)  # the snapshot
        errors = []

        def firer():
            try:
                for _ in range(100):
                    fire(server, {"type": "increment", "path": "/n"})
            except BaseException as error:  # noqa: BLE001
                errors.append(error)

        thread = threading.Thread(target=firer)
        thread.start()
        try:
            read_ids(101)  # while events are being fired
        finally:
            thread.join(20)
        assert not errors, errors
        assert ids == list(range(0, 101))
    finally:
        process.kill()
        process.wait(5)


def test_websocket_fire_acks_come_after_the_journal(reactord, data_dir):
    server = start(reactord, data_dir)
    with subscribe(server) as ws:
        next_json(ws)
        for i in range(30):
            ws.send(json.dumps({"type": "fire", "id": f"e{i}", "event": {"type": "append", "path": "/log", "value": i}}))
        acks = 0
        while acks < 30:
            message = next_json(ws)
            if message["type"] == "ack":
                assert message["id"] == f"e{acks}" and message["version"] == acks + 1, message
                assert journaled_versions(data_dir)[-1] >= message["version"]
                acks += 1
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({"log": list(range(30))}, 30)


def test_idempotency_key_retries_with_a_data_dir(reactord, data_dir):
    server = start(reactord, data_dir)
    headers = {"Idempotency-Key": "once", "Content-Type": "application/json"}
    event = {"type": "increment", "path": "/n", "by": 3}
    first = request(server, "POST", "/events", body=event, headers=headers)
    assert first.status == 200 and first.json() == {"version": 1}
    fire(server, {"type": "set", "path": "/x", "value": 1})
    retry = request(server, "POST", "/events", body=event, headers=headers)
    assert retry.status == 200 and retry.json() == {"version": 1}
    assert retry.header("Idempotent-Replayed") == "true"
    batch_headers = {"Idempotency-Key": "batch", "Content-Type": "application/json"}
    batch = [{"type": "increment", "path": "/n"}, {"type": "append", "path": "/l", "value": 1}]
    assert request(server, "POST", "/events", body=batch, headers=batch_headers).json() == {"version": 4, "applied": 2}
    again = request(server, "POST", "/events", body=batch, headers=batch_headers)
    assert again.json() == {"version": 4, "applied": 2} and again.header("Idempotent-Replayed") == "true"
    assert state_and_version(server) == ({"n": 4, "x": 1, "l": [1]}, 4)
    assert journaled_versions(data_dir) == [1, 2, 3, 4]
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({"n": 4, "x": 1, "l": [1]}, 4)
    assert [line["event"]["type"] for line in all_history(server)] == ["increment", "set", "increment", "append"]


# ---------------------------------------------------------------------------------------------
# Disk errors: a file-size limit (RLIMIT_FSIZE) makes journal writes fail with EFBIG

FILE_SIZE_LIMIT = 64 * 1024


def limit_file_size(soft: int, hard: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))

    return apply


def fire_until_refused(server, ws=None, limit: int = 200):
    """Fires ~1 KiB events until one is refused; (the acknowledged [(version, state)], the refusal)."""
    acked = []
    expected = {}
    for i in range(limit):
        value = f"{i:04d}" + "v" * 1020
        answer = post_events(server, {"type": "set", "path": f"/k{i}", "value": value})
        if answer.status != 200:
            return acked, answer
        expected = {**expected, f"k{i}": value}
        acked.append((answer.json()["version"], expected))
    raise AssertionError(f"{limit} events of 1 KiB were all acknowledged under a {FILE_SIZE_LIMIT}-byte file-size limit")


def assert_died_of_no_signal(server):
    code = server.process.poll()
    assert code is None, f"reactord died (exit {code}; -25 is SIGXFSZ) after a write past the file-size limit:\n{server.log()[-3000:]}"


@pytest.mark.time_limit(60)
def test_a_failed_journal_write_is_undone_and_never_acknowledged(reactord, data_dir):
    server = start(reactord, data_dir, "--segment-bytes", "1048576", preexec_fn=limit_file_size(FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    with subscribe(server) as ws:
        assert next_json(ws)["version"] == 0
        acked, refused = fire_until_refused(server)
        assert_died_of_no_signal(server)
        assert len(acked) >= 30, len(acked)
        problem = assert_problem(refused, 503, "journal-unavailable")
        assert refused.header("Retry-After"), refused
        last_version, last_state = acked[-1]
        assert "journal" in problem["detail"], problem

        # The state is the last acknowledged one, and the server says it is not ready.
        assert state_and_version(server) == (last_state, last_version)
        status, body = readyz(server)
        assert status == 503 and body["status"] == "unready" and body["version"] == last_version, body
        assert request(server, "GET", "/livez").status == 200

        # Later events keep failing while the limit holds: HTTP, batches and WebSocket fires.
        for i in range(3):
            assert_problem(post_events(server, {"type": "set", "path": f"/late{i}", "value": "l" * 1024}), 503, "journal-unavailable")
        assert_problem(post_events(server, [{"type": "set", "path": "/b1", "value": "b" * 2000}] * 2), 503, "journal-unavailable")
        ws.send(json.dumps({"type": "fire", "id": "late", "event": {"type": "set", "path": "/w", "value": "w" * 2000}}))

        # The subscriber saw every acknowledged version and nothing else.
        versions = []
        while True:
            message = next_json(ws)
            if message["type"] == "patch":
                versions.append(message["version"])
                continue
            assert message["type"] == "error" and message["id"] == "late", message
            assert message["problem"]["type"] == "/problems/journal-unavailable", message
            break
        assert versions == [version for version, _ in acked], versions
        assert_silent(ws, 0.3)

        # Reads keep being served.
        assert state_and_version(server) == (last_state, last_version)
        assert [line["version"] for line in all_history(server)] == list(range(1, last_version + 1))
        assert state_and_version(server, f"?version={last_version - 1}") == (acked[-2][1], last_version - 1)
        with subscribe(server) as late:
            assert without_history(next_json(late)) == {"type": "snapshot", "version": last_version, "state": last_state}
        assert_died_of_no_signal(server)
    stop(server)

    # Without the limit: every acknowledged event is there, nothing else is.
    assert journaled_versions(data_dir) == list(range(1, last_version + 1))
    server = start(reactord, data_dir, "--segment-bytes", "1048576")
    assert state_and_version(server) == (last_state, last_version)
    assert readyz(server) == (200, {"status": "ready", "version": last_version})
    assert [line["version"] for line in all_history(server)] == list(range(1, last_version + 1))
    assert not torn_warnings(server)
    assert fire(server, {"type": "set", "path": "/after", "value": "x" * 1024}) == last_version + 1
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server)[1] == last_version + 1


@pytest.mark.time_limit(60)
def test_the_journal_accepts_events_again_once_writes_succeed(reactord, data_dir):
    server = start(reactord, data_dir, "--segment-bytes", "1048576", preexec_fn=limit_file_size(FILE_SIZE_LIMIT, resource.RLIM_INFINITY))
    acked, refused = fire_until_refused(server)
    assert_died_of_no_signal(server)
    assert_problem(refused, 503, "journal-unavailable")
    last_version, last_state = acked[-1]
    assert readyz(server)[0] == 503
    # Lift the limit on the running process: the next event is journaled and acknowledged, with
    # the version after the last acknowledged one (the refused ones left no gap).
    # A keyed request refused with a 503 is not remembered as answered: its retry applies it.
    keyed = {"Idempotency-Key": "retry-me", "Content-Type": "application/json"}
    event = {"type": "set", "path": "/keyed", "value": "k" * 2048}
    assert_problem(request(server, "POST", "/events", body=event, headers=keyed), 503, "journal-unavailable")
    resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert fire(server, {"type": "set", "path": "/back", "value": True}) == last_version + 1
    assert readyz(server) == (200, {"status": "ready", "version": last_version + 1})
    retry = request(server, "POST", "/events", body=event, headers=keyed)
    assert retry.status == 200 and retry.json() == {"version": last_version + 2}, retry
    assert retry.header("Idempotent-Replayed") is None
    expected = {**last_state, "back": True, "keyed": "k" * 2048}
    assert state_and_version(server) == (expected, last_version + 2)
    assert journaled_versions(data_dir) == list(range(1, last_version + 3))
    stop(server)
    server = start(reactord, data_dir)
    assert state_and_version(server) == (expected, last_version + 2)
    assert not torn_warnings(server)


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs, mounted for the test (root only: the test fails, never skips, without it)."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)], capture_output=True, text=True)
    assert done.returncode == 0, f"cannot mount a tmpfs ({done.stderr.strip()}): this test needs root"
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.mark.time_limit(90)
def test_a_full_disk_loses_nothing_acknowledged_and_takes_events_again_once_there_is_room(reactord, small_disk):
    """A real ENOSPC: the disk fills up while events flow (the journal's zeroed room first, then
    its records), events are refused with 503 and nothing acknowledged is lost; once the disk has
    room again, the next event is journaled, and a restart finds every acknowledged one."""
    data_dir = small_disk / "data"
    server = start(reactord, data_dir, "--segment-bytes", "1048576")
    acked, refused = fire_until_refused(server, limit=5000)
    assert_died_of_no_signal(server)
    # The records fill the disk, the room the journal zeroed ahead of them included: about 2,900
    # records of 1 KiB fit in 3 MiB; stopping at the room's first refusal would take 2,000.
    assert len(acked) >= 2600, len(acked)
    problem = assert_problem(refused, 503, "journal-unavailable")
    assert "No space left on device" in problem["detail"], problem
    last_version, last_state = acked[-1]
    assert state_and_version(server) == (last_state, last_version)
    assert readyz(server)[0] == 503
    assert_problem(post_events(server, {"type": "set", "path": "/late", "value": "l" * 1024}), 503, "journal-unavailable")

    done = subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert fire(server, {"type": "set", "path": "/back", "value": True}) == last_version + 1
    assert readyz(server) == (200, {"status": "ready", "version": last_version + 1})
    expected = {**last_state, "back": True}
    stop(server)
    assert journaled_versions(data_dir) == list(range(1, last_version + 2))
    server = start(reactord, data_dir, "--segment-bytes", "1048576")
    assert state_and_version(server) == (expected, last_version + 1)
    assert not torn_warnings(server)
    stop(server)


def test_a_snapshot_that_cannot_be_written_does_not_stop_events(reactord, data_dir):
    # Small segments keep every journal file far below the limit; the snapshots of a state that
    # grows past it fail.
    server = start(reactord, data_dir, "--segment-bytes", "4096", "--snapshot-events", "5",
                   preexec_fn=limit_file_size(FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    expected = {}
    for i in range(1, 101):
        value = f"{i:04d}" + "s" * 1020
        assert fire(server, {"type": "set", "path": f"/k{i}", "value": value}) == i
        expected[f"k{i}"] = value
    assert_died_of_no_signal(server)
    server.wait_for_log(r"cannot write a snapshot")
    assert readyz(server) == (200, {"status": "ready", "version": 100})
    assert state_and_version(server) == (expected, 100)
    oldest = snapshot_versions(data_dir)
    assert len(oldest) == 1 and 0 < oldest[0] < 70, oldest
    # Reads from the snapshot still written work, and the journal after it is all there.
    assert [line["version"] for line in all_history(server, since=oldest[0])] == list(range(oldest[0] + 1, 101))
    assert state_and_version(server, "?version=90")[1] == 90
    stop(server)
    assert not list((data_dir / "snapshots").glob("*.tmp")), "a failed snapshot left its temporary file"
    server = start(reactord, data_dir, "--segment-bytes", "4096", "--snapshot-events", "5")
    assert state_and_version(server) == (expected, 100)
    assert fire(server, [{"type": "increment", "path": "/n"}] * 5) == 105
    wait_for_snapshot(server, data_dir, 105)


@pytest.mark.parametrize("tool", ["import", "compact", "export"])
def test_offline_tools_report_a_failed_write_and_leave_the_directory_sound(reactord, data_dir, tmp_path, tool):
    """Under a file-size limit the tools' writes fail with EFBIG: each must exit 1 with a message
    (not die of SIGXFSZ), and leave no partial journal or snapshot behind."""
    events = [{"version": 0, "state": {}}] + [
        {"version": i, "event": {"type": "set", "path": f"/k{i}", "value": f"{i}" + "e" * 1000}} for i in range(1, 151)
    ]
    exported = tmp_path / "export.jsonl"
    exported.write_bytes(lines_text(events))
    limited = limit_file_size(FILE_SIZE_LIMIT, FILE_SIZE_LIMIT)
    if tool == "import":
        done = reactord_tool("import", "--data-dir", str(data_dir), str(exported), preexec_fn=limited)
    else:
        assert reactord_tool("import", "--data-dir", str(data_dir), str(exported)).returncode == 0
        before = {name: (data_dir / name).read_bytes() for name in files_under(data_dir)}
        if tool == "compact":
            done = reactord_tool("compact", "--data-dir", str(data_dir), preexec_fn=limited)
        else:
            done = reactord_tool("export", "--data-dir", str(data_dir), "-o", str(tmp_path / "out.jsonl"), preexec_fn=limited)
    assert done.returncode > 0, f"reactord {tool} exited with {done.returncode} (-25 is SIGXFSZ), not 1:\n{text(done)}"
    assert "too large" in text(done).lower() or "cannot write" in text(done).lower(), text(done)
    if tool == "import":
        leftovers = [name for name in files_under(data_dir) if name != "LOCK"] if data_dir.exists() else []
        assert leftovers == [], f"a failed import left a partial data directory that a server would start from: {leftovers}"
    else:
        after = {name: (data_dir / name).read_bytes() for name in files_under(data_dir)}
        assert after == before, f"{tool} changed the directory: {sorted(set(after) ^ set(before))}"
        server = start(reactord, data_dir)
        assert state_and_version(server)[1] == 150


def test_a_history_page_ends_before_it_grows_past_the_unsent_bound(reactord, data_dir):
    server = start(reactord, data_dir, "--max-unsent-bytes", "65536")
    for i in range(10):
        fire(server, {"type": "set", "path": f"/k{i}", "value": "x" * 20_000})
    answer, page = history_page(server, since=0, limit=10)
    assert answer.status == 200
    assert [line["version"] for line in page] == [1, 2, 3], [line["version"] for line in page]
    assert len(answer.body) <= 65536 + 20_100
    assert [line["version"] for line in all_history(server, limit=10)] == list(range(1, 11))
    # One event larger than the bound still makes a page.
    fire(server, {"type": "set", "path": "/big", "value": "y" * 100_000})
    answer, page = history_page(server, since=10, limit=10)
    assert [line["version"] for line in page] == [11]


def fifty_thousand_events_then_at_once(server, target: str, count: int = 8) -> list:
    """50,000 increments journaled, then `count` GETs of `target` sent at once: their answers, each
    a 200 or a 503 `history-unavailable` with Retry-After (at least one of those)."""
    batch = [{"type": "increment", "path": "/n"}] * 500
    for _ in range(100):
        assert post_events(server, batch).status == 200
    answers: list = []
    lock = threading.Lock()

    def get():
        answer = request(server, "GET", target, timeout=60)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=get) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    statuses = sorted(answer.status for answer in answers)
    assert len(statuses) == count and set(statuses) <= {200, 503} and 503 in statuses, statuses
    for answer in answers:
        if answer.status == 503:
            assert_problem(answer, 503, "history-unavailable")
            assert answer.header("Retry-After")
    return [answer for answer in answers if answer.status == 200]


def test_rebuilds_of_past_states_run_a_few_at_a_time_and_the_rest_are_told_to_retry(reactord, data_dir):
    """`GET /state?version=N` rebuilds on the thread pool the journal syncs on: past two at once, a
    request is answered 503 `history-unavailable` with Retry-After rather than queued behind them."""
    server = start(reactord, data_dir)
    for answer in fifty_thousand_events_then_at_once(server, "/state?version=49999"):
        assert answer.json() == {"n": 49999}
    # Each answered rebuild gave its place back.
    for _ in range(3):
        assert request(server, "GET", "/state?version=100", timeout=60).json() == {"n": 100}


def test_reads_of_old_history_from_disk_run_a_few_at_a_time_and_the_rest_are_told_to_retry(reactord, data_dir):
    """`/history` older than what is kept in memory is read from the journal on the thread pool the
    journal syncs on: past two such reads at once, a request is answered 503 with Retry-After."""
    server = start(reactord, data_dir)
    for answer in fifty_thousand_events_then_at_once(server, "/history?since=10&limit=10000"):
        assert json.loads(answer.body.splitlines()[0])["version"] == 11
    # Each read gave its place back.
    for _ in range(3):
        answer, page = history_page(server, since=10, limit=5)
        assert [line["version"] for line in page] == [11, 12, 13, 14, 15]


def test_an_import_killed_before_its_snapshot_is_named_and_a_second_import_finishes_it(reactord, tmp_path):
    """An import writes the journal first and the snapshot last; killed in between, it leaves a
    journal without a snapshot, marked as an unfinished import. The server and `check` say so and
    what to do, and the same import run again clears it and finishes."""
    events = [{"version": 0, "state": {"base": 1}}] + [
        {"version": i, "event": {"type": "set", "path": f"/k{i}", "value": i}} for i in range(1, 301)
    ]
    exported = tmp_path / "export.jsonl"
    exported.write_bytes(lines_text(events))
    # What such a kill leaves: a finished import's journal, with the marker and without the snapshot.
    finished, killed = tmp_path / "finished", tmp_path / "killed"
    assert reactord_tool("import", "--data-dir", str(finished), str(exported)).returncode == 0
    shutil.copytree(finished, killed)
    (killed / "LOCK").unlink()
    for snapshot in (killed / "snapshots").iterdir():
        snapshot.unlink()
    (killed / "IMPORTING").write_bytes(b"")

    check = reactord_tool("check", "--data-dir", str(killed))
    assert check.returncode == 1 and "did not finish" in text(check) and "run the import again" in text(check), text(check)
    served = subprocess.run([REACTORD_BIN, "--data-dir", str(killed), "--port", "0"], capture_output=True, env=clean_environment(), timeout=20)
    assert served.returncode == 1 and "did not finish" in text(served), text(served)

    again = reactord_tool("import", "--data-dir", str(killed), str(exported))
    assert again.returncode == 0, text(again)
    assert not (killed / "IMPORTING").exists()
    assert reactord_tool("check", "--data-dir", str(killed)).returncode == 0
    server = start(reactord, killed)
    state, version = state_and_version(server)
    assert version == 300 and state["base"] == 1 and state["k300"] == 300


def test_an_import_into_a_directory_without_the_marker_still_refuses_what_it_holds(reactord, tmp_path):
    """A journal without a snapshot and without the marker is not an import's: it may be all that
    is left of someone's data, and import leaves it alone."""
    data_dir = tmp_path / "data"
    server = start(reactord, data_dir)
    fire(server, {"type": "set", "path": "/precious", "value": 1})
    stop(server)
    for snapshot in (data_dir / "snapshots").iterdir():
        snapshot.unlink()
    exported = tmp_path / "export.jsonl"
    exported.write_bytes(lines_text([{"version": 0, "state": {}}]))
    refused = reactord_tool("import", "--data-dir", str(data_dir), str(exported))
    assert refused.returncode == 1 and "already holds a journal" in text(refused), text(refused)
    assert list((data_dir / "journal").iterdir()), "the journal was removed"


def test_a_server_starts_on_a_full_disk_with_no_segment_to_continue_and_writes_once_there_is_room(reactord, small_disk):
    """After `compact` no journal segment is left, so starting makes one: on a full disk that write
    fails, and the server starts all the same, serving reads and answering writes 503 until there
    is room."""
    data_dir = small_disk / "data"
    server = start(reactord, data_dir)
    for i in range(3):
        fire(server, {"type": "set", "path": f"/a{i}", "value": i})
    stop(server)
    assert reactord_tool("compact", "--data-dir", str(data_dir)).returncode == 0
    assert segment_versions(data_dir) == []
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 65536)
        except OSError:
            pass
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({"a0": 0, "a1": 1, "a2": 2}, 3)
    problem = assert_problem(post_events(server, {"type": "set", "path": "/b", "value": 1}), 503, "journal-unavailable")
    assert "No space left on device" in problem["detail"], problem
    filler.unlink()
    assert fire(server, {"type": "set", "path": "/b", "value": 2}) == 4
    stop(server)
    assert reactord_tool("check", "--data-dir", str(data_dir)).returncode == 0
    server = start(reactord, data_dir)
    assert state_and_version(server) == ({"a0": 0, "a1": 1, "a2": 2, "b": 2}, 4)


def test_the_data_directory_is_its_owners_alone(reactord, tmp_path):
    """The state and the journal are the server's, as a database's files are: other users of the
    machine read none of them."""
    data_dir = tmp_path / "data"
    server = start(reactord, data_dir, "--snapshot-events", "2")
    fire(server, [{"type": "set", "path": "/secret", "value": "s3cret"}] * 3)
    stop(server)
    for path in [data_dir, *data_dir.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
