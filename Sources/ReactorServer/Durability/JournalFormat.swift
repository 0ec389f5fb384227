/// One entry of an event log: the version an event produced and the event's JSON; in a snapshot
/// file, the version and the whole state's JSON. In a journal, the idempotency keys answered by the
/// event (or, in a snapshot, by the events before it) travel with it.
public struct LogRecord: Sendable, Equatable {
    public let version: UInt64
    public let payload: [UInt8]
    public let answers: [JournaledAnswer]
    /// The event came in a request of several, and the next record holds the next of them: after a
    /// crash, recovery keeps such a request's records all or none (`JournalRecovery`).
    public let continued: Bool

    public init(version: UInt64, payload: [UInt8], answers: [JournaledAnswer] = [], continued: Bool = false) {
        self.version = version
        self.payload = payload
        self.answers = answers
        self.continued = continued
    }
}

/// The bytes of journal segments and snapshot files.
///
/// A file starts with a 16-byte header: a 4-byte magic (`RJNL` for a journal segment, `RSNP` for a
/// snapshot), the format (UInt16, little-endian), two reserved bytes and a UInt64 (the first version a
/// segment holds, or the snapshot's version). Records follow, each
///
///     length  UInt32  the payload's byte count
///     crc     UInt32  CRC-32C of the version's 8 bytes and the payload
///     version UInt64
///     payload length bytes of JSON
///
/// all little-endian. A snapshot file holds exactly one record. From format 2 on, a payload may
/// begin with idempotency answers before its JSON (`JournaledAnswer.marker`); from format 3 on, with
/// `continuedMarker` before those. Files of an earlier format, which hold neither, are read as they
/// are, and appends never continue one.
public enum JournalFormat {
    public static let formatVersion: UInt16 = 3
    public static let readableFormats: ClosedRange<UInt16> = 1...3
    /// The byte a continued record's payload begins with (`LogRecord.continued`): like
    /// `JournaledAnswer.marker`, one that no JSON text starts with and that is not zero.
    static let continuedMarker: UInt8 = 0x02
    public static let headerSize = 16
    public static let recordHeaderSize = 16
    /// The largest payload a record may carry; a larger length can only be damage.
    public static let maxPayload = 1 << 30
    /// The most bytes a journal writer has written and not yet synced: the extent of what a crash
    /// can leave half written.
    public static let maxUnsyncedBytes = 1 << 20
    /// The disk sector a crash writes whole or not at all, as `JournalScanner` reckons it (the
    /// smallest there is: larger ones are made of these).
    public static let sectorSize = 512

    /// Where the piece of a group that a writer writes from file offset `start`, and syncs before
    /// the next, ends, for a group ending at `end`: at most `maxUnsyncedBytes` on, and short of the
    /// group's end, on a sector's boundary. The next piece then starts a sector of its own, and a
    /// crash while it is written leaves that sector's zeros whole (the hole `JournalScanner` knows
    /// an unfinished write by), never zeros behind synced bytes in the middle of a sector.
    public static func pieceEnd(from start: Int, groupEnd end: Int) -> Int {
        let limit = start + maxUnsyncedBytes
        guard limit < end else { return end }
        let aligned = limit / sectorSize * sectorSize
        return aligned > start ? aligned : limit
    }

    public enum FileKind: Sendable {
        case segment, snapshot

        var magic: [UInt8] {
            switch self {
            case .segment: Array("RJNL".utf8)
            case .snapshot: Array("RSNP".utf8)
            }
        }
    }

    public static func header(_ kind: FileKind, version: UInt64) -> [UInt8] {
        var bytes = kind.magic
        bytes.appendLittleEndian(UInt16(formatVersion))
        bytes.appendLittleEndian(UInt16(0))
        bytes.appendLittleEndian(version)
        return bytes
    }

    /// Reads a header: the version it names; the reason when the bytes are not one of `kind`.
    public static func parseHeader(_ bytes: UnsafeRawBufferPointer, kind: FileKind) -> Result<UInt64, HeaderError> {
        parseHeaderAndFormat(bytes, kind: kind).map(\.version)
    }

    /// Reads a header: the version it names and the file's format.
    public static func parseHeaderAndFormat(_ bytes: UnsafeRawBufferPointer, kind: FileKind) -> Result<(version: UInt64, format: UInt16), HeaderError> {
        guard bytes.count >= headerSize else { return .failure(.short(bytes.count)) }
        guard Array(bytes[0..<4]) == kind.magic else { return .failure(.badMagic) }
        let format = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
        guard readableFormats.contains(format) else { return .failure(.unknownFormat(format)) }
        return .success((UInt64(littleEndianBytes: bytes, at: 8), format))
    }

    public enum HeaderError: Error, Equatable, CustomStringConvertible {
        case short(Int), badMagic, unknownFormat(UInt16)

