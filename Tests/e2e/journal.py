"""Helpers for the durability tests: reactord's data directory read and damaged from Python, and
/history read page by page.

The journal format (Sources/ReactorServer/Durability/JournalFormat.swift), little-endian:

    file header  16 bytes: magic "RJNL" (segment) or "RSNP" (snapshot), u16 format (3), u16 0,
                 u64 first version (a segment) or the version (a snapshot)
    record       u32 payload length, u32 CRC-32C of the version's 8 bytes and the payload,
                 u64 version, then the payload (JSON: an event, or a snapshot's whole state)
    payload      may begin with 0x02 (the next record holds more of the same request, format 3), then
                 with 0x01 and idempotency answers up to an empty line (format 2), before its JSON

Segments are <dir>/journal/<20-digit first version>.log, snapshots <dir>/snapshots/<20-digit version>.snapshot.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from conftest import Reactord, request

HEADER_SIZE = 16
RECORD_HEADER_SIZE = 16

# ---------------------------------------------------------------------------------------------
# CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as the journal's records carry it


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard check value


# ---------------------------------------------------------------------------------------------
# Files


def file_name(version: int) -> str:
    return f"{version:020d}"


def segment_path(data_dir: Path, first_version: int) -> Path:
    return data_dir / "journal" / f"{file_name(first_version)}.log"


def snapshot_path(data_dir: Path, version: int) -> Path:
    return data_dir / "snapshots" / f"{file_name(version)}.snapshot"


def segment_versions(data_dir: Path) -> list[int]:
    """The first versions of the segments, from their names, in order."""
    return sorted(int(p.name[:-4]) for p in (data_dir / "journal").glob("*.log"))


def snapshot_versions(data_dir: Path) -> list[int]:
    return sorted(int(p.name[: -len(".snapshot")]) for p in (data_dir / "snapshots").glob("*.snapshot"))


def encode_header(magic: bytes, version: int, format: int = 3) -> bytes:
    return magic + struct.pack("<HHQ", format, 0, version)


def encode_record(version: int, payload: bytes) -> bytes:
    version_bytes = struct.pack("<Q", version)
    return struct.pack("<II", len(payload), crc32c(version_bytes + payload)) + version_bytes + payload


@dataclass
class Record:
    offset: int
    length: int
    crc: int
    version: int
    payload: bytes

    @property
    def end(self) -> int:
        return self.offset + RECORD_HEADER_SIZE + self.length

    @property
    def crc_ok(self) -> bool:
        return crc32c(struct.pack("<Q", self.version) + self.payload) == self.crc

    @property
    def continued(self) -> bool:
        """Whether the next record holds more of the same request (format 3)."""
        return self.payload.startswith(b"\x02")

    @property
    def event_bytes(self) -> bytes:
        """The payload's JSON: after the marks and idempotency answers a record may begin with."""
        payload = self.payload[1:] if self.continued else self.payload
        if payload.startswith(b"\x01"):
            return payload.split(b"\n\n", 1)[1]
        return payload

    def json(self):
        return json.loads(self.event_bytes)


@dataclass
class JournalFile:
    magic: bytes
    format: int
    reserved: int
    version: int
    records: list[Record]
    size: int
    # Bytes after the last whole record (a torn tail), if any, up to the room.
    trailing: bytes
    # Zero bytes at the end of the file: the room the open segment's writer keeps ahead.
    room: int

    @property
    def records_end(self) -> int:
        return self.size - self.room - len(self.trailing)


def parse_file(path: Path) -> JournalFile:
    """A segment or snapshot file: its header, every whole record (a torn tail is `trailing`), and the
    zeroed room after them."""
    data = path.read_bytes()
    assert len(data) >= HEADER_SIZE, f"{path}: {len(data)} bytes, shorter than a header"
    magic = data[:4]
    format_, reserved, version = struct.unpack_from("<HHQ", data, 4)
    # A record never ends with a zero byte (its payload is JSON): trailing zeros are room.
    written = max(HEADER_SIZE, len(data.rstrip(b"\0")))
    records = []
    offset = HEADER_SIZE
    while offset + RECORD_HEADER_SIZE <= written:
        length, crc, record_version = struct.unpack_from("<IIQ", data, offset)
        end = offset + RECORD_HEADER_SIZE + length
        if end > written:
            break
        records.append(Record(offset, length, crc, record_version, data[offset + RECORD_HEADER_SIZE : end]))
        offset = end
    return JournalFile(magic, format_, reserved, version, records, len(data), data[offset:written], len(data) - written)


def journaled_versions(data_dir: Path) -> list[int]:
    """The versions of every whole, checksummed record in every segment, in file order."""
    versions = []
    for first in segment_versions(data_dir):
        path = segment_path(data_dir, first)
        try:
            parsed = parse_file(path)
        except FileNotFoundError:  # removed by a snapshot meanwhile
            continue
        for record in parsed.records:
            if not record.crc_ok:
                break
            versions.append(record.version)
    return versions


def journaled_events(data_dir: Path) -> dict[int, dict]:
    """Version -> event, for every whole, checksummed record on disk."""
    events = {}
    for first in segment_versions(data_dir):
        for record in parse_file(segment_path(data_dir, first)).records:
            if not record.crc_ok:
                break
            events[record.version] = record.json()
    return events


def flip_byte(path: Path, offset: int, mask: int = 0xFF) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def files_under(directory: Path) -> list[str]:
    """Every file under `directory`, relative, sorted (directories left out)."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------------------
# HTTP


def fire(server: Reactord, event) -> int:
    """POSTs one event (or an array), asserting a 200; its version."""
    answer = request(server, "POST", "/events", body=event)
    assert answer.status == 200, answer
    return answer.json()["version"]


def state_and_version(server: Reactord, query: str = ""):
    answer = request(server, "GET", "/state" + query)
    assert answer.status == 200, answer
    return answer.json(), int(answer.header("ETag").strip('"'))


def history_page(server: Reactord, since: int | None = None, limit: int | None = None):
    """One GET /history: (the response, its lines parsed)."""
    query = "&".join(f"{k}={v}" for k, v in (("since", since), ("limit", limit)) if v is not None)
    answer = request(server, "GET", "/history" + ("?" + query if query else ""))
    lines = []
    if answer.status == 200:
        text = answer.body.decode()
        assert text == "" or text.endswith("\n"), f"the body does not end with a newline: {text[-200:]!r}"
        lines = [json.loads(line) for line in text.splitlines()]
    return answer, lines


def all_history(server: Reactord, since: int = 0, limit: int = 1000) -> list[dict]:
    """Every event after `since`, read page by page until Reactor-Version."""
    lines: list[dict] = []
    while True:
        answer, page = history_page(server, since=since, limit=limit)
        assert answer.status == 200, answer
        lines += page
        current = int(answer.header("Reactor-Version"))
        if not page or page[-1]["version"] >= current:
            return lines
        since = page[-1]["version"]


def readyz(server: Reactord):
    answer = request(server, "GET", "/readyz")
    return answer.status, answer.json()
