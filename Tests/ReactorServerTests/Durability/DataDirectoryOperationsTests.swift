import Foundation
import Logging
@testable import ReactorServer
import XCTest

/// Data directories on disk, offline: import, recovery (torn tails cut off, damage refused with
/// its file and offset), check, compact and export.
final class DataDirectoryOperationsTests: XCTestCase {
    private var root: String!

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "reactor-storage-\(UUID().uuidString)"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func export(_ count: Int, from start: UInt64 = 0, state: String = "{}") -> [[UInt8]] {
        var lines = [Array(#"{"version":\#(start),"state":\#(state)}"#.utf8)]
        for version in (start + 1)...(start + UInt64(count)) {
            lines.append(Array(#"{"version":\#(version),"event":{"type":"increment","path":"/n","by":1}}"#.utf8))
        }
        return lines
    }

    private func directory(_ name: String = "data") -> DataDirectory {
        DataDirectory(path: root + "/" + name)
    }

    private func recover(_ directory: DataDirectory, repair: Bool = true) throws -> (JSONDocument, JournalRecovery.Report) {
        var state = JSONDocument()
        let report = try JournalRecovery(directory: directory).read(repair: repair, restore: { state = try JSONDocument(snapshot: $0) }, replay: { try state.replay($0) })
        return (state, report)
    }

    private func segmentFile(_ directory: DataDirectory) throws -> String {
        directory.segmentPath(firstVersion: try XCTUnwrap(directory.segmentVersions().last))
    }

    func testTheParentOfAPathOfAnyLength() {
        XCTAssertEqual(DataDirectory.parent(of: "d"), ".")
        XCTAssertEqual(DataDirectory.parent(of: "d/"), ".")
        XCTAssertEqual(DataDirectory.parent(of: "."), ".")
        XCTAssertEqual(DataDirectory.parent(of: "/"), "/")
        XCTAssertEqual(DataDirectory.parent(of: "/d"), "/")
        XCTAssertEqual(DataDirectory.parent(of: "a/b"), "a")
        XCTAssertEqual(DataDirectory.parent(of: "/srv/data//"), "/srv")
    }

    /// A history starts over with a new name; one that cannot be written leaves no name behind,
    /// so that the next start draws another rather than read back the old one.
    func testAHistoryStartedOverNeverKeepsTheOldName() throws {
        let plain = directory("names")
        try plain.create()
        let first = plain.history(startingOver: false)
        XCTAssertEqual(plain.history(startingOver: false), first, "kept across starts")
        let second = plain.history(startingOver: true)
        XCTAssertNotEqual(second, first)
        XCTAssertEqual(plain.history(startingOver: false), second)

        let historyPath = plain.historyPath
        let full = DataDirectory(path: plain.path, faults: { operation, file in operation == .rename && file == historyPath ? ENOSPC : nil })
        var failures: [EventLogError] = []
        let third = full.history(startingOver: true) { failures.append($0) }
        XCTAssertEqual(failures.count, 1)
        XCTAssertNotEqual(third, second)
        XCTAssertFalse(FileManager.default.fileExists(atPath: historyPath), "the old name was left to be read back")
        let fourth = plain.history(startingOver: false)
        XCTAssertFalse([first, second, third].contains(fourth))

        // An import starts a history of its own, whatever name the directory held.
        let imported = directory("imported")
        try imported.create()
        try Array("0123456789abcdef\n".utf8).withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: imported.historyPath)) }
        XCTAssertEqual(imported.history(startingOver: false), "0123456789abcdef")
        XCTAssertEqual(try DataDirectoryOperations.importLines(export(3), into: imported, as: JSONDocument.self), 3)
        XCTAssertNotEqual(imported.history(startingOver: false), "0123456789abcdef")
    }

    func testAnImportRecoversToTheSameStateAndVersion() throws {
        let data = directory()
        XCTAssertEqual(try DataDirectoryOperations.importLines(export(50), into: data, as: JSONDocument.self), 50)
        let (state, report) = try recover(data)
        XCTAssertEqual(state.root, ["n": 50])
        XCTAssertEqual(report.lastVersion, 50)
        XCTAssertEqual(report.records, 50)
        XCTAssertTrue(report.warnings.isEmpty)
    }

    func testATornTailIsCutOffWithAWarningNamingFileAndOffset() throws {
        let data = directory()
        _ = try DataDirectoryOperations.importLines(export(10), into: data, as: JSONDocument.self)
        let file = try segmentFile(data)
        let sound = try data.readFile(file).count
        var torn = JournalFormat.header(.segment, version: 0)  // any bytes will do: half a record
        torn.removeLast(4)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: file))
        handle.seekToEndOfFile()
        handle.write(Data(torn))
        handle.closeFile()