        public var description: String {
            switch self {
            case .short(let count): "the header is \(count) bytes, not \(JournalFormat.headerSize)"
            case .badMagic: "the file does not start with the expected magic bytes"
            case .unknownFormat(let format): "unknown format \(format) (this reactord reads formats \(JournalFormat.readableFormats.lowerBound) to \(JournalFormat.readableFormats.upperBound): a newer reactord wrote it)"
            }
        }
    }

    /// Appends one record's bytes to `bytes`.
    public static func append(_ record: LogRecord, to bytes: inout [UInt8]) {
        var prefix = record.continued ? [continuedMarker] : []
        prefix += JournaledAnswer.prefix(record.answers)
        var versionBytes: [UInt8] = []
        versionBytes.appendLittleEndian(record.version)
        var crc = CRC32C.checksum(versionBytes)
        if !prefix.isEmpty { crc = CRC32C.checksum(prefix, continuing: crc) }
        crc = CRC32C.checksum(record.payload, continuing: crc)
        bytes.appendLittleEndian(UInt32(prefix.count + record.payload.count))
        bytes.appendLittleEndian(crc)
        bytes.append(contentsOf: versionBytes)
        bytes.append(contentsOf: prefix)
        bytes.append(contentsOf: record.payload)
    }

    /// Refuses a record the scanner would not read back (longer than `maxPayload`, or of a version
    /// no record has): written, it would make the directory unloadable.
    public static func checkWritable(_ record: LogRecord) throws(EventLogError) {
        let stored = encodedSize(record) - recordHeaderSize
        guard stored <= maxPayload else {
            throw EventLogError(.other, "the record of version \(record.version) would be \(stored) bytes, more than a journal record may hold (\(maxPayload) bytes)")
        }
        guard record.version < highestVersion else {
            throw EventLogError(.other, "version \(record.version) is past the highest a journal holds (\(highestVersion - 1))")
        }
    }

    /// One past the highest version a record may have: every version a client is told is a JSON
    /// integer that every client reads exactly (2^53 - 1, JavaScript's largest safe integer).
    public static let highestVersion: UInt64 = 1 << 53

    public static func encodedSize(_ record: LogRecord) -> Int {
        recordHeaderSize + (record.continued ? 1 : 0) + JournaledAnswer.prefixCount(record.answers) + record.payload.count
    }

    /// Reads what a stored payload begins with (`continuedMarker`, then idempotency answers) and
    /// the JSON after; nil when the beginning is not in the form `append` writes.
    static func parsePayload(_ stored: ArraySlice<UInt8>, version: UInt64) -> LogRecord? {
        let continued = stored.first == continuedMarker
        let rest = continued ? stored.dropFirst() : stored
        guard rest.first != continuedMarker, let (payload, answers) = JournaledAnswer.split(rest) else { return nil }
        return LogRecord(version: version, payload: payload, answers: answers, continued: continued)
    }
}

/// Walks the records of a file's bytes (after its header), and tells how the file ends: cleanly
/// (at the file's end, or where only zeros follow: the room a writer keeps ahead of its records),
/// torn (the last write was cut short or never completed: what a crash mid-write leaves), or damaged
/// (a bad record with more after it). Pure: the caller decides what a torn or damaged file means.
///
/// A crash while a write over zeroed room is unsynced can leave any of its disk sectors unwritten,
/// so sound records may follow the torn one; its sign is zeros where the record should be, to the
/// end of a disk sector, and nothing but zeros `maxUnsyncedBytes` after it. Damage, a changed byte,
/// leaves no such hole (a record's JSON holds no zero byte), unless the record's first bytes end a
/// sector and are zero (a length's low byte, for a length that is a multiple of 256).
public struct JournalScanner {
    public enum Step: Equatable {
        case record(LogRecord, offset: Int)
        case end
        /// The bytes from `offset` on are an unfinished record; truncating there loses only it.
        case torn(offset: Int, reason: String)
        /// The record at `offset` is damaged and more bytes follow it.
        case damaged(offset: Int, reason: String)
    }

    private let bytes: [UInt8]
    public private(set) var offset: Int
    /// The version the next record should have: the file header's first version, then one more
    /// than each record read.
    private var expectedVersion: UInt64?

    /// `bytes` is the whole file; records start at `start` (after the header).
    public init(bytes: [UInt8], start: Int = JournalFormat.headerSize) {
        self.bytes = bytes
        offset = start
        if start == JournalFormat.headerSize, bytes.count >= JournalFormat.headerSize {
            expectedVersion = bytes.withUnsafeBytes { UInt64(littleEndianBytes: $0, at: 8) }
        }
    }

