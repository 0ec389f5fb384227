"""Server-Sent Events (GET /stream) read with `curl -N -i`: a stream read as it comes
(`CurlStream`), one read for a while and then whole (`finished_stream`), and the record parser
both use. Shared by test_stream.py and the cluster tests."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import time

from conftest import HOST


def id_version(record: dict) -> str:
    """The version in an event's id, `<version>-<history>` (the history, a short token, must be there)."""
    version, at, history = record["id"].partition("-")
    assert at and re.fullmatch(r"[0-9]+", version) and re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}", history), record
    return version


def parse_records(text: str) -> list[dict]:
    """SSE records as dicts of field -> value (comments under ":"), in order."""
    records = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        record: dict = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                record.setdefault(":", []).append(line[1:].strip())
                continue
            name, _, value = line.partition(":")
            record[name] = value[1:] if value.startswith(" ") else value
        records.append(record)
    return records


class CurlStream:
    """`curl -sS -N -i` on a server's stream, its output read as it comes (ended at --max-time at
    the latest)."""

    def __init__(self, server, target: str = "/stream", *args: str, max_time: float = 20):
        self.process = subprocess.Popen(
            ["curl", "-sS", "-N", "-i", "--max-time", str(max_time), *args, f"http://{HOST}:{server.port}{target}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.chunks: queue.Queue = queue.Queue()
        self.buffer = ""
        threading.Thread(target=self._pump, daemon=True).start()
        self.status, self.headers = self._head()

    def _pump(self) -> None:
        while True:
            chunk = self.process.stdout.read1(65536)
            self.chunks.put(chunk)
            if not chunk:
                return

    def _fill(self, timeout: float) -> None:
        chunk = self.chunks.get(timeout=timeout)
        if not chunk:
            raise EOFError(f"the stream ended; got {self.buffer[-500:]!r}")
        self.buffer += chunk.decode()

    def _head(self):
        deadline = time.monotonic() + 5
        while "\r\n\r\n" not in self.buffer:
            try:
                self._fill(max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no response head within 5 s; have {self.buffer!r}") from None
        head, _, self.buffer = self.buffer.partition("\r\n\r\n")
        lines = head.split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    def record(self, timeout: float = 5) -> dict:
        deadline = time.monotonic() + timeout
        while "\n\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no record within {timeout} s; have {self.buffer[-500:]!r}")
            try:
                self._fill(remaining)
            except queue.Empty:
                continue
        block, _, self.buffer = self.buffer.partition("\n\n")
        return parse_records(block + "\n\n")[0]

    def message(self, timeout: float = 5) -> tuple[dict, dict]:
        """The next data record (comments and retry skipped): the record and its parsed data."""
        while True:
            record = self.record(timeout)
            if "data" in record:
                return record, json.loads(record["data"])

    def assert_silent(self, timeout: float = 0.5) -> None:
        try:
            record = self.record(timeout)
        except TimeoutError:
            return
        raise AssertionError(f"expected nothing, got {record}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def finished_stream(server, target: str, *args: str, seconds: float = 1.5) -> tuple[int, str, list[dict]]:
    """curl -N for `seconds`, then everything it printed: (status, headers text, records)."""
    done = subprocess.run(
        ["curl", "-sS", "-N", "-i", "--max-time", str(seconds), *args, f"http://{HOST}:{server.port}{target}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=seconds + 10,
    )
    assert done.returncode == 28, f"curl ended with {done.returncode}, not at --max-time: {done.stderr!r}"
    head, _, body = done.stdout.decode().partition("\r\n\r\n")
    return int(head.split()[1]), head, parse_records(body)
