import Foundation
import Reactor
@testable import ReactorServer
import TestSupport
import XCTest

/// Nothing the document accepts nests deeper than `JSON.maximumDepth`, so every acknowledged state
/// can be stored and loaded again; a path of any length is refused without walking it.
final class DocumentDepthTests: XCTestCase {
    private func pointer(_ levels: Int, _ token: String = "a") -> JSONPointer {
        JSONPointer(tokens: Array(repeating: token, count: levels))
    }

    private func nested(_ levels: Int, around innermost: JSON = 1) -> JSON {
        var value = innermost
        for _ in 0..<levels { value = [value] }
        return value
    }

    private func assertTooDeep(_ event: DocumentEvent, on root: JSON = [:], file: StaticString = #filePath, line: UInt = #line) {
        var document = JSONDocument(root: root)
        XCTAssertThrowsError(try document.apply(event as any Event), file: file, line: line) { error in
            XCTAssertEqual((error as? EventRejection)?.kind, .tooDeep, "\(error)", file: file, line: line)
        }
        XCTAssertEqual(document.root, root, "a refused event changes nothing", file: file, line: line)
    }

    func testAPathOfThirtyThousandTokensIsRefusedForEveryEventThatCreates() {
        let deep = pointer(30_000)
        assertTooDeep(.set(path: deep, value: 1))
        assertTooDeep(.merge(path: deep, value: ["x": 1]))
        assertTooDeep(.increment(path: deep, by: 1))
        assertTooDeep(.append(path: deep, value: 1))
        assertTooDeep(.patch([.add(path: deep, value: 1)]))
    }

    func testARemoveOrPatchTestAlongAPathThatDoesNotExistFailsWithoutRecursingDown() throws {
        var document = JSONDocument(root: ["a": 1])
        XCTAssertThrowsError(try document.apply(.remove(path: pointer(30_000))))
        XCTAssertThrowsError(try document.apply(.patch([.test(path: pointer(30_000), value: 1)])))
        XCTAssertThrowsError(try document.apply(.patch([.remove(path: pointer(30_000))])))
        XCTAssertEqual(document.root, ["a": 1])
    }

    func testTheDocumentMayReachTheLimitAndNotOneLevelPast() throws {
        var document = JSONDocument()
        try document.apply(.set(path: pointer(JSON.maximumDepth), value: 1))
        XCTAssertEqual(document.root.nestingDepth(upTo: 10_000), JSON.maximumDepth)
        assertTooDeep(.set(path: pointer(JSON.maximumDepth + 1), value: 1))
        assertTooDeep(.set(path: pointer(JSON.maximumDepth), value: []))
        assertTooDeep(.set(path: pointer(2), value: nested(JSON.maximumDepth - 1)))
        assertTooDeep(.merge(path: pointer(10), value: nested(JSON.maximumDepth - 9)))
        assertTooDeep(.append(path: pointer(JSON.maximumDepth), value: 1))
        assertTooDeep(.increment(path: pointer(JSON.maximumDepth + 1), by: 1))

        var atLimit = JSONDocument()
        try atLimit.apply(.set(path: pointer(2), value: nested(JSON.maximumDepth - 2)))
        try atLimit.apply(.append(path: pointer(JSON.maximumDepth - 1, "b"), value: 1))
        try atLimit.apply(.increment(path: pointer(JSON.maximumDepth, "c"), by: 1))
        XCTAssertEqual(atLimit.root.nestingDepth(upTo: 10_000), JSON.maximumDepth)
    }

    func testTheRefusalNamesTheLimit() {
        var document = JSONDocument()
        XCTAssertThrowsError(try document.apply(.set(path: pointer(1_000), value: 1))) { error in
            let reason = (error as? EventRejection)?.reason ?? ""
            XCTAssertTrue(reason.contains("512"), reason)
            XCTAssertTrue(reason.contains("1000 levels"), reason)
        }
    }