        let (_, checked) = try recover(data, repair: false)
        XCTAssertEqual(try data.readFile(file).count, sound + torn.count, "a check changes nothing")
        XCTAssertEqual(checked.warnings.count, 1)

        let (state, report) = try recover(data)
        XCTAssertEqual(state.root, ["n": 10])
        XCTAssertEqual(report.lastVersion, 10)
        let warning = try XCTUnwrap(report.warnings.first)
        XCTAssertTrue(warning.contains("journal/00000000000000000001.log at offset \(sound)"), warning)
        XCTAssertEqual(try data.readFile(file).count, sound, "cut back to the last whole record")
        XCTAssertTrue(try recover(data).1.warnings.isEmpty)
    }

    func testDamageBeforeTheLastRecordRefusesNamingFileAndOffset() throws {
        let data = directory()
        _ = try DataDirectoryOperations.importLines(export(10), into: data, as: JSONDocument.self)
        let file = try segmentFile(data)
        var bytes = try data.readFile(file)
        var scanner = JournalScanner(bytes: bytes)
        _ = scanner.next()
        let secondRecord = scanner.offset
        bytes[secondRecord + JournalFormat.recordHeaderSize + 3] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        XCTAssertThrowsError(try recover(data)) { error in
            XCTAssertTrue("\(error)".contains("journal/00000000000000000001.log at offset \(secondRecord)"), "\(error)")
            XCTAssertTrue("\(error)".contains("checksum"), "\(error)")
        }
        XCTAssertEqual(try data.readFile(file), bytes, "nothing is changed")
    }

    func testADamagedSnapshotRefusesToLoad() throws {
        let data = directory()
        _ = try DataDirectoryOperations.importLines(export(3, state: #"{"n":100}"#), into: data, as: JSONDocument.self)
        let file = data.snapshotPath(version: 0)
        var bytes = try data.readFile(file)
        bytes[bytes.count - 2] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        XCTAssertThrowsError(try recover(data)) { error in
            XCTAssertTrue("\(error)".contains("snapshots/00000000000000000000.snapshot at offset 16"), "\(error)")
        }
    }

    func testAMissingRangeOfVersionsIsDamage() throws {
        let data = directory()
        _ = try DataDirectoryOperations.importLines(export(5), into: data, as: JSONDocument.self)
        // A second segment that starts past the end of the first.
        var bytes = JournalFormat.header(.segment, version: 9)
        JournalFormat.append(LogRecord(version: 9, payload: Array(#"{"type":"increment","path":"/n","by":1}"#.utf8)), to: &bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: data.segmentPath(firstVersion: 9)))
        XCTAssertThrowsError(try recover(data)) { error in
            XCTAssertTrue("\(error)".contains("versions 6 to 8 are missing"), "\(error)")
        }
    }

    func testAnEventThatDoesNotReplayIsDamage() throws {
        let data = directory()
        XCTAssertThrowsError(try DataDirectoryOperations.importLines([Array(#"{"version":0,"state":{"n":"text"}}"#.utf8),
                                                      Array(#"{"version":1,"event":{"type":"increment","path":"/n","by":1}}"#.utf8)],
                                                     into: data, as: JSONDocument.self)) { error in
            XCTAssertTrue("\(error)".contains("line 2"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: data.path), "a bad import leaves no trace, not even the directory")
    }

    func testABadImportIntoAnExistingEmptyDirectoryAddsNothingToIt() throws {
        let data = directory()
        try FileManager.default.createDirectory(atPath: data.path, withIntermediateDirectories: true)
        XCTAssertThrowsError(try DataDirectoryOperations.importLines([Array(#"{"version":0,"state":{}}"#.utf8), Array("not json".utf8)], into: data, as: JSONDocument.self))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: data.path), [])
        XCTAssertEqual(try DataDirectoryOperations.importLines(export(2), into: data, as: JSONDocument.self), 2, "and it is still good for an import")
    }

    func testImportRefusesGapsAndNonEmptyDirectories() throws {
        let data = directory()
        var lines = export(4)
        lines.remove(at: 2)
        XCTAssertThrowsError(try DataDirectoryOperations.importLines(lines, into: data, as: JSONDocument.self)) { error in
            XCTAssertTrue("\(error)".contains("line 3: version 3 where 2 was expected"), "\(error)")
        }
        _ = try DataDirectoryOperations.importLines(export(2), into: data, as: JSONDocument.self)
        XCTAssertThrowsError(try DataDirectoryOperations.importLines(export(2), into: data, as: JSONDocument.self)) { error in
            XCTAssertTrue("\(error)".contains("empty data directory"), "\(error)")
        }
    }

    func testCompactSnapshotsTheNewestStateAndRemovesTheJournal() throws {
        let data = directory()
        _ = try DataDirectoryOperations.importLines(export(30), into: data, as: JSONDocument.self)
        XCTAssertEqual(try DataDirectoryOperations.compact(data, as: JSONDocument.self), 30)
        XCTAssertEqual(try data.snapshotVersions(), [30])
        XCTAssertEqual(try data.segmentVersions(), [])
        let (state, report) = try recover(data)
        XCTAssertEqual(state.root, ["n": 30])
        XCTAssertEqual(report.snapshotVersion, 30)
        XCTAssertEqual(report.lastVersion, 30)
    }

    func testExportGivesBackWhatWasImported() throws {
        let data = directory()
        let lines = export(12, from: 7, state: #"{"n":-3,"name":"x"}"#)
        _ = try DataDirectoryOperations.importLines(lines, into: data, as: JSONDocument.self)
        var exported: [UInt8] = []
        let report = try DataDirectoryOperations.export(data) { exported += $0 }
        XCTAssertEqual(report.lastVersion, 19)
        let expected = lines.map { try! JSON(parsing: $0) }
        let actual = exported.split(separator: UInt8(ascii: "\n")).map { try! JSON(parsing: Array($0)) }
        XCTAssertEqual(actual, expected)
    }

    /// Idempotency answers travel with their records through export and import, so that a retry
    /// reaching the restored server is answered, not applied again; those past their window do not.
    /// An event keeps its bytes as they were sent with answers beside it too.
    func testAnswersWithinTheirWindowGoThroughExportAndImport() throws {
        let later = JournaledAnswer.now() + 3_600_000
        let lines = [
            #"{"version":2,"answers":[{"key":"\u0000old","fingerprint":"ab01","version":1,"expiresAt":\#(later)},{"key":"\u0000gone","fingerprint":"ab02","version":2,"expiresAt":5}],"state":{"n":2}}"#,
            #"{"version":3,"event":{"type":"increment","path":"/n"}}"#,
            #"{"version":4,"answers":[{"key":"alice\u0000k","fingerprint":"cd03","version":4,"expiresAt":\#(later),"body":{"version":4,"events":2}}],"event":{"type": "increment", "path": "/n"}}"#,
        ].map { Array($0.utf8) }
        let data = directory()
        XCTAssertEqual(try DataDirectoryOperations.importLines(lines, into: data, as: JSONDocument.self), 4)
        let (state, report) = try recover(data)
        XCTAssertEqual(state.root, ["n": 4])
        XCTAssertEqual(report.answers, [
            JournaledAnswer(version: 1, expiresAt: later, fingerprint: "ab01", key: "\u{0}old"),
            JournaledAnswer(version: 4, expiresAt: later, fingerprint: "cd03", key: "alice\u{0}k", body: Array(#"{"version":4,"events":2}"#.utf8)),
        ])
        var exported: [UInt8] = []
        _ = try DataDirectoryOperations.export(data) { exported += $0 }
        let expected = [
            #"{"version":2,"answers":[{"key":"\u0000old","fingerprint":"ab01","version":1,"expiresAt":\#(later)}],"state":{"n":2}}"#,
            #"{"version":3,"event":{"type":"increment","path":"/n"}}"#,
            #"{"version":4,"answers":[{"key":"alice\u0000k","fingerprint":"cd03","version":4,"expiresAt":\#(later),"body":{"version":4,"events":2}}],"event":{"type": "increment", "path": "/n"}}"#,
        ]
        XCTAssertEqual(String(decoding: exported, as: UTF8.self), expected.joined(separator: "\n") + "\n")
    }

    func testAnswersTheJournalCouldNotHoldAreRefusedNamingTheLine() {
        let state = #"{"version":0,"state":{}}"#
        for (answer, message) in [
            (#"{"key":"k","fingerprint":"not hex","version":1,"expiresAt":9}"#, "fingerprint"),
            (#"{"key":"k","fingerprint":"ab","version":2,"expiresAt":9}"#, "version"),
            (#"{"key":7,"fingerprint":"ab","version":1,"expiresAt":9}"#, "key"),
            (#"{"key":"k","fingerprint":"ab","version":1,"expiresAt":-1}"#, "expiresAt"),
            (#"{"key":"k","fingerprint":"ab","version":1,"expiresAt":9,"status":200}"#, "status"),
        ] {
            let data = directory("bad")
            let lines = [state, #"{"version":1,"answers":[\#(answer)],"event":{"type":"increment","path":"/n"}}"#].map { Array($0.utf8) }
            XCTAssertThrowsError(try DataDirectoryOperations.importLines(lines, into: data, as: JSONDocument.self)) { error in
                let text = (error as? EventLogError)?.message ?? ""
                XCTAssertTrue(text.hasPrefix("line 2: answer 1") && text.contains(message), text)
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: data.path))
        }
    }

    /// A crash between writing a snapshot and removing the older one leaves both, and perhaps a
    /// temporary file: opening the directory keeps the newest and removes the rest.
    func testOpeningRemovesWhatACrashDuringASnapshotLeft() throws {
        let data = directory()
        _ = try DataDirectoryOperations.importLines(export(10), into: data, as: JSONDocument.self)
        XCTAssertEqual(try DataDirectoryOperations.compact(data, as: JSONDocument.self), 10)
        try FileManager.default.copyItem(atPath: data.snapshotPath(version: 10), toPath: data.snapshotPath(version: 3))
        XCTAssertTrue(FileManager.default.createFile(atPath: data.snapshotPath(version: 11) + ".tmp", contents: Data([1, 2, 3])))
        let loop = try EventLoop()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let (log, state, version) = try DataDirectoryOperations.open(data, initialState: JSONDocument(), loop: loop, options: .init(), logger: logger)
        XCTAssertEqual(version, 10)
        XCTAssertEqual(state.root, ["n": 10])
        XCTAssertEqual(try data.snapshotVersions(), [10])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: data.snapshotsPath).sorted(), ["00000000000000000010.snapshot"])
        withExtendedLifetime(log) {}
    }

    func testASecondUserOfTheDirectoryIsRefused() throws {
        let data = directory()
        try data.create()
        let lock = try data.lock()
        defer { close(lock) }
        XCTAssertThrowsError(try data.lock()) { error in
            XCTAssertTrue("\(error)".contains("in use by another process"), "\(error)")
        }
    }
}
