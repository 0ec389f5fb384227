import Foundation
@testable import ReactorServer
import XCTest

/// The journal's writer on disk: the zeroed room it keeps ahead of its records when it syncs, and
/// that recovery continues where the records end, whether the writer closed or was cut off.
final class JournalWriterTests: XCTestCase {
    private var root: String!

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "reactor-writer-\(UUID().uuidString)"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func records(_ versions: ClosedRange<UInt64>) -> [LogRecord] {
        versions.map { LogRecord(version: $0, payload: Array(#"{"type":"increment","path":"/n","by":\#($0)}"#.utf8)) }
    }

    private func fileSize(_ path: String) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    private func recover(_ directory: DataDirectory) throws -> (versions: [UInt64], report: JournalRecovery.Report) {
        var versions: [UInt64] = []
        let report = try JournalRecovery(directory: directory).read(repair: true, restore: { _ in }, replay: { versions.append($0.version) })
        return (versions, report)
    }

    private func newDirectory() throws -> DataDirectory {
        let directory = DataDirectory(path: root)
        try directory.create()
        try FileEventLog.writeSnapshot(LogRecord(version: 0, payload: Array("{}".utf8)), in: directory, removingSegments: [], snapshots: [])
        return directory
    }

    func testSyncedAppendsWriteOverZeroedRoomAndACloseCutsItOff() throws {
        let directory = try newDirectory()
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        XCTAssertEqual(try writer.append(records(1...3), policy: .batch).get(), [])
        let segment = directory.segmentPath(firstVersion: 1)
        let recordsEnd = JournalFormat.headerSize + records(1...3).reduce(0) { $0 + JournalFormat.encodedSize($1) }
        XCTAssertEqual(try fileSize(segment), recordsEnd + JournalWriter.roomStep, "zeroed room follows the records")

        // Cut off without closing, as by a crash: the room stays, and is read as the end.
        var (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1, 2, 3])
        XCTAssertEqual(report.warnings, [])
        XCTAssertEqual(report.lastSegment?.size, recordsEnd)

        let resumed = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: report.lastSegment, nextVersion: 4)
        XCTAssertEqual(try resumed.append(records(4...5), policy: .batch).get(), [])
        XCTAssertEqual(try fileSize(segment), recordsEnd + JournalWriter.roomStep, "written over the room, which was big enough")
        resumed.close()
        (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1, 2, 3, 4, 5])
        XCTAssertEqual(try fileSize(segment), report.lastSegment?.size, "a closed segment ends with its records")
        XCTAssertEqual(report.warnings, [])
    }

    /// With `--fsync always` each record is written and synced on its own: when one of a group's
    /// fails, the group is refused whole, so the records of it already synced must go too.
    func testAGroupThatFailsPartWayLeavesNoneOfItsRecords() throws {
        let writes = Locked(0)
        let failing = Locked(false)
        var directory = try newDirectory()
        directory.faults = { operation, _ in
            guard operation == .write, failing.withLock({ $0 }) else { return nil }
            return writes.withLock { count in
                count += 1
                return count == 3 ? EIO : nil
            }
        }
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        XCTAssertEqual(try writer.append(records(1...2), policy: .always).get(), [])
        failing.withLock { $0 = true }
        guard case .failure = writer.append(records(3...6), policy: .always) else { return XCTFail("the third record's write fails") }
        failing.withLock { $0 = false }
        XCTAssertEqual(try writer.append(records(3...4), policy: .batch).get(), [], "the versions of the refused group are given again")
        writer.close()
        XCTAssertEqual(try recover(directory).versions, [1, 2, 3, 4])
    }

    /// An append that starts a segment and then fails leaves the segment for the next one to fill:
    /// that one reports it, so the log lists every segment holding records.
    func testASegmentStartedByAFailedAppendIsReportedByTheNextThatSucceeds() throws {
        // While failing, a file's first write (a new segment's header) goes through, later ones not.
        let failing = Locked(false)
        let written = Locked<Set<String>>([])
        var directory = try newDirectory()
        directory.faults = { operation, file in
            guard operation == .write, failing.withLock({ $0 }) else { return nil }
            return written.withLock { $0.insert(file).inserted } ? nil : ENOSPC
        }
        let writer = try JournalWriter(directory: directory, segmentLimit: 1024, lastSegment: nil, nextVersion: 1)
        XCTAssertEqual(try writer.append(records(1...4), policy: .batch).get(), [])
        failing.withLock { $0 = true }
        guard case .failure = writer.append(records(5...24), policy: .batch) else { return XCTFail("the records' write fails") }
        failing.withLock { $0 = false }
        XCTAssertEqual(try directory.segmentVersions(), [1, 5], "the new segment was started")
        XCTAssertEqual(try writer.append(records(5...6), policy: .batch).get(), [5])
        XCTAssertEqual(try writer.append(records(7...7), policy: .batch).get(), [])
        writer.close()
        XCTAssertEqual(try recover(directory).versions, Array(1...7))
    }