    /// Random events with deep and wide paths and values, applied in turn: whatever is accepted
    /// stays within the limit, serializes and parses back to the same document (a snapshot), and
    /// replays from its records to the same document (a restart from the journal).
    func testWhateverIsAcceptedSurvivesASnapshotAndAReplay() throws {
        var rng = SeededRandom(seed: 23)
        for round in 0..<40 {
            var document = JSONDocument()
            var records: [[UInt8]] = []
            for _ in 0..<60 {
                let event = randomEvent(using: &rng)
                do {
                    try document.apply(event as any Event)
                    records.append(event.json.jsonBytes)
                } catch let rejection as EventRejection {
                    _ = rejection
                }
                XCTAssertLessThanOrEqual(document.root.nestingDepth(upTo: 100_000), JSON.maximumDepth, "round \(round)")
            }
            let snapshot = try JSONDocument(snapshot: LogRecord(version: UInt64(records.count), payload: document.root.jsonBytes))
            XCTAssertEqual(snapshot.root, document.root, "round \(round): the snapshot loads back")
            var replayed = JSONDocument()
            for (index, payload) in records.enumerated() {
                try replayed.replay(LogRecord(version: UInt64(index + 1), payload: payload))
            }
            XCTAssertEqual(replayed.root, document.root, "round \(round): the journal replays")
        }
    }

    private func randomEvent(using rng: inout SeededRandom) -> DocumentEvent {
        func tokens(_ count: Int) -> [String] {
            (0..<count).map { _ in Bool.random(using: &rng) ? "a" : String(Int.random(in: 0...2, using: &rng)) }
        }
        func levels() -> Int {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: return Int.random(in: 400...700, using: &rng)
            case 1: return Int.random(in: 505...520, using: &rng)
            default: return Int.random(in: 0...8, using: &rng)
            }
        }
        func value() -> JSON {
            let depth = levels()
            var value: JSON = Bool.random(using: &rng) ? 1 : "x"
            for _ in 0..<depth { value = Bool.random(using: &rng) ? [value, 2] : ["k": value, "w": 3] }
            return value
        }
        let path = JSONPointer(tokens: tokens(levels()))
        switch Int.random(in: 0..<7, using: &rng) {
        case 0, 1: return .set(path: path, value: value())
        case 2: return .merge(path: path, value: ["m": value()])
        case 3: return .increment(path: path, by: 1)
        case 4: return .append(path: path, value: value())
        case 5: return .remove(path: path)
        default:
            let from = JSONPointer(tokens: tokens(Int.random(in: 0...3, using: &rng)))
            return .patch([Bool.random(using: &rng) ? .copy(from: from, path: path) : .move(from: from, path: path)])
        }
    }
}

/// A data directory written before the depth limit was enforced: refused at start-up and by
/// `check` as beyond the limits (not damaged), and brought back by `DocumentDepthRepair` with
/// every value kept.
final class DocumentDepthRepairTests: XCTestCase {
    private var root: String!

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "reactor-depth-\(UUID().uuidString)"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func deepText(_ levels: Int) -> String {
        String(repeating: #"{"a":"#, count: levels) + "1" + String(repeating: "}", count: levels)
    }

    /// A directory as the old server left it: a snapshot of `state` at version 0, then `events`.
    private func oldDirectory(state: String, events: [String], answers: [JournaledAnswer] = []) throws -> DataDirectory {
        let directory = DataDirectory(path: root + "/data")
        try directory.create()
        try FileEventLog.writeSnapshot(LogRecord(version: 0, payload: Array(state.utf8)), in: directory, removingSegments: [], snapshots: [])
        let writer = try JournalWriter(directory: directory, segmentLimit: 1 << 20, lastSegment: nil, nextVersion: 1)
        let records = events.enumerated().map { index, event in
            let version = UInt64(index + 1)
            return LogRecord(version: version, payload: Array(event.utf8), answers: answers.filter { $0.version == version })
        }
        if case .failure(let error) = writer.append(records, policy: .batch) { throw error }
        writer.close()
        return directory
    }

    private func assertBeyondLimits(_ directory: DataDirectory, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try DataDirectoryOperations.check(directory, as: JSONDocument.self), file: file, line: line) { error in
            let error = error as? EventLogError
            XCTAssertEqual(error?.kind, .beyondLimits, file: file, line: line)
            XCTAssertTrue(error?.message.contains("reactord repair") ?? false, "\(String(describing: error))", file: file, line: line)
        }
    }

