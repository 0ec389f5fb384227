import Dispatch
import Foundation
import Logging
import Reactor
@testable import ReactorServer
import XCTest

/// The journal under a core on a real libuv loop, with disk errors injected: an event is answered
/// only once journaled, an event the journal refuses is undone and answered 503, subscribers never see
/// an undone state, and a reopened directory holds exactly what was acknowledged.
final class CommitPipelineTests: XCTestCase {
    private var root: String!
    private var loop: EventLoop!
    /// The errno the next journal writes (or fsyncs) fail with; nil lets them through.
    private let writeFault = Locked<Int32?>(nil)
    private let syncFault = Locked<Int32?>(nil)
    private let confined = LoopConfinedObjects()

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "reactor-pipeline-\(UUID().uuidString)"
        loop = try EventLoop.startThread()
    }

    override func tearDownWithError() throws {
        confined.release(on: loop)
        loop.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Everything a test touches on the loop thread.
    final class Harness: @unchecked Sendable {  // @unchecked: used on the loop thread only (see onLoop)
        let core: Core<JSONDocument>
        let pipeline: CommitPipeline<JSONDocument>
        let hub: SubscriptionHub<JSONDocument>
        let log: FileEventLog
        /// What a whole-state subscriber of the pipeline's hub got: its snapshot, then every state.
        var received: [SubscriberMessage] = []

        init(core: Core<JSONDocument>, pipeline: CommitPipeline<JSONDocument>, hub: SubscriptionHub<JSONDocument>, log: FileEventLog) {
            self.core = core
            self.pipeline = pipeline
            self.hub = hub
            self.log = log
        }

        /// The published states, as the subscriber saw them.
        var observed: [(version: UInt64, n: JSON?)] {
            received.map { message in
                (message.version, try! JSON(parsing: message.json)[try! JSONPointer("/state/n")])
            }
        }
    }

    /// A subscriber that keeps what it gets. @unchecked Sendable: used on the loop thread only.
    final class Recorder: SubscriptionSink, @unchecked Sendable {
        var messages: [SubscriberMessage] = []
        func deliver(_ message: SubscriberMessage) { messages.append(message) }

        /// Each message as (version, type, its JSON).
        var decoded: [(version: UInt64, kind: String, json: JSON)] {
            messages.map { ($0.version, $0.kind, try! JSON(parsing: $0.json)) }
        }
    }

    /// Unowned: the hub holds its subscribers, and the harness holds the hub through the pipeline.
    final class Subscriber: SubscriptionSink {
        unowned let harness: Harness
        init(_ harness: Harness) { self.harness = harness }
        func deliver(_ message: SubscriberMessage) { harness.received.append(message) }
    }

    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (@escaping @Sendable (T) -> Void) -> Void) -> T {
        loop.runAndWait(body)
    }

    private func open(fsync: FsyncPolicy = .batch, segmentBytes: Int = 1 << 20, snapshotEvents: Int = 100_000,
                      groupFillMilliseconds: UInt64 = 1) throws -> Harness {
        let directory = DataDirectory(path: root) { [writeFault, syncFault] operation, _ in
            switch operation {
            case .write: writeFault.withLock { $0 }
            case .fsync: syncFault.withLock { $0 }
            default: nil
            }
        }
        let loop = loop!
        let opened: Result<Harness, EventLogError> = onLoop { finish in
            finish(Result { () throws(EventLogError) in
                var logger = Logger(label: "test")
                logger.logLevel = .critical
                let (log, state, version) = try DataDirectoryOperations.open(directory, initialState: JSONDocument(), loop: loop,
                                                             options: .init(fsync: fsync, segmentBytes: segmentBytes), logger: logger)
                let core = Core(state: state, version: version, executor: loop)
                let published = PublishedState(core: core, state: state, version: version, isJournaled: true)
                let hub = SubscriptionHub<JSONDocument>(windowCapacity: 64, logger: logger) { published.current.state }
                let pipeline = CommitPipeline(core: core, published: published, log: log, hub: hub, loop: loop,
                                              options: .init(snapshotEvents: snapshotEvents, groupFillMilliseconds: groupFillMilliseconds),
                                              logger: logger)
                core.add(middleware: pipeline)
                let harness = Harness(core: core, pipeline: pipeline, hub: hub, log: log)
                let subscriber = Subscriber(harness)
                harness.received = hub.subscribe(subscriber, to: SubscriptionSelection(path: .root, mode: .state), since: nil)
                return harness
            })
        }
        let harness = try opened.get()
        confined.keep(harness)
        return harness
    }

    private func close(_ harness: Harness) {
        let _: Bool = onLoop { finish in harness.log.close { finish(true) } }
    }

    enum Answer: Equatable, Sendable {
        case version(UInt64)
        case status(Int)
    }

    private static let increment = DocumentEvent.increment(path: try! JSONPointer("/n"), by: .integer(1))

    /// Fires `count` increments in one loop iteration; each answer is the version or the problem's status.
    private func fire(_ harness: Harness, count: Int = 1) -> [Answer] {
        onLoop { finish in
            let answers = Locked<[Int: Answer]>([:])
            for index in 0..<count {
                harness.core.fire(event: Self.increment, origin: nil) { result in
                    guard case .success(let version) = result else { return XCTFail("the increment applies") }
                    harness.pipeline.whenPublished(version) { outcome in
                        let all = answers.withLock { answers -> [Int: Answer] in
                            switch outcome {
                            case .success(let published): answers[index] = .version(published)
                            case .failure(let problem): answers[index] = .status(problem.status.code)
                            }
                            return answers
                        }
                        if all.count == count { finish((0..<count).map { all[$0]! }) }
                    }
                }
            }
        }
    }

    private func published(_ harness: Harness) -> (version: UInt64, core: UInt64, n: JSON?, healthy: Bool) {
        onLoop { finish in
            let (version, state) = harness.pipeline.published
            finish((version, harness.core.version, state.root["n"], harness.pipeline.isHealthy))
        }
    }

    func testAnswersWaitForTheJournalAndFailuresAreUndone() throws {
        let harness = try open()
        XCTAssertEqual(fire(harness, count: 3), [.version(1), .version(2), .version(3)])

        writeFault.withLock { $0 = ENOSPC }
        XCTAssertEqual(fire(harness), [.status(503)])
        var now = published(harness)
        XCTAssertEqual(now.version, 3)
        XCTAssertEqual(now.core, 3, "the core is back at the last journaled version")
        XCTAssertEqual(now.n, 3)
        XCTAssertFalse(now.healthy)
        XCTAssertEqual(fire(harness, count: 5), Array(repeating: .status(503), count: 5), "a whole group fails together")

        writeFault.withLock { $0 = nil }
        XCTAssertEqual(fire(harness), [.version(4)], "the version of an undone event is given again")
        XCTAssertTrue(published(harness).healthy)

        syncFault.withLock { $0 = EIO }
        XCTAssertEqual(fire(harness, count: 2), [.status(503), .status(503)])
        syncFault.withLock { $0 = nil }
        XCTAssertEqual(fire(harness, count: 2), [.version(5), .version(6)])
        now = published(harness)
        XCTAssertEqual(now.n, 6)

        let observed: [UInt64] = onLoop { finish in finish(harness.observed.map(\.version)) }
        XCTAssertEqual(observed, Array(0...6), "subscribers saw every journaled state once and nothing undone")
        let values: [JSON?] = onLoop { finish in finish(harness.observed.map(\.n)) }
        XCTAssertEqual(values, [nil] + (1...6).map { JSON.integer($0) })

        close(harness)
        let reopened = try open()
        now = published(reopened)
        XCTAssertEqual(now.version, 6)
        XCTAssertEqual(now.n, 6)
        close(reopened)
    }

    /// At shutdown, events applied but not yet journaled (fired without waiting) are journaled
    /// before the log closes.
    func testDrainJournalsWhatWasAppliedBeforeTheLogCloses() throws {
        let harness = try open()
        let drained: UInt64 = onLoop { finish in
            for _ in 0..<25 { harness.core.fire(event: Self.increment) }
            harness.pipeline.drain { finish(harness.log.lastVersion) }
        }
        XCTAssertEqual(drained, 25)
        close(harness)
        let reopened = try open()
        XCTAssertEqual(published(reopened).n, 25)
        close(reopened)
    }

    /// After an append answers its clients, the next one waits for as many events as it answered
    /// (under load, those clients send their next at once) for a few turns of the loop: events
    /// fired over two turns go in one group, not two. A wait that nothing fills ends at its cap.
    func testTheNextGroupWaitsForTheClientsJustAnswered() throws {
        let harness = try open(groupFillMilliseconds: 10_000)
        XCTAssertEqual(fire(harness, count: 10), (1...10).map { .version($0) })
        let (answers, appends): ([Answer], UInt64) = onLoop { [loop] finish in
            let appendsBefore = harness.log.statistics.appendSeconds.count
            let answers = Locked<[Answer]>([])
            @Sendable func fire(_ count: Int) {
                for _ in 0..<count {
                    harness.core.fire(event: Self.increment, origin: nil) { result in
                        guard case .success(let version) = result else { return XCTFail("the increment applies") }
                        harness.pipeline.whenPublished(version) { outcome in
                            let all = answers.withLock { answers in
                                answers.append(try! .version(outcome.get()))
                                return answers
                            }
                            if all.count == 10 { finish((all, harness.log.statistics.appendSeconds.count - appendsBefore)) }
                        }
                    }
                }
            }
            // Four events in this turn, six in the next.
            fire(4)
            loop!.enqueue { fire(6) }
        }
        XCTAssertEqual(answers, (11...20).map { .version($0) })
        XCTAssertEqual(appends, 1, "the events of both turns went in one group")

        close(harness)

        // Ten answered, one comes back, and the loop has nothing else to do: the wait for the
        // other nine ends at its cap (a millisecond by default).
        let reopened = try open()
        XCTAssertEqual(fire(reopened, count: 10), (21...30).map { .version($0) })
        XCTAssertEqual(fire(reopened, count: 1), [.version(31)])
        close(reopened)
    }

    func testEveryFsyncPolicyKeepsWhatItAcknowledged() throws {
        for policy in FsyncPolicy.allCases {
            try? FileManager.default.removeItem(atPath: root)
            let harness = try open(fsync: policy)
            XCTAssertEqual(fire(harness, count: 4), (1...4).map { .version($0) }, "\(policy)")
            close(harness)
            let reopened = try open(fsync: policy)
            XCTAssertEqual(published(reopened).version, 4, "\(policy)")
            close(reopened)
        }
    }

    func testSnapshotsTrimTheJournalAndHistoryReadsWhatIsKept() throws {
        let harness = try open(segmentBytes: 4096, snapshotEvents: 40)
        for _ in 0..<10 { _ = fire(harness, count: 10) }
        XCTAssertEqual(published(harness).version, 100)
        // Snapshots are written off the loop: wait until the log has taken the newest in.
        let directory = DataDirectory(path: root)
        let deadline = Date().addingTimeInterval(5)
        while (onLoop { finish in finish(harness.log.oldestVersion) } as UInt64) < 80 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(try directory.snapshotVersions().count, 1, "older snapshots are removed")
        let snapshot = try XCTUnwrap(directory.snapshotVersions().last)
        XCTAssertGreaterThanOrEqual(snapshot, 80)
        let segments = try directory.segmentVersions()
        XCTAssertGreaterThan(segments.count, 0)
        XCTAssertLessThanOrEqual(try XCTUnwrap(segments.first), snapshot + 1, "the segments after the snapshot are kept")
        XCTAssertGreaterThan(try XCTUnwrap(segments.first), 1, "the segments before it are gone")

        let recent: Result<[LogRecord], EventLogError> = onLoop { finish in harness.log.read(after: 95, limit: 10) { finish($0) } }
        XCTAssertEqual(try recent.get().map(\.version), [96, 97, 98, 99, 100])
        let old: Result<[LogRecord], EventLogError> = onLoop { finish in harness.log.read(after: 0, limit: 10) { finish($0) } }
        guard case .failure(let error) = old else { return XCTFail("the first events are no longer kept") }
        XCTAssertEqual(error.kind, .gone)
        close(harness)

        let reopened = try open(segmentBytes: 4096, snapshotEvents: 40)
        XCTAssertEqual(published(reopened).n, 100)
        close(reopened)
    }

    /// A single event POSTed as one line of JSON is journaled as it came; anything else is encoded.
    func testTheJSONAnEventCameInIsJournaledAsItIsWhenItIsOneLine() throws {
        let harness = try open()
        let offers: [(wire: String, event: DocumentEvent)] = [
            (#"{ "path":"/n", "type":"increment" }"#, .increment(path: try JSONPointer("/n"), by: 1)),
            ("{\"type\":\"increment\",\n\"path\":\"/n\"}", .increment(path: try JSONPointer("/n"), by: 1)),
            (#"{"type":"increment","path":"/n/x"}"#, .increment(path: try JSONPointer("/n/x"), by: 1)),  // rejected: /n is a number
            (#"{"type":"set","path":"/s","value":"é"}"#, .set(path: try JSONPointer("/s"), value: "é")),
        ]
        let results: [Bool] = onLoop { finish in
            finish(offers.map { offer in
                guard case .success(let version)? = harness.core.fireIfIdle(event: offer.event, origin: nil) else { return false }
                harness.pipeline.record(Array(offer.wire.utf8), asEventOf: version)
                return true
            })
        }
        XCTAssertEqual(results, [true, true, false, true])
        // An event fired with no record given is encoded.
        _ = fire(harness)
        let deadline = Date().addingTimeInterval(5)
        while published(harness).version < 4 && Date() < deadline { usleep(10_000) }
        let records: Result<[LogRecord], EventLogError> = onLoop { finish in harness.log.read(after: 0, limit: 10) { finish($0) } }
        let payloads = try records.get().map { String(decoding: $0.payload, as: UTF8.self) }
        XCTAssertEqual(payloads.count, 4)
        XCTAssertEqual(payloads[0], #"{ "path":"/n", "type":"increment" }"#, "one line: kept as it came")
        XCTAssertFalse(payloads[1].contains("\n"), "several lines: encoded")
        XCTAssertEqual(payloads[2], #"{"type":"set","path":"/s","value":"é"}"#)
        XCTAssertEqual(payloads[3], #"{"type":"increment","path":"/n","by":1}"#, "no record given: encoded")
        for (payload, event) in zip(payloads, [offers[0].event, offers[1].event, offers[3].event, offers[0].event]) {
            XCTAssertEqual(try JSONDocument.eventRegistry.decode(JSON(parsing: payload)) as? DocumentEvent, event, payload)
        }
        close(harness)
    }

    /// The pipeline keeps the state of a batch's last event only (a state kept for each would make
    /// the core copy the document's root for each): subscribers of patches, of a sub-tree's patches
    /// and of a sub-tree's states still get every version they should, each with its own change.
    func testEveryVersionOfABatchReachesEverySelection() throws {
        let harness = try open()
        XCTAssertEqual(fire(harness), [.version(1)])
        let a = try JSONPointer("/a")
        let selections = [SubscriptionSelection(path: .root, mode: .patch), SubscriptionSelection(path: a, mode: .patch),
                          SubscriptionSelection(path: a, mode: .state)]
        let recorders: [Recorder] = onLoop { finish in
            finish(selections.map { selection in
                let recorder = Recorder()
                recorder.messages = harness.hub.subscribe(recorder, to: selection, since: nil)
                return recorder
            })
        }
        let events: [DocumentEvent] = [
            .set(path: try JSONPointer("/a"), value: ["x": 1]),
            .increment(path: try JSONPointer("/n")),
            .set(path: try JSONPointer("/a/y"), value: "y"),
            .set(path: try JSONPointer("/b"), value: true),
            .remove(path: try JSONPointer("/a/x")),
        ]
        // Fired in one loop iteration: one batch of versions 2 to 6.
        let last: UInt64 = onLoop { finish in
            for (index, event) in events.enumerated() {
                harness.core.fire(event: event, origin: nil) { result in
                    guard case .success(let version) = result else { return XCTFail("\(event) applies") }
                    if index == events.count - 1 { harness.pipeline.whenPublished(version) { _ in finish(version) } }
                }
            }
        }
        XCTAssertEqual(last, 6)
        let final = published(harness)
        XCTAssertEqual(final.version, 6)

        let (root, subtree, subtreeStates) = (recorders[0].decoded, recorders[1].decoded, recorders[2].decoded)
        XCTAssertEqual(root.map(\.version), [1, 2, 3, 4, 5, 6], "every version, in order")
        var document = root[0].json["state"]!
        for message in root.dropFirst() {
            XCTAssertEqual(message.kind, "patch")
            try JSONPatch.apply(JSONPatch.operations(from: message.json["ops"]!), to: &document)
        }
        let expected: JSON = ["n": 2, "a": ["y": "y"], "b": true]
        XCTAssertEqual(document, expected, "the patches take the snapshot to the published state")
        XCTAssertEqual(subtree.map(\.version), [1, 2, 4, 6], "the versions that changed /a")
        var part = subtree[0].json["state"]!
        for message in subtree.dropFirst() { try JSONPatch.apply(JSONPatch.operations(from: message.json["ops"]!), to: &part) }
        XCTAssertEqual(part, ["y": "y"])
        XCTAssertEqual(subtreeStates.map(\.version), [1, 2, 4, 6])
        XCTAssertEqual(subtreeStates.map { $0.json["state"]! }, [.null, ["x": 1], ["x": 1, "y": "y"], ["y": "y"]])
        XCTAssertEqual(harness.observed.map(\.version), [0, 1, 2, 3, 4, 5, 6], "the whole-state subscriber too")
        close(harness)
    }
}