    /// A snapshot newer than the last segment's last record (the records after it were never synced
    /// and a power cut took them): the next events start a segment of their own, and the journal
    /// reads back whole, where continuing that segment would leave a gap in it.
    func testAfterASnapshotNewerThanTheLastRecordAppendsStartANewSegment() throws {
        let directory = try newDirectory()
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        XCTAssertEqual(try writer.append(records(1...5), policy: .batch).get(), [])
        writer.close()
        try FileEventLog.writeSnapshot(LogRecord(version: 8, payload: Array("{}".utf8)), in: directory, removingSegments: [], snapshots: [0])
        let (_, report) = try recover(directory)
        XCTAssertEqual(report.lastVersion, 8)
        XCTAssertNil(report.lastSegment, "segment 1 ends at version 5, before the snapshot")
        let next = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: report.lastSegment, nextVersion: 9)
        XCTAssertEqual(try next.append(records(9...10), policy: .batch).get(), [])
        next.close()
        XCTAssertEqual(try recover(directory).versions, [9, 10])
    }

    func testAnAppendAfterAFormerFormatsSegmentStartsASegmentOfTheCurrentFormat() throws {
        let directory = try newDirectory()
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        XCTAssertEqual(try writer.append(records(1...3), policy: .batch).get(), [])
        writer.close()
        // What an earlier reactord wrote: the same records under format 1.
        let file = directory.segmentPath(firstVersion: 1)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: file))
        try handle.seek(toOffset: 4)
        try handle.write(contentsOf: Data([1, 0]))
        try handle.close()
        let (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1, 2, 3])
        XCTAssertNil(report.lastSegment, "a format 1 segment is read, not continued")
        let next = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: report.lastSegment, nextVersion: 4)
        let answer = JournaledAnswer(version: 4, expiresAt: 9, fingerprint: "f", key: "k")
        XCTAssertEqual(try next.append([LogRecord(version: 4, payload: Array("{}".utf8), answers: [answer])], policy: .batch).get(), [])
        next.close()
        let (all, after) = try recover(directory)
        XCTAssertEqual(all, [1, 2, 3, 4])
        XCTAssertEqual(after.segments, [1, 4])
        XCTAssertEqual(after.answers, [answer])
        let header = try directory.readFile(directory.segmentPath(firstVersion: 4))
        XCTAssertEqual(header.withUnsafeBytes { JournalFormat.parseHeaderAndFormat($0, kind: .segment).map(\.format) }, .success(JournalFormat.formatVersion))
    }

    func testRecoveryGathersTheAnswersOfTheSnapshotAndOfTheRecordsOnDiskOnce() throws {
        let directory = try newDirectory()
        let answer = { (version: UInt64) in JournaledAnswer(version: version, expiresAt: 1_000 + version, fingerprint: "f\(version)", key: "k\(version)") }
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        let written = (1...6).map { version in
            LogRecord(version: version, payload: Array("{}".utf8), answers: version.isMultiple(of: 2) ? [answer(version)] : [])
        }
        XCTAssertEqual(try writer.append(written, policy: .batch).get(), [])
        writer.close()
        // The snapshot at 4 folds in 4 (still in segment 1, read again) and one whose segment is
        // gone; not 2, past the number it keeps, but 2's record is still on disk. Oldest first.
        let gone = JournaledAnswer(version: 0, expiresAt: 7, fingerprint: "0", key: "gone")
        try FileEventLog.writeSnapshot(LogRecord(version: 4, payload: Array("{}".utf8), answers: [gone, answer(4)]),
                                       in: directory, removingSegments: [], snapshots: [0])
        let (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [5, 6])
        XCTAssertEqual(report.answers, [gone, answer(2), answer(4), answer(6)])
    }

    /// The records of a request of several events, the last of them `continued: false`.
    private func request(_ versions: ClosedRange<UInt64>) -> [LogRecord] {
        records(versions).map { LogRecord(version: $0.version, payload: $0.payload, continued: $0.version != versions.upperBound) }
    }

    func testARequestWhoseLastRecordNeverReachedTheDiskIsCutOffWhole() throws {
        let directory = try newDirectory()
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        XCTAssertEqual(try writer.append(records(1...2) + request(3...4), policy: .always).get(), [])
        let requestStart = JournalFormat.headerSize + records(1...2).reduce(0) { $0 + JournalFormat.encodedSize($1) }
        // What a crash between the pieces of a request's write leaves (a group over 1 MiB is
        // written and synced a megabyte at a time): its first records synced, the last never written.
        XCTAssertEqual(try writer.append(Array(request(5...7).prefix(2)), policy: .always).get(), [])
        writer.close()
        var (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1, 2, 3, 4])
        XCTAssertEqual(report.lastVersion, 4)
        XCTAssertEqual(report.records, 4)
        let unfinishedStart = requestStart + request(3...4).reduce(0) { $0 + JournalFormat.encodedSize($1) }
        XCTAssertEqual(report.lastSegment?.size, unfinishedStart)
        XCTAssertEqual(report.warnings, [])
        XCTAssertEqual(report.unfinishedRequest, "journal/00000000000000000001.log at offset \(unfinishedStart): versions 5 to 6, truncated there")
        XCTAssertEqual(try fileSize(directory.segmentPath(firstVersion: 1)), unfinishedStart)

        // Appends continue where the finished records end; the request's last record torn by a
        // crash takes its first records with it.
        let resumed = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: report.lastSegment, nextVersion: 5)
        XCTAssertEqual(try resumed.append(request(5...7), policy: .batch).get(), [])
        resumed.close()
        (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1, 2, 3, 4, 5, 6, 7])
        XCTAssertEqual(report.warnings, [])
        XCTAssertNil(report.unfinishedRequest)
        let segment = directory.segmentPath(firstVersion: 1)
        let whole = try fileSize(segment)
        XCTAssertEqual(truncate(segment, off_t(whole - 3)), 0)
        (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1, 2, 3, 4])
        XCTAssertEqual(report.warnings.count, 1, "\(report.warnings)")
        XCTAssertTrue(report.warnings[0].contains("runs past the end of the file"), report.warnings[0])
        XCTAssertEqual(report.unfinishedRequest, "journal/00000000000000000001.log at offset \(unfinishedStart): versions 5 to 6, truncated there")
        XCTAssertEqual(try fileSize(segment), unfinishedStart)
    }

    func testASegmentCutBeforeItsHeaderWasWholeLeavesTheOneBeforeItLast() throws {
        let directory = try newDirectory()
        var first = JournalFormat.header(.segment, version: 1)
        for record in records(1...1) + request(2...3) { JournalFormat.append(record, to: &first) }
        // Its last record torn (unsynced with `--fsync never`), as the next segment was begun.
        try directory.writeAtomically(Array(first.dropLast(3)), to: directory.segmentPath(firstVersion: 1))
        try directory.writeAtomically(Array(JournalFormat.header(.segment, version: 4).prefix(7)), to: directory.segmentPath(firstVersion: 4))
        let (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1])
        XCTAssertEqual(report.warnings.count, 2, "\(report.warnings)")
        XCTAssertTrue(report.warnings[0].contains("00000000000000000004.log: a segment header cut short (7 bytes); removed"), report.warnings[0])
        XCTAssertNotNil(report.unfinishedRequest)
        XCTAssertEqual(try directory.segmentVersions(), [1])
        XCTAssertEqual(report.lastSegment?.firstVersion, 1)
    }

    func testASegmentHeaderOfZerosIsOneThatNeverReachedTheDisk() throws {
        // A crash after the file grew and before its header was synced, on a filesystem that shows
        // the unwritten part as zeros: the directory still opens, at the segment before it.
        let directory = try newDirectory()
        var first = JournalFormat.header(.segment, version: 1)
        for record in records(1...3) { JournalFormat.append(record, to: &first) }
        try directory.writeAtomically(first, to: directory.segmentPath(firstVersion: 1))
        try directory.writeAtomically([UInt8](repeating: 0, count: JournalFormat.headerSize), to: directory.segmentPath(firstVersion: 4))
        let (versions, report) = try recover(directory)
        XCTAssertEqual(versions, [1, 2, 3])
        XCTAssertEqual(report.warnings, ["journal/00000000000000000004.log: a segment header of zeros only, never written; removed"])
        XCTAssertEqual(try directory.segmentVersions(), [1])
        XCTAssertEqual(report.lastSegment?.firstVersion, 1)
    }

    func testZerosPastASegmentHeaderAreDamageNotACrash() throws {
        // Nothing is written past a segment's header before the header is synced: zeros there (the
        // whole file, or the header alone with records after it) are synced bytes lost.
        for zeroedHeaderFollowedByRecords in [false, true] {
            try? FileManager.default.removeItem(atPath: root)
            let directory = try newDirectory()
            try directory.writeAtomically(JournalFormat.header(.segment, version: 1), to: directory.segmentPath(firstVersion: 1))
            var bytes = [UInt8](repeating: 0, count: JournalFormat.headerSize)
            if zeroedHeaderFollowedByRecords {
                for record in records(1...1) { JournalFormat.append(record, to: &bytes) }
            } else {
                bytes += [UInt8](repeating: 0, count: 4096)
            }
            try directory.writeAtomically(bytes, to: directory.segmentPath(firstVersion: 2))
            XCTAssertThrowsError(try recover(directory)) { error in
                XCTAssertEqual((error as? EventLogError)?.kind, .damaged, "\(error)")
            }
            XCTAssertEqual(try directory.segmentVersions(), [1, 2])
        }
    }

    func testAlwaysSyncsEachRequestOnItsOwnWithItsEventsTogether() throws {
        let syncs = Locked(0)
        var directory = try newDirectory()
        directory.faults = { operation, _ in
            if operation == .fsync { syncs.withLock { $0 += 1 } }
            return nil
        }
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        syncs.withLock { $0 = 0 }
        XCTAssertEqual(try writer.append(records(1...1) + request(2...4) + records(5...5), policy: .always).get(), [])
        XCTAssertEqual(syncs.withLock { $0 }, 3, "an event, a request of three, an event")
        writer.close()
        XCTAssertEqual(try recover(directory).versions, [1, 2, 3, 4, 5])
    }

    func testARequestThatDoesNotEndInItsSegmentWithSegmentsAfterItIsDamage() throws {
        let directory = try newDirectory()
        var first = JournalFormat.header(.segment, version: 1)
        for record in records(1...1) + Array(request(2...3).prefix(1)) { JournalFormat.append(record, to: &first) }
        var second = JournalFormat.header(.segment, version: 3)
        for record in records(3...4) { JournalFormat.append(record, to: &second) }
        try directory.writeAtomically(first, to: directory.segmentPath(firstVersion: 1))
        try directory.writeAtomically(second, to: directory.segmentPath(firstVersion: 3))
        XCTAssertThrowsError(try recover(directory)) { error in
            let message = (error as? EventLogError)?.message ?? "\(error)"
            XCTAssertTrue(message.contains("a request of several events starts at version 2 and does not end in this segment"), message)
        }
    }

    /// A group that fails and cannot be cut off again may be read back at the next start: its
    /// outcome is not known, and it is not refused as though it were not written.
    func testAFailedGroupThatCannotBeCutOffIsIndeterminate() throws {
        let failing = Locked(false)
        var directory = try newDirectory()
        directory.faults = { operation, _ in
            failing.withLock { $0 } && (operation == .fsync || operation == .truncate) ? EIO : nil
        }
        let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: 1)
        XCTAssertEqual(try writer.append(records(1...2), policy: .batch).get(), [])
        failing.withLock { $0 = true }
        guard case .failure(let error) = writer.append(records(3...4), policy: .batch) else { return XCTFail("the sync fails") }
        XCTAssertEqual(error.kind, .indeterminate, error.message)
        failing.withLock { $0 = false }
        XCTAssertEqual(try writer.append(records(3...4), policy: .batch).get(), [], "cut off at last, the versions are given again")
        writer.close()
        XCTAssertEqual(try recover(directory).versions, [1, 2, 3, 4])
    }

    func testAFullSegmentIsCutToItsRecordsAndUnsyncedAppendsKeepNoRoom() throws {
        let directory = try newDirectory()
        let writer = try JournalWriter(directory: directory, segmentLimit: 1024, lastSegment: nil, nextVersion: 1)
        var started: [UInt64] = []
        for version in stride(from: UInt64(1), through: 40, by: 4) {
            started += try writer.append(records(version...(version + 3)), policy: .batch).get()
        }
        XCTAssertFalse(started.isEmpty)
        let segments = try directory.segmentVersions()
        for first in segments.dropLast() {
            let size = try fileSize(directory.segmentPath(firstVersion: first))
            XCTAssertLessThanOrEqual(size, 1024, "segment \(first) was cut to its records")
        }
        XCTAssertLessThanOrEqual(try fileSize(directory.segmentPath(firstVersion: segments.last!)), 1024, "the room stops at the segment's limit")
        writer.close()

        let unsynced = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: try recover(directory).report.lastSegment, nextVersion: 41)
        XCTAssertEqual(try unsynced.append(records(41...42), policy: .never).get(), [])
        let last = directory.segmentPath(firstVersion: try XCTUnwrap(directory.segmentVersions().last))
        let (versions, report) = try recover(directory)
        XCTAssertEqual(versions, Array(1...42))
        XCTAssertEqual(try fileSize(last), report.lastSegment?.size, "without syncs, nothing bounds what a crash leaves unwritten: no room")
        unsynced.close()
    }
}
