@testable import ReactorServer
import XCTest
import TestSupport

/// The record format and its scanner, without files: checksums, round trips, and how every way a
/// file can end (cleanly, torn by a crash, damaged) is told apart.
final class JournalFormatTests: XCTestCase {
    func testCRC32CMatchesTheStandardCheckValues() {
        XCTAssertEqual(CRC32C.checksum(Array("123456789".utf8)), 0xE306_9283)
        XCTAssertEqual(CRC32C.checksum([UInt8]()), 0)
        XCTAssertEqual(CRC32C.checksum([UInt8](repeating: 0, count: 32)), 0x8A91_36AA)  // RFC 3720 B.4
        XCTAssertEqual(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)), 0x62A8_AB43)
        XCTAssertEqual(CRC32C.checksum(Array(0..<32)), 0x46DD_794E)
    }

    func testCRC32CByTheTablesMatchesTheCPUsInstruction() {
        // The check values above hold for whichever `checksum` uses; here the two agree everywhere.
        XCTAssertEqual(CRC32C.softwareChecksum(UnsafeRawBufferPointer(start: nil, count: 0)), 0)
        let check = Array("123456789".utf8)
        check.withUnsafeBytes { XCTAssertEqual(CRC32C.softwareChecksum($0), 0xE306_9283) }
        var random = SeededRandom(seed: 11)
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 300, 4_099] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let seed = UInt32.random(in: 0...UInt32.max, using: &random)
            bytes.withUnsafeBytes { raw in
                XCTAssertEqual(CRC32C.checksum(raw, continuing: seed), CRC32C.softwareChecksum(raw, continuing: seed), "\(length) bytes")
                // Unaligned starts too.
                if length > 3 {
                    let tail = UnsafeRawBufferPointer(rebasing: raw[3...])
                    XCTAssertEqual(CRC32C.checksum(tail), CRC32C.softwareChecksum(tail), "\(length - 3) bytes from an odd address")
                }
            }
        }
    }

    func testCRC32CContinuesAcrossSplitsOfEveryLength() {
        var random = SeededRandom(seed: 7)
        let bytes = (0..<301).map { _ in UInt8.random(in: 0...255, using: &random) }
        let whole = CRC32C.checksum(bytes)
        for split in 0...bytes.count {
            let first = CRC32C.checksum(bytes[..<split])
            XCTAssertEqual(CRC32C.checksum(bytes[split...], continuing: first), whole, "split at \(split)")
        }
    }

    func testARecordTheScannerWouldNotReadBackIsRefusedBeforeItIsWritten() throws {
        // Longer than the scanner reads: the bytes are never touched, only counted.
        let huge = [UInt8](unsafeUninitializedCapacity: JournalFormat.maxPayload + 1) { _, count in count = JournalFormat.maxPayload + 1 }
        XCTAssertThrowsError(try JournalFormat.checkWritable(LogRecord(version: 1, payload: huge)))
        XCTAssertThrowsError(try JournalFormat.checkWritable(LogRecord(version: JournalFormat.highestVersion, payload: Array("{}".utf8))))
        XCTAssertNoThrow(try JournalFormat.checkWritable(LogRecord(version: JournalFormat.highestVersion - 1, payload: Array("{}".utf8))))
        // And one written anyway (an older writer, damage) is damage, not a version to go past.
        var bytes = JournalFormat.header(.segment, version: 1)
        JournalFormat.append(LogRecord(version: .max, payload: Array("{}".utf8)), to: &bytes)
        var scanner = JournalScanner(bytes: bytes)
        guard case .damaged = scanner.next() else { return XCTFail("a record of version 2^64 - 1 read as sound") }
    }

    func testRecordsRoundTripThroughTheScanner() {
        let records = (1...20).map { LogRecord(version: UInt64($0), payload: Array(#"{"type":"increment","path":"/n","by":\#($0)}"#.utf8)) }
        var bytes = JournalFormat.header(.segment, version: 1)
        for record in records { JournalFormat.append(record, to: &bytes) }
        var scanner = JournalScanner(bytes: bytes)
        var read: [LogRecord] = []
        var offsets: [Int] = []
        while case .record(let record, let offset) = scanner.next() {
            read.append(record)
            offsets.append(offset)
        }
        XCTAssertEqual(read, records)
        XCTAssertEqual(offsets.first, JournalFormat.headerSize)
        XCTAssertEqual(scanner.next(), .end)
        XCTAssertEqual(bytes.withUnsafeBytes { JournalFormat.parseHeader($0, kind: .segment) }, .success(1))
    }

    func testIdempotencyAnswersTravelWithTheirRecordAndLeaveItsJSONAsItWas() {
        let batchAnswer = Array(#"{"version":3,"applied":2,"rejected":[{"index":1,"problem":{"detail":"a b"}}]}"#.utf8)
        let records = [
            LogRecord(version: 1, payload: Array(#"{"type":"increment","path":"/n"}"#.utf8)),
            LogRecord(version: 2, payload: Array(#"{"type":"increment","path":"/n"}"#.utf8),
                      answers: [JournaledAnswer(version: 2, expiresAt: 1_700_000_000_123, fingerprint: String(repeating: "ab", count: 20), key: "alice\u{0}order 17 é")]),
            LogRecord(version: 3, payload: Array(#"[1]"#.utf8),
                      answers: [JournaledAnswer(version: 3, expiresAt: 5, fingerprint: "f", key: "k", body: batchAnswer)]),
        ]
        var bytes = JournalFormat.header(.segment, version: 1)
        for record in records { JournalFormat.append(record, to: &bytes) }
        XCTAssertEqual(bytes.count, JournalFormat.headerSize + records.reduce(0) { $0 + JournalFormat.encodedSize($1) })
        var scanner = JournalScanner(bytes: bytes)
        var read: [LogRecord] = []
        while case .record(let record, _) = scanner.next() { read.append(record) }
        XCTAssertEqual(read, records)
        XCTAssertEqual(scanner.next(), .end)
        // A snapshot carries several; the answers' text holds no zero byte (the scanner tells an
        // unwritten sector by its zeros).
        let snapshot = LogRecord(version: 9, payload: Array("{}".utf8), answers: records.flatMap(\.answers))
        var snapshotBytes: [UInt8] = []
        JournalFormat.append(snapshot, to: &snapshotBytes)
        XCTAssertFalse(snapshotBytes[JournalFormat.recordHeaderSize...].contains(0))
        var snapshotScanner = JournalScanner(bytes: snapshotBytes, start: 0)
        XCTAssertEqual(snapshotScanner.next(), .record(snapshot, offset: 0))
    }

    func testARecordContinuedByTheNextKeepsItsMarkAndItsJSONAsItWas() {
        let answer = JournaledAnswer(version: 3, expiresAt: 5, fingerprint: "f", key: "k", body: Array(#"{"version":3,"applied":3}"#.utf8))
        let records = [
            LogRecord(version: 1, payload: Array(#"{"type":"increment","path":"/n"}"#.utf8), continued: true),
            LogRecord(version: 2, payload: Array(#"{"type":"append","path":"/l","value":"\u0002"}"#.utf8), continued: true),
            LogRecord(version: 3, payload: Array("[2]".utf8), answers: [answer]),
            LogRecord(version: 4, payload: Array("{}".utf8), answers: [answer], continued: true),
        ]
        var bytes = JournalFormat.header(.segment, version: 1)
        for record in records { JournalFormat.append(record, to: &bytes) }
        XCTAssertEqual(bytes.count, JournalFormat.headerSize + records.reduce(0) { $0 + JournalFormat.encodedSize($1) })
        XCTAssertEqual(bytes[JournalFormat.headerSize + JournalFormat.recordHeaderSize], JournalFormat.continuedMarker)
        var scanner = JournalScanner(bytes: bytes)
        var read: [LogRecord] = []
        while case .record(let record, _) = scanner.next() { read.append(record) }
        XCTAssertEqual(read, records)
        XCTAssertEqual(scanner.next(), .end)
    }

    func testAMarkNotInTheFormWrittenIsDamageEvenWithASoundChecksum() {
        for stored in ["\u{2}\u{2}{}", "\u{2}\u{1}\n{}", "\u{2}\u{1}1 2 f 6\n\n{}"] {
            var bytes = JournalFormat.header(.segment, version: 1)
            // Written as a plain payload that happens to begin with the marks.
            JournalFormat.append(LogRecord(version: 1, payload: Array(stored.utf8)), to: &bytes)
            JournalFormat.append(LogRecord(version: 2, payload: Array("{}".utf8)), to: &bytes)
            var scanner = JournalScanner(bytes: bytes)
            guard case .damaged(let offset, _) = scanner.next() else { return XCTFail("\(stored.debugDescription) read") }
            XCTAssertEqual(offset, JournalFormat.headerSize)
        }
    }

    func testAnswersThatCannotBeReadAreDamageEvenWithASoundChecksum() {
        for stored in ["\u{1}", "\u{1}\n{}", "\u{1}1 2 f\n\n{}", "\u{1}1 2 f 6\n\n{}", "\u{1}x 2 f 6b\n\n{}", "\u{1}1 2 f 6b \n\n{}", "\u{1}01 2 f 6b\n\n{}", "\u{1}+1 2 f 6b\n\n{}", "\u{1}1 2 F 6b\n\n{}", "\u{1}1 2 f 6B\n\n{}", "\u{1}1 2 f ff\n\n{}"] {
            var bytes = JournalFormat.header(.segment, version: 1)
            // Written as a plain payload that happens to begin with the marker.
            JournalFormat.append(LogRecord(version: 1, payload: Array(stored.utf8)), to: &bytes)
            JournalFormat.append(LogRecord(version: 2, payload: Array("{}".utf8)), to: &bytes)
            var scanner = JournalScanner(bytes: bytes)
            guard case .damaged(let offset, let reason) = scanner.next() else { return XCTFail("\(stored.debugDescription) read") }
            XCTAssertEqual(offset, JournalFormat.headerSize)
            XCTAssertTrue(reason.contains("idempotency"), reason)
        }
    }

    func testEveryCutThroughTheLastRecordIsTornAtItsStart() {
        var bytes = JournalFormat.header(.segment, version: 5)
        JournalFormat.append(LogRecord(version: 5, payload: Array("{\"a\":1}".utf8)), to: &bytes)
        let lastStart = bytes.count
        JournalFormat.append(LogRecord(version: 6, payload: Array("{\"b\":22}".utf8)), to: &bytes)
        for cut in (lastStart + 1)..<bytes.count {
            var scanner = JournalScanner(bytes: Array(bytes[..<cut]))
            guard case .record = scanner.next() else { return XCTFail("the first record is whole at cut \(cut)") }
            guard case .torn(let offset, _) = scanner.next() else { return XCTFail("cut \(cut) is not torn") }
            XCTAssertEqual(offset, lastStart)
        }
    }

    func testADamagedRecordIsTornAtTheEndAndDamagedInTheMiddle() {
        var bytes = JournalFormat.header(.segment, version: 1)
        let offsets = (1...3).map { version -> Int in
            let offset = bytes.count
            JournalFormat.append(LogRecord(version: UInt64(version), payload: Array("{\"v\":\(version)}".utf8)), to: &bytes)
            return offset
        }
        var middle = bytes
        middle[offsets[1] + JournalFormat.recordHeaderSize + 2] ^= 0x01
        var scanner = JournalScanner(bytes: middle)
        _ = scanner.next()
        guard case .damaged(let offset, let reason) = scanner.next() else { return XCTFail("a flipped bit with records after it is damage") }
        XCTAssertEqual(offset, offsets[1])
        XCTAssertTrue(reason.contains("checksum"), reason)

        var last = bytes
        last[bytes.count - 1] ^= 0x80
        scanner = JournalScanner(bytes: last)
        _ = scanner.next(); _ = scanner.next()
        guard case .torn(let tornAt, _) = scanner.next() else { return XCTFail("a bad final record is torn") }
        XCTAssertEqual(tornAt, offsets[2])
    }

    /// A damaged length that points past the end of the file is damage, not a torn tail, when sound
    /// records follow it: cutting there would drop acknowledged events.
    func testADamagedLengthWithRecordsAfterItIsDamage() {
        var bytes = JournalFormat.header(.segment, version: 1)
        var offsets: [Int] = []
        for version in 1...5 {
            offsets.append(bytes.count)
            JournalFormat.append(LogRecord(version: UInt64(version), payload: Array("{\"v\":\(version)}".utf8)), to: &bytes)
        }
        for byte in 0..<4 {
            var damaged = bytes
            damaged[offsets[1] + byte] ^= 0x40
            var scanner = JournalScanner(bytes: damaged)
            _ = scanner.next()
            guard case .damaged(let offset, _) = scanner.next() else { return XCTFail("length byte \(byte): damage, not a tear") }
            XCTAssertEqual(offset, offsets[1])
        }
        var lastDamaged = bytes
        lastDamaged[offsets[4] + 3] ^= 0x40
        var scanner = JournalScanner(bytes: lastDamaged)
        for _ in 0..<4 { _ = scanner.next() }
        guard case .torn(let offset, _) = scanner.next() else { return XCTFail("the last record's bad length is a tear") }
        XCTAssertEqual(offset, offsets[4])
    }

    func testZerosAfterTheLastRecordAreTheWritersRoomNotATear() {
        var bytes = JournalFormat.header(.segment, version: 1)
        JournalFormat.append(LogRecord(version: 1, payload: [0x7B, 0x7D]), to: &bytes)
        let end = bytes.count
        bytes += [UInt8](repeating: 0, count: 4096)
        var scanner = JournalScanner(bytes: bytes)
        _ = scanner.next()
        XCTAssertEqual(scanner.next(), .end)
        XCTAssertEqual(scanner.offset, end, "the records end where the zeros start")
    }

    /// Records 1-3 synced, then one write of records 4-9 over zeroed room, of which a crash kept
    /// some disk sectors and not others.
    private func unfinishedWrite(room: Int = 8192) -> (bytes: [UInt8], offsets: [Int]) {
        var bytes = JournalFormat.header(.segment, version: 1)
        var offsets: [Int] = []
        for version in 1...9 {
            offsets.append(bytes.count)
            let payload = #"{"type":"set","path":"/p\#(version)","value":"\#(String(repeating: "x", count: 300))"}"#
            JournalFormat.append(LogRecord(version: UInt64(version), payload: Array(payload.utf8)), to: &bytes)
        }
        bytes += [UInt8](repeating: 0, count: room)
        return (bytes, offsets)
    }

    func testASectorOfTheLastWriteLeftUnwrittenIsATearEvenWithSoundRecordsAfterIt() {
        var (bytes, offsets) = unfinishedWrite()
        // The disk sector holding the starts of records 4 and 5 was not written (what it holds of
        // record 3, synced before, stays); the sectors of records 6 to 9 were.
        let sector = (offsets[4] / 512) * 512
        XCTAssertTrue(sector < offsets[3] && offsets[4] < sector + 512 && offsets[5] >= sector + 512)
        for index in max(sector, offsets[3])..<(sector + 512) { bytes[index] = 0 }
        var scanner = JournalScanner(bytes: bytes)
        var read: [UInt64] = []
        var step = scanner.next()
        while case .record(let record, _) = step {
            read.append(record.version)
            step = scanner.next()
        }
        guard case .torn(let offset, let reason) = step else { return XCTFail("a hole in the last write is a tear: \(step)") }
        XCTAssertLessThan(read.count, 5)
        XCTAssertEqual(offset, offsets[read.count])
        XCTAssertTrue(reason.contains("never wholly reached the disk"), reason)
    }

    /// The last write starts 6 bytes before a sector's end, and only that sector was not written:
    /// the first record's header is zeros up to the sector's end (its length, half its checksum),
    /// its own bytes after it.
    func testAnUnwrittenSectorThatEndsInsideARecordsHeaderIsATear() {
        var bytes = JournalFormat.header(.segment, version: 1)
        let fill = 506 - bytes.count - JournalFormat.recordHeaderSize
        JournalFormat.append(LogRecord(version: 1, payload: Array(repeating: UInt8(ascii: "a"), count: fill)), to: &bytes)
        let syncedEnd = bytes.count
        XCTAssertEqual(syncedEnd % 512, 506)
        for version in 2...6 {
            JournalFormat.append(LogRecord(version: UInt64(version), payload: Array(#"{"v":"\#(String(repeating: "b", count: 200))"}"#.utf8)), to: &bytes)
        }
        bytes += [UInt8](repeating: 0, count: 4096)
        for index in syncedEnd..<512 { bytes[index] = 0 }
        var scanner = JournalScanner(bytes: bytes)
        guard case .record = scanner.next() else { return XCTFail("the synced record reads") }
        guard case .torn(let offset, _) = scanner.next() else { return XCTFail("a header cut by an unwritten sector is a tear") }
        XCTAssertEqual(offset, syncedEnd)
    }

    func testAHoleFollowedByDataBeyondOneWritesReachIsDamage() {
        var (bytes, offsets) = unfinishedWrite(room: JournalFormat.maxUnsyncedBytes + 4096)
        let sector = (offsets[5] / 512 + 1) * 512
        for index in sector..<(sector + 512) { bytes[index] = 0 }
        // A sound record far beyond what one unsynced write can reach: not what a crash leaves.
        var far: [UInt8] = []
        JournalFormat.append(LogRecord(version: 10, payload: Array("{}".utf8)), to: &far)
        let at = sector + JournalFormat.maxUnsyncedBytes + 100
        bytes.replaceSubrange(at..<(at + far.count), with: far)
        var scanner = JournalScanner(bytes: bytes)
        for _ in 0..<5 { _ = scanner.next() }
        guard case .damaged(let offset, _) = scanner.next() else { return XCTFail("data beyond one write's reach is damage") }
        XCTAssertEqual(offset, offsets[5])
    }

    /// A group of more than `maxUnsyncedBytes` goes in synced pieces, cut wherever the bytes fall:
    /// a crash while the second piece was unsynced lost the sectors where it starts, inside a record
    /// the first piece began, and kept later ones. A tear, not damage: that write reaches a megabyte
    /// past where it began, further than a megabyte past the record's start.
    func testAnUnwrittenStartOfAGroupsSecondPieceInsideARecordIsATear() {
        var bytes = JournalFormat.header(.segment, version: 1)
        var offsets: [Int] = []
        for version in 1...44 {
            offsets.append(bytes.count)
            let payload = #"{"v":"\#(String(repeating: "z", count: 50_000))"}"#
            JournalFormat.append(LogRecord(version: UInt64(version), payload: Array(payload.utf8)), to: &bytes)
        }
        let groupStart = JournalFormat.headerSize
        let secondPiece = JournalFormat.pieceEnd(from: groupStart, groupEnd: bytes.count)
        let thirdPiece = JournalFormat.pieceEnd(from: secondPiece, groupEnd: bytes.count)
        XCTAssertEqual(secondPiece % JournalFormat.sectorSize, 0, "a piece after the first starts a sector")
        XCTAssertGreaterThan(secondPiece, groupStart + JournalFormat.maxUnsyncedBytes - JournalFormat.sectorSize)
        XCTAssertGreaterThan(bytes.count, thirdPiece)
        // The third piece was never written; the room after it is zeros.
        for index in thirdPiece..<bytes.count { bytes[index] = 0 }
        bytes += [UInt8](repeating: 0, count: 8192)
        // The second piece's first sector never reached the disk; the ones after it did.
        for index in secondPiece..<(secondPiece + JournalFormat.sectorSize) { bytes[index] = 0 }
        let split = offsets.lastIndex { $0 < secondPiece }!
        XCTAssertLessThan(secondPiece + 1_024, offsets[split + 1], "the record spans the pieces' border")
        var scanner = JournalScanner(bytes: bytes)
        for version in 1...split {
            guard case .record(let record, _) = scanner.next() else { return XCTFail("record \(version) was synced") }
            XCTAssertEqual(record.version, UInt64(version))
        }
        guard case .torn(let offset, let reason) = scanner.next() else { return XCTFail("the record across the pieces' border is torn") }
        XCTAssertEqual(offset, offsets[split])
        XCTAssertTrue(reason.contains("never wholly reached the disk"), reason)
    }

    func testAGroupIsWrittenInPiecesOfAtMostOneWriteThatEndOnASector() {
        XCTAssertEqual(JournalFormat.pieceEnd(from: 100, groupEnd: 5_000), 5_000, "a group within one write is one piece")
        XCTAssertEqual(JournalFormat.pieceEnd(from: 100, groupEnd: 100 + JournalFormat.maxUnsyncedBytes), 100 + JournalFormat.maxUnsyncedBytes)
        XCTAssertEqual(JournalFormat.pieceEnd(from: 100, groupEnd: 3 << 20), JournalFormat.maxUnsyncedBytes)
        XCTAssertEqual(JournalFormat.pieceEnd(from: 1 << 20, groupEnd: 3 << 20), 2 << 20)
    }

    func testAChangedByteWithRecordsAfterItIsDamageEvenWithRoomAfter() {
        // In the payload; in the length, making the record reach into the room or past the file.
        for (at, mask) in [(JournalFormat.recordHeaderSize + 40, UInt8(0x01)), (1, 0x10), (3, 0x40)] {
            var (bytes, offsets) = unfinishedWrite()
            bytes[offsets[2] + at] ^= mask
            var scanner = JournalScanner(bytes: bytes)
            for _ in 0..<2 { _ = scanner.next() }
            guard case .damaged(let offset, _) = scanner.next() else { return XCTFail("byte \(at): a changed byte is damage, not a tear") }
            XCTAssertEqual(offset, offsets[2])
        }
    }

    func testHeadersOfTheWrongKindOrFormatAreRefused() {
        let segment = JournalFormat.header(.segment, version: 9)
        XCTAssertEqual(segment.withUnsafeBytes { JournalFormat.parseHeader($0, kind: .snapshot) }, .failure(.badMagic))
        var future = segment
        future[4] = 4
        XCTAssertEqual(future.withUnsafeBytes { JournalFormat.parseHeader($0, kind: .segment) }, .failure(.unknownFormat(4)))
        var older = segment
        older[4] = 1
        XCTAssertEqual(older.withUnsafeBytes { JournalFormat.parseHeaderAndFormat($0, kind: .segment).map(\.format) }, .success(1))
        XCTAssertEqual(Array(segment[..<10]).withUnsafeBytes { JournalFormat.parseHeader($0, kind: .segment) }, .failure(.short(10)))
    }

    /// Whatever is done to the bytes, the scanner ends (end, torn or damaged) without trapping, and
    /// every record it returns is one that was written: damage is never read as an event.
    func testDamagedBytesNeverTrapAndNeverReadAsRecords() {
        var random = SeededRandom(seed: 42)
        var valid = JournalFormat.header(.segment, version: 1)
        let written = (1...8).map { LogRecord(version: UInt64($0), payload: Array("[\($0)]".utf8)) }
        for record in written { JournalFormat.append(record, to: &valid) }
        for round in 0..<2000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let index = Int.random(in: JournalFormat.headerSize..<bytes.count, using: &random)
                bytes[index] = UInt8.random(in: 0...255, using: &random)
            }
            if round % 3 == 0 { bytes = Array(bytes[..<Int.random(in: JournalFormat.headerSize...bytes.count, using: &random)]) }
            var scanner = JournalScanner(bytes: bytes)
            var read: [LogRecord] = []
            while case .record(let record, _) = scanner.next() { read.append(record) }
            XCTAssertEqual(read, Array(written.prefix(read.count)), "round \(round)")
        }
    }
}