    public mutating func next() -> Step {
        let remaining = bytes.count - offset
        if remaining == 0 { return .end }
        let at = offset
        if bytes[at...].allSatisfy({ $0 == 0 }) { return .end }
        guard remaining >= JournalFormat.recordHeaderSize else {
            return .torn(offset: at, reason: "a record header cut short (\(remaining) of \(JournalFormat.recordHeaderSize) bytes)")
        }
        return bytes.withUnsafeBytes { raw in
            let length = Int(UInt32(littleEndianBytes: raw, at: at))
            let crc = UInt32(littleEndianBytes: raw, at: at + 4)
            let version = UInt64(littleEndianBytes: raw, at: at + 8)
            let end = at + JournalFormat.recordHeaderSize + length
            // A bad record is torn only when nothing sound follows it: a crash cuts off the end of
            // a file, while a damaged length or checksum can sit anywhere, with records after it.
            guard length <= JournalFormat.maxPayload, end <= bytes.count else {
                let reason = "a record of \(length) bytes runs past the end of the file"
                let sound = soundRecord(after: at, in: raw)
                if isUnfinishedWrite(at: at, end: end, before: sound, in: raw) { return .torn(offset: at, reason: reason + Self.unfinished) }
                return sound != nil ? .damaged(offset: at, reason: reason) : .torn(offset: at, reason: reason)
            }
            let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[(at + 4 + 4)..<end]))
            guard computed == crc else {
                let reason = "checksum mismatch in the record of version \(version) (stored \(hex(crc)), computed \(hex(computed)))"
                let sound = soundRecord(after: at, in: raw)
                if isUnfinishedWrite(at: at, end: end, before: sound, in: raw) { return .torn(offset: at, reason: reason + Self.unfinished) }
                return end == bytes.count && sound == nil ? .torn(offset: at, reason: reason) : .damaged(offset: at, reason: reason)
            }
            guard let record = JournalFormat.parsePayload(bytes[(at + JournalFormat.recordHeaderSize)..<end], version: version) else {
                return .damaged(offset: at, reason: "the record of version \(version) begins with idempotency answers or marks that cannot be read")
            }
            // Sound, yet past any version a writer gives (`checkWritable`): damage, not a version to count on from.
            guard version < JournalFormat.highestVersion else {
                return .damaged(offset: at, reason: "a record of version \(version), past the highest a journal holds")
            }
            expectedVersion = version + 1
            offset = end
            return .record(record, offset: at)
        }
    }

    private static let unfinished = ", in a write that never wholly reached the disk"

    /// Whether the bad record at `offset` (ending at `end` by its length) lies in a write a crash
    /// left unfinished: between its start and the next sound record (at `sound`, if one follows),
    /// the part of some disk sector from the record's start on is still zeros (the rest of the
    /// record's first sector, or a whole sector after it), and nothing but zeros lies
    /// `maxUnsyncedBytes` or more after that hole. Measured from the hole, not the record: a record
    /// can start in one synced piece of a large group and end in the next, unsynced one, and the
    /// hole is in the unsynced write wherever it began. Past the next sound record, zeros are the
    /// room, whatever a damaged length claims.
    private func isUnfinishedWrite(at offset: Int, end: Int, before sound: Int?, in raw: UnsafeRawBufferPointer) -> Bool {
        let sector = JournalFormat.sectorSize
        let limit = min(sound ?? raw.count, max(end, offset + 1))
        var hole: Int?
        var sectorStart = offset / sector * sector
        while hole == nil && sectorStart < limit {
            let (from, to) = (max(offset, sectorStart), min(sectorStart + sector, raw.count))
            if to > from && Self.allZero(raw, from..<to) { hole = from }
            sectorStart += sector
        }
        guard let hole else { return false }
        let settled = hole + JournalFormat.maxUnsyncedBytes
        return settled >= raw.count || Self.allZero(raw, settled..<raw.count)
    }

    private static func allZero(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        UnsafeRawBufferPointer(rebasing: raw[range]).allSatisfy { $0 == 0 }
    }

    /// Where the first whole record with a later version than expected starts after `offset`, if
    /// one does: each position is tried cheaply (a plausible version and length) before its checksum is.
    private func soundRecord(after offset: Int, in raw: UnsafeRawBufferPointer) -> Int? {
        guard let expected = expectedVersion else { return nil }
        var candidate = offset + 1
        while candidate + JournalFormat.recordHeaderSize <= raw.count {
            let version = UInt64(littleEndianBytes: raw, at: candidate + 8)
            let length = Int(UInt32(littleEndianBytes: raw, at: candidate))
            let end = candidate + JournalFormat.recordHeaderSize + length
            if version > expected, version - expected <= UInt64(raw.count), end <= raw.count,
               CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[(candidate + 8)..<end])) == UInt32(littleEndianBytes: raw, at: candidate + 4) {
                return candidate
            }
            candidate += 1
        }
        return nil
    }

    private func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }
}

extension [UInt8] {
    mutating func appendLittleEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        // As typed bytes: a raw buffer would be appended byte by byte.
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }
}

extension UInt64 {
    init(littleEndianBytes bytes: UnsafeRawBufferPointer, at offset: Int) {
        self = UInt64(UInt32(littleEndianBytes: bytes, at: offset)) | UInt64(UInt32(littleEndianBytes: bytes, at: offset + 4)) << 32
    }
}