    func testASnapshotNestedTooDeepIsRepairedKeepingEveryValue() throws {
        let directory = try oldDirectory(state: #"{"deep":"# + deepText(1_000) + #","n":0}"#,
                                         events: [#"{"type":"increment","path":"/n"}"#, #"{"type":"increment","path":"/n"}"#])
        assertBeyondLimits(directory)
        let report = try DocumentDepthRepair.repair(directory)
        XCTAssertEqual(report.version, 2)
        XCTAssertEqual(report.folded.count, 1)
        let (state, version) = try recovered(directory)
        XCTAssertEqual(version, 2)
        XCTAssertEqual(state.root["n"], 2)
        XCTAssertLessThanOrEqual(state.root.nestingDepth(upTo: 10_000), JSON.maximumDepth)
        // Down the path as far as the limit allows, then the rest as JSON text.
        let folded = try XCTUnwrap(state.root[report.folded[0]]?.stringValue)
        XCTAssertEqual(report.folded[0].tokens.count, JSON.maximumDepth)
        XCTAssertEqual(folded, deepText(1_000 - (JSON.maximumDepth - 1)))
        XCTAssertTrue(try DocumentDepthRepair.repair(directory).folded.isEmpty, "a second repair has nothing to do")
    }

    func testAJournalEventThatNestedTooDeepIsReplayedAndRepaired() throws {
        let deepPath = String(repeating: "/a", count: 1_000)
        let directory = try oldDirectory(state: "{}", events: [
            #"{"type":"set","path":"\#(deepPath)","value":1}"#,
            #"{"type":"increment","path":"/n"}"#,
        ])
        assertBeyondLimits(directory)
        let report = try DocumentDepthRepair.repair(directory)
        XCTAssertEqual(report.folded.map(\.tokens.count), [JSON.maximumDepth])
        let (state, version) = try recovered(directory)
        XCTAssertEqual(version, 2)
        XCTAssertEqual(state.root["n"], 1)
        XCTAssertEqual(state.root[report.folded[0]]?.stringValue, deepText(1_000 - JSON.maximumDepth))
        XCTAssertNoThrow(try DataDirectoryOperations.check(directory, as: JSONDocument.self))
    }

    func testARepairKeepsTheIdempotencyAnswersOfTheJournalItRemoves() throws {
        let now = JournaledAnswer.now()
        let live = JournaledAnswer(version: 2, expiresAt: now + 60_000, fingerprint: "ab", key: "k")
        let expired = JournaledAnswer(version: 1, expiresAt: now - 1, fingerprint: "cd", key: "old")
        let directory = try oldDirectory(state: #"{"deep":"# + deepText(1_000) + "}",
                                         events: [#"{"type":"increment","path":"/n"}"#, #"{"type":"increment","path":"/n"}"#],
                                         answers: [expired, live])
        XCTAssertEqual(try DocumentDepthRepair.repair(directory).folded.count, 1)
        XCTAssertEqual(try directory.segmentVersions(), [], "the journal went into the snapshot")
        let report = try JournalRecovery(directory: directory).read(repair: false, restore: { _ in }, replay: { _ in })
        XCTAssertEqual(report.answers, [live])
    }

    func testADirectoryWithinTheLimitIsLeftAsItIs() throws {
        let directory = try oldDirectory(state: #"{"n":0}"#, events: [#"{"type":"increment","path":"/n"}"#])
        let before = try directory.segmentVersions()
        XCTAssertTrue(try DocumentDepthRepair.repair(directory).folded.isEmpty)
        XCTAssertEqual(try directory.segmentVersions(), before)
        XCTAssertEqual(try recovered(directory).0.root, ["n": 1])
    }

    private func recovered(_ directory: DataDirectory) throws -> (JSONDocument, UInt64) {
        var state = JSONDocument()
        let report = try JournalRecovery(directory: directory).read(repair: false, restore: { state = try JSONDocument(snapshot: $0) }, replay: { try state.replay($0) })
        return (state, report.lastVersion)
    }
}
