import Dispatch
import Foundation
import Logging
import Reactor
@testable import ReactorServer
import XCTest

/// The commit pipeline over a log several servers share, with no Redis: an in-memory log that
/// behaves as the cluster's script and tail do (compare-and-append, a refusal writes nothing; what
/// is appended is handed over to every server) stands for it, and the test plays the other servers. What the others append is applied
/// and published as decided; this server's own events, refused because others got there first, are
/// applied again after theirs and answered with the versions they finally took, or with the
/// problem the state now refuses them with.
final class SharedLogPipelineTests: XCTestCase {
    private var loop: EventLoop!
    private let confined = LoopConfinedObjects()

    override func setUpWithError() throws {
        loop = try EventLoop.startThread()
    }

    override func tearDownWithError() throws {
        confined.release(on: loop)
        loop.stop()
    }

    /// The shared log: a list of records; appends complete on a later turn of the loop, and can be
    /// held back to let the test append as another server meanwhile.
    final class MemoryLog: SharedEventLog, @unchecked Sendable {  // @unchecked: used on the loop thread only
        let loop: EventLoop
        var stream: [LogRecord] = []
        var holding = false
        private var held: [() -> Void] = []
        var onRecords: (([LogRecord]) -> Void)?
        var appliedVersion: (() -> UInt64)?
        var statistics = EventLogStatistics()
        let history = "shared"
        var refusals = 0
        var reads = 0
        /// Keys whose claims ran out and were taken by another request: appends answering them are fenced off.
        var takenKeys: Set<String> = []
        /// What another server appends is handed over only when the test says so (`handOver`).
        var tailHeld = false
        private var unhanded: [LogRecord] = []

        init(loop: EventLoop) { self.loop = loop }

        var lastVersion: UInt64 { UInt64(stream.count) }
        var oldestVersion: UInt64 { 0 }
        var isReachable: Bool { true }
        var headWhenConnected: UInt64 = 0
        var status: SharedLogStatus {
            SharedLogStatus(node: "this", head: lastVersion, connection: "connected", peers: [:], lostHistory: nil, conflicts: UInt64(refusals), reconnects: 0)
        }

        /// The idempotency keys appends answered, with what they were answered.
        var answers: [IdempotencyAnswer] = []

        func append(_ records: [LogRecord], completion: @escaping (Result<Void, EventLogError>) -> Void) {
            append(records, answering: [], completion: completion)
        }

        func append(_ records: [LogRecord], answering answers: [IdempotencyAnswer], completion: @escaping (Result<Void, EventLogError>) -> Void) {
            let decide = { [self] in
                if records.first!.version - 1 != lastVersion {
                    refusals += 1
                    return completion(.failure(EventLogError(.behind(head: lastVersion), "behind")))
                }
                let fenced = answers.filter { takenKeys.contains($0.key) }.map(\.key)
                if !fenced.isEmpty {
                    return completion(.failure(EventLogError(.fenced(keys: fenced), "fenced")))
                }
                stream += records
                self.answers += answers
                completion(.success(()))
            }
            if holding { held.append(decide) } else { later(decide) }
        }

        /// Appends what another server applied, and hands it over as the tail would.
        func appendAsAnotherServer(_ events: [DocumentEvent]) {
            let added = events.map { event -> LogRecord in
                let record = LogRecord(version: UInt64(stream.count) + 1, payload: event.json.jsonBytes)
                stream.append(record)
                return record
            }
            if tailHeld { unhanded += added } else { later { [self] in onRecords?(added) } }
        }

        /// Appends records another server wrote, as they are (JSON this server may not read).
        func appendRawAsAnotherServer(_ payloads: [String]) {
            let added = payloads.map { payload -> LogRecord in
                let record = LogRecord(version: UInt64(stream.count) + 1, payload: Array(payload.utf8))
                stream.append(record)
                return record
            }
            if tailHeld { unhanded += added } else { later { [self] in onRecords?(added) } }
        }

        /// Hands over only the last `count` records another server appended while the tail was
        /// held, as a tail that skipped the others would.
        func handOverLast(_ count: Int) {
            let added = Array(unhanded.suffix(count))
            unhanded = []
            tailHeld = false
            later { [self] in onRecords?(added) }
        }

        /// Hands over what another server appended while the tail was held.
        func handOver() {
            let added = unhanded
            unhanded = []
            tailHeld = false
            later { [self] in onRecords?(added) }
        }

        func release() {
            holding = false
            let pending = held
            held = []
            for decide in pending { later(decide) }
        }

        private func later(_ body: @escaping () -> Void) {
            nonisolated(unsafe) let body = body  // run on this loop's thread only
            loop.enqueue { body() }
        }

        func read(after version: UInt64, limit: Int, completion: @escaping (Result<[LogRecord], EventLogError>) -> Void) {
            reads += 1
            completion(.success(Array(stream[Int(version)...].prefix(limit))))
        }
        /// The versions snapshots were asked at; while `holdingSnapshots`, their completions wait in `heldSnapshots`.
        var snapshots: [UInt64] = []
        var holdingSnapshots = false
        var heldSnapshots: [(Result<Void, EventLogError>) -> Void] = []
        /// How many snapshots to refuse, as a Redis out of memory would.
        var snapshotsToRefuse = 0
        func saveSnapshot(at version: UInt64, encode: @escaping @Sendable () throws -> [UInt8], completion: @escaping (Result<Void, EventLogError>) -> Void) {
            snapshots.append(version)
            if snapshotsToRefuse > 0 {
                snapshotsToRefuse -= 1
                return completion(.failure(EventLogError(.unavailable, "refused")))
            }
            if holdingSnapshots { heldSnapshots.append(completion) } else { completion(.success(())) }
        }
        func loadSnapshot(atOrBefore version: UInt64, completion: @escaping (Result<LogRecord?, EventLogError>) -> Void) {
            completion(.success(nil))
        }
        func close(completion: @escaping () -> Void) { completion() }
        func claimIdempotencyKey(_ key: String, claim: SharedIdempotencyEntry, milliseconds: UInt64,
                                 completion: @escaping (Result<SharedIdempotencyEntry?, EventLogError>) -> Void) {
            completion(.success(nil))
        }
        /// The keys settled, with what (nil: freed).
        var settled: [(key: String, claim: SharedIdempotencyEntry, entry: SharedIdempotencyEntry?)] = []
        func settleIdempotencyKey(_ key: String, claim: SharedIdempotencyEntry, entry: SharedIdempotencyEntry?, milliseconds: UInt64) {
            settled.append((key, claim, entry))
        }
    }

    final class Harness: @unchecked Sendable {  // @unchecked: used on the loop thread only (see onLoop)
        let core: Core<JSONDocument>
        let pipeline: CommitPipeline<JSONDocument>
        let log: MemoryLog
        var published: [UInt64] = []

        init(core: Core<JSONDocument>, pipeline: CommitPipeline<JSONDocument>, log: MemoryLog) {
            self.core = core
            self.pipeline = pipeline
            self.log = log
        }
    }

    final class Subscriber: SubscriptionSink {
        unowned let harness: Harness
        init(_ harness: Harness) { self.harness = harness }
        func deliver(_ message: SubscriberMessage) { harness.published.append(message.version) }
    }

    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (@escaping @Sendable (T) -> Void) -> Void) -> T {
        loop.runAndWait(body)
    }

    private func harness(middlewares: [any Middleware<JSONDocument>] = [], options: CommitPipeline<JSONDocument>.Options = .init()) -> Harness {
        let loop = loop!
        let harness: Harness = onLoop { finish in
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let log = MemoryLog(loop: loop)
            let core = Core(state: JSONDocument(), version: 0, middlewares: middlewares, executor: loop)
            let published = PublishedState(core: core, state: JSONDocument(), version: 0, isJournaled: true)
            let hub = SubscriptionHub<JSONDocument>(windowCapacity: 64, logger: logger) { published.current.state }
            let pipeline = CommitPipeline(core: core, published: published, log: log, hub: hub, loop: loop, options: options, logger: logger)
            core.add(middleware: pipeline)
            let harness = Harness(core: core, pipeline: pipeline, log: log)
            _ = hub.subscribe(Subscriber(harness), to: SubscriptionSelection(path: .root, mode: .patch), since: nil)
            finish(harness)
        }
        confined.keep(harness)
        return harness
    }

    enum Answer: Equatable, Sendable {
        case version(UInt64)
        case status(Int)

        /// What a client waiting on its event is told.
        init(_ outcome: CommitPipeline<JSONDocument>.Outcome) {
            switch outcome {
            case .success(let published): self = .version(published)
            case .failure(let problem): self = .status(problem.status.code)
            }
        }
    }

    private static func event(_ text: String) -> DocumentEvent {
        try! JSONDocument.eventRegistry.decode(JSON(parsing: text)) as! DocumentEvent
    }

    private static let increment = event(#"{"type":"increment","path":"/n"}"#)

    /// How the others' records reach this server after its append is refused for them.
    enum Handover {
        /// Before the refusal, as a tail usually brings them.
        case beforeRefusal
        /// After the refusal: the pipeline waits for them before it appends again.
        case afterRefusal
        /// Never: the tail stopped, and the pipeline reads them after its grace.
        case never
    }

    /// Fires `events` on this server, then (before its append is decided) lets another server append
    /// `others`; returns each own event's answer.
    private func fire(_ events: [DocumentEvent], on harness: Harness, whileOthersAppend others: [DocumentEvent] = [],
                      handover: Handover = .beforeRefusal) -> [Answer] {
        let answers: [Answer] = onLoop { finish in
            harness.log.holding = !others.isEmpty
            harness.log.tailHeld = handover != .beforeRefusal
            let collected = Locked<[Int: Answer]>([:])
            for (index, event) in events.enumerated() {
                harness.core.fire(event: event, origin: nil) { result in
                    guard case .success(let version) = result else { return XCTFail("\(event) applies here first") }
                    harness.pipeline.whenPublished(version) { outcome in
                        let all = collected.withLock { answers -> [Int: Answer] in
                            switch outcome {
                            case .success(let published): answers[index] = .version(published)
                            case .failure(let problem): answers[index] = .status(problem.status.code)
                            }
                            return answers
                        }
                        if all.count == events.count { finish((0..<events.count).map { all[$0]! }) }
                    }
                }
            }
            if !others.isEmpty {
                harness.log.appendAsAnotherServer(others)
                harness.log.release()
                if handover == .afterRefusal { harness.log.handOver() }
            }
        }
        return answers
    }

    private func settled(_ harness: Harness) -> (version: UInt64, core: UInt64, root: JSON, stream: [String], published: [UInt64]) {
        onLoop { finish in
            let (version, state) = harness.pipeline.published
            let stream = harness.log.stream.map { String(decoding: $0.payload, as: UTF8.self) }
            finish((version, harness.core.version, state.root, stream, harness.published))
        }
    }

    func testWhatAnotherServerAppendedIsAppliedAndPublishedInOrder() {
        let harness = harness()
        let _: Bool = onLoop { finish in
            harness.log.appendAsAnotherServer([Self.increment, Self.increment, Self.event(#"{"type":"set","path":"/who","value":"b"}"#)])
            finish(true)
        }
        let deadline = Date().addingTimeInterval(5)
        while settled(harness).version < 3, Date() < deadline { usleep(1_000) }
        let state = settled(harness)
        XCTAssertEqual(state.version, 3)
        XCTAssertEqual(state.core, 3)
        XCTAssertEqual(state.root, ["n": 2, "who": "b"])
        XCTAssertEqual(state.published, [1, 2, 3])
    }

    /// Records handed over after a gap are applied once the gap is read, in order: the read's
    /// records merge with those held rather than being dropped as older than them.
    func testRecordsAfterAGapAreAppliedOnceTheGapIsRead() {
        let harness = harness()
        let _: Bool = onLoop { finish in
            harness.log.tailHeld = true
            harness.log.appendAsAnotherServer([Self.increment, Self.increment, Self.increment, Self.event(#"{"type":"set","path":"/who","value":"b"}"#)])
            harness.log.handOverLast(2)
            finish(true)
        }
        let deadline = Date().addingTimeInterval(5)
        while settled(harness).version < 4, Date() < deadline { usleep(1_000) }
        let state = settled(harness)
        XCTAssertEqual(state.version, 4)
        XCTAssertEqual(state.root, ["n": 3, "who": "b"])
        XCTAssertEqual(state.published, [1, 2, 3, 4])
        let reads: Int = onLoop { finish in finish(harness.log.reads) }
        XCTAssertEqual(reads, 1)
    }

    /// A server that connects to the log again (after Redis was away, or a partition) is not ready
    /// until it has applied what the log held then: a load balancer must not send clients to it
    /// while it serves a state thousands of versions old.
    func testAServerIsNotReadyUntilItHasAppliedTheHeadItFoundOnConnectingAgain() {
        let harness = harness()
        let healthyBefore: Bool = onLoop { finish in
            harness.log.tailHeld = true
            harness.log.appendAsAnotherServer([Self.increment, Self.increment, Self.increment])
            harness.log.headWhenConnected = 3
            finish(harness.pipeline.isHealthy)
        }
        XCTAssertFalse(healthyBefore, "ready at version 0 of the 3 the log held on connecting")
        let _: Bool = onLoop { finish in
            harness.log.handOver()
            finish(true)
        }
        let deadline = Date().addingTimeInterval(5)
        while settled(harness).version < 3, Date() < deadline { usleep(1_000) }
        let healthyAfter: Bool = onLoop { finish in finish(harness.pipeline.isHealthy) }
        XCTAssertTrue(healthyAfter)
    }

    /// A record this server cannot apply stops it following: it keeps what it published and is not
    /// ready, and what the tail brings after it is not applied (nor read again and again).
    func testARecordThatDoesNotApplyHereStopsTheServerFollowing() {
        let harness = harness()
        let _: Bool = onLoop { finish in
            harness.log.appendAsAnotherServer([Self.increment])
            harness.log.appendRawAsAnotherServer([#"{"type":"an event of a newer version"}"#])
            harness.log.appendAsAnotherServer([Self.increment, Self.increment])
            finish(true)
        }
        let deadline = Date().addingTimeInterval(5)
        while (onLoop { finish in finish(harness.pipeline.isHealthy) }), Date() < deadline { usleep(1_000) }
        usleep(50_000)
        let state = settled(harness)
        XCTAssertEqual(state.version, 1)
        XCTAssertEqual(state.root, ["n": 1])
        XCTAssertEqual(state.published, [1])
        let (healthy, reads): (Bool, Int) = onLoop { finish in finish((harness.pipeline.isHealthy, harness.log.reads)) }
        XCTAssertFalse(healthy)
        XCTAssertLessThanOrEqual(reads, 1)
    }

    func testMergedRunsKeepEachVersionOnceInOrder() {
        func records(_ versions: [UInt64]) -> [LogRecord] { versions.map { LogRecord(version: $0, payload: Array("\($0)".utf8)) } }
        XCTAssertEqual(CommitPipeline<JSONDocument>.merged(records([5, 6]), records([3, 4, 5, 6, 7])).map(\.version), [3, 4, 5, 6, 7])
        XCTAssertEqual(CommitPipeline<JSONDocument>.merged(records([]), records([1])).map(\.version), [1])
        XCTAssertEqual(CommitPipeline<JSONDocument>.merged(records([2, 9]), records([1, 2, 3])).map(\.version), [1, 2, 3, 9])
    }

    /// Sees the document's root after each event the core applies.
    final class RootWatcher: Middleware, @unchecked Sendable {  // @unchecked: used on the loop thread only
        var buffers: [UnsafeRawPointer?] = []
        func process(event: Event, state: JSONDocument) { buffers.append(documentObjectBuffer(state.root)) }
    }

    /// The others' events are applied in place: published as they are, the state is the core's own,
    /// not a second owner of the document's root (which would make the core copy it for each event).
    func testTheOthersEventsAreAppliedInPlace() {
        let watcher = RootWatcher()
        let harness = harness(middlewares: [watcher])
        let _: Bool = onLoop { finish in
            // The same member each time: a new one could grow the root, which moves it.
            harness.log.appendAsAnotherServer(Array(repeating: Self.increment, count: 20))
            finish(true)
        }
        let deadline = Date().addingTimeInterval(5)
        while settled(harness).version < 20, Date() < deadline { usleep(1_000) }
        // As numbers: pointers do not cross threads.
        let buffers: [UInt] = onLoop { finish in finish(watcher.buffers.map { UInt(bitPattern: $0) }) }
        XCTAssertEqual(buffers.count, 20)
        // The first copies the root the pipeline was made with; none after it does.
        XCTAssertEqual(Set(buffers.dropFirst().map { $0 }).count, 1, "the root was copied after the first event")
        XCTAssertEqual(settled(harness).root, ["n": 20])
    }

    /// After the others' events the published state is the core's own, until this server applies one
    /// of its own: then clients still see the others' state until the log holds the new event.
    func testAnOwnEventAfterTheOthersIsSeenOnlyOnceAppended() {
        let harness = harness()
        let _: Bool = onLoop { finish in
            harness.log.appendAsAnotherServer([Self.event(#"{"type":"set","path":"/n","value":5}"#)])
            finish(true)
        }
        let deadline = Date().addingTimeInterval(5)
        while settled(harness).version < 1, Date() < deadline { usleep(1_000) }
        let seen: (published: JSON, version: UInt64, core: JSON) = onLoop { finish in
            harness.log.holding = true
            _ = harness.core.fireIfIdle(event: Self.increment, origin: nil)
            let (version, state) = harness.pipeline.published
            finish((state.root, version, harness.core.state.root))
        }
        XCTAssertEqual(seen.published, ["n": 5])
        XCTAssertEqual(seen.version, 1)
        XCTAssertEqual(seen.core, ["n": 6])
        let _: Bool = onLoop { finish in
            harness.log.release()
            finish(true)
        }
        while settled(harness).version < 2, Date() < deadline { usleep(1_000) }
        XCTAssertEqual(settled(harness).root, ["n": 6])
    }

    func testOwnEventsRefusedBecauseOthersAppendedFirstTakeTheVersionsAfterTheirs() {
        let harness = harness()
        let answers = fire([Self.increment, Self.increment], on: harness,
                           whileOthersAppend: [Self.event(#"{"type":"set","path":"/n","value":10}"#), Self.increment])
        XCTAssertEqual(answers, [.version(3), .version(4)])
        let state = settled(harness)
        XCTAssertEqual(state.version, 4)
        XCTAssertEqual(state.core, 4)
        XCTAssertEqual(state.root, ["n": 13])
        XCTAssertEqual(state.stream.count, 4)
        XCTAssertEqual(state.published, [1, 2, 3, 4], "subscribers saw one history, never the undone one")
        XCTAssertEqual(harness.log.refusals, 1)
    }

    func testARefusedAppendWaitsForTheOthersRecordsRatherThanReadingThem() {
        let harness = harness()
        let answers = fire([Self.increment, Self.increment], on: harness,
                           whileOthersAppend: [Self.event(#"{"type":"set","path":"/n","value":10}"#)], handover: .afterRefusal)
        XCTAssertEqual(answers, [.version(2), .version(3)])
        let state = settled(harness)
        XCTAssertEqual(state.root, ["n": 12])
        XCTAssertEqual(state.published, [1, 2, 3])
        let (refusals, reads): (Int, Int) = onLoop { finish in finish((harness.log.refusals, harness.log.reads)) }
        XCTAssertEqual(refusals, 1, "no append was tried before the others' records arrived")
        XCTAssertEqual(reads, 0, "the tail brought them")
    }

    func testARefusedAppendReadsTheOthersRecordsWhenTheTailDoesNotBringThem() {
        let harness = harness()
        let started = Date()
        let answers = fire([Self.increment], on: harness, whileOthersAppend: [Self.increment, Self.increment], handover: .never)
        XCTAssertEqual(answers, [.version(3)])
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started) * 1_000, Double(CommitPipeline<JSONDocument>.handoverGraceMilliseconds) * 0.9)
        let state = settled(harness)
        XCTAssertEqual(state.root, ["n": 3])
        XCTAssertEqual(state.published, [1, 2, 3])
        let reads: Int = onLoop { finish in finish(harness.log.reads) }
        XCTAssertEqual(reads, 1)
    }

    func testOwnEventsAppliedAgainAreAppendedWithTheBytesTheyCameIn() {
        let harness = harness()
        // As a client wrote it: not as this server would encode the event.
        let wireForm = #"{ "path": "/n",   "type": "increment" }"#
        let answer: Answer = onLoop { finish in
            harness.log.holding = true
            let applied = harness.core.fireIfIdle(event: Self.increment, origin: nil)
            guard case .success(let version)? = applied else { return XCTFail("the increment applies here first") }
            harness.pipeline.record(Array(wireForm.utf8), asEventOf: version)
            harness.pipeline.whenPublished(version) { finish(Answer($0)) }
            harness.log.appendAsAnotherServer([Self.event(#"{"type":"set","path":"/n","value":5}"#)])
            harness.log.release()
        }
        XCTAssertEqual(answer, .version(2))
        let state = settled(harness)
        XCTAssertEqual(state.root, ["n": 6])
        XCTAssertEqual(harness.log.refusals, 1)
        XCTAssertEqual(state.stream.last, wireForm, "applied again after the others', the event keeps its record")
    }

    /// A request's idempotency key goes into the log with its event, answered with the version the
    /// event was appended at, also when it was applied again after the others' events.
    func testAnIdempotencyKeyIsAnsweredByTheAppendThatCarriesItsEvent() {
        let harness = harness()
        let key = CommitPipeline<JSONDocument>.AnsweredKey(key: "k", fingerprint: "f", milliseconds: 1_000, claim: Self.claim)
        let answer: Answer = onLoop { finish in
            harness.log.holding = true
            let applied = harness.core.fireIfIdle(event: Self.increment, origin: nil)
            guard case .success(let version)? = applied else { return XCTFail("the increment applies here first") }
            harness.pipeline.answer(key, withEventOf: version)
            harness.pipeline.whenPublished(version) { finish(Answer($0)) }
            harness.log.appendAsAnotherServer([Self.increment])
            harness.log.release()
        }
        XCTAssertEqual(answer, .version(2))
        let answers: [IdempotencyAnswer] = onLoop { finish in finish(harness.log.answers) }
        XCTAssertEqual(answers, [IdempotencyAnswer(key: "k", entry: .answered(fingerprint: "f", status: 200, body: Array(#"{"version":2}"#.utf8)), milliseconds: 1_000,
                                                   claim: Self.claim)])
    }

    private static let claim = SharedIdempotencyEntry.inFlight(fingerprint: "f", claim: "c1")

    /// A snapshot whose multiple an append crossed while the last one was still being written is
    /// written after this server's next append, not left to the next multiple.
    func testASnapshotCrossedWhileOneIsBeingWrittenIsWrittenAfterTheNextAppend() {
        var options = CommitPipeline<JSONDocument>.Options()
        options.snapshotEvents = 2
        let harness = harness(options: options)
        let loop = loop!
        let snapshots: [UInt64] = onLoop { finish in
            func fireAndPublish(_ published: @escaping () -> Void) {
                guard case .success(let version)? = harness.core.fireIfIdle(event: Self.increment, origin: nil) else { return XCTFail("the increment applies") }
                harness.pipeline.whenPublished(version) { _ in published() }
            }
            func onNextTurn(_ body: @escaping () -> Void) {
                nonisolated(unsafe) let body = body  // run on the loop's thread only
                loop.enqueue { body() }
            }
            harness.log.holdingSnapshots = true
            fireAndPublish {                    // version 1
                fireAndPublish {                // version 2: crosses 2, a snapshot is being written
                    fireAndPublish {            // version 3
                        fireAndPublish {        // version 4: crosses 4 while the one at 2 is still being written
                            // On later turns: the publishing runs before the append's snapshot is decided.
                            onNextTurn {
                                harness.log.holdingSnapshots = false
                                for completion in harness.log.heldSnapshots { completion(.success(())) }
                                fireAndPublish {    // version 5: the snapshot owed
                                    onNextTurn { finish(harness.log.snapshots) }
                                }
                            }
                        }
                    }
                }
            }
        }
        XCTAssertEqual(snapshots, [2, 5])
    }

    /// An append fenced off by a key another request holds (its claim refused, or run out) drops
    /// only the request answering that key (503: the claim's answer is its client's); the others of
    /// its group are applied again and go in, the server ready all along, no claim freed.
    func testAFencedAppendDropsOnlyTheRequestWhoseKeyIsTaken() {
        let harness = harness()
        let key = CommitPipeline<JSONDocument>.AnsweredKey(key: "k", fingerprint: "f", milliseconds: 1_000, claim: Self.claim)
        let answers: [Answer] = onLoop { finish in
            harness.log.takenKeys = ["k"]
            guard case .success(let unkeyed)? = harness.core.fireIfIdle(event: Self.increment, origin: nil),
                  case .success(let keyed)? = harness.core.fireIfIdle(event: Self.increment, origin: nil),
                  case .success(let after)? = harness.core.fireIfIdle(event: Self.increment, origin: nil) else {
                return XCTFail("the increments apply here first")
            }
            harness.pipeline.answer(key, withEventOf: keyed)
            var answers: [Answer] = []
            let collect = { (outcome: CommitPipeline<JSONDocument>.Outcome) in
                answers.append(Answer(outcome))
                if answers.count == 3 { finish(answers) }
            }
            harness.pipeline.whenPublished(unkeyed, collect)
            harness.pipeline.whenPublished(keyed, collect)
            harness.pipeline.whenPublished(after, collect)
        }
        // The dropped request is answered as the group is applied again, the others once appended.
        XCTAssertEqual(answers, [.status(503), .version(1), .version(2)])
        let (stream, healthy, settledKeys, answered): ([UInt64], Bool, Int, Int) = onLoop { finish in
            finish((harness.log.stream.map(\.version), harness.pipeline.isHealthy, harness.log.settled.count, harness.log.answers.count))
        }
        XCTAssertEqual(stream, [1, 2], "the two requests whose keys were not taken went in")
        XCTAssertTrue(healthy)
        XCTAssertEqual(settledKeys, 0, "the taken key is another request's: nothing of it is freed")
        XCTAssertEqual(answered, 0)
        XCTAssertEqual(settled(harness).root, ["n": 2])
    }

    /// A request of several events whose key is taken is dropped whole; the request before it goes in.
    func testAFencedRequestOfSeveralEventsIsDroppedWhole() {
        let harness = harness()
        let key = CommitPipeline<JSONDocument>.AnsweredKey(key: "k", fingerprint: "f", milliseconds: 1_000, claim: Self.claim)
        let answers: [Answer] = onLoop { finish in
            harness.log.takenKeys = ["k"]
            guard case .success(let unkeyed)? = harness.core.fireIfIdle(event: Self.increment, origin: nil),
                  case .success(let batch)? = harness.core.fireIfIdle(events: [Self.increment, Self.increment], mode: .allOrNothing, origin: nil) else {
                return XCTFail("the increments apply here first")
            }
            harness.pipeline.markBatch(versions: (batch.version - 1)...batch.version, postedIndices: [0, 1])
            harness.pipeline.answer(key, withEventOf: batch.version)
            var answers: [Answer] = []
            let collect = { (outcome: CommitPipeline<JSONDocument>.Outcome) in
                answers.append(Answer(outcome))
                if answers.count == 2 { finish(answers) }
            }
            harness.pipeline.whenPublished(unkeyed, collect)
            harness.pipeline.whenPublished(batch.version, collect)
        }
        XCTAssertEqual(answers, [.status(503), .version(1)])
        XCTAssertEqual(settled(harness).root, ["n": 1], "none of the dropped request's events applied")
    }

    /// A snapshot Redis refused is tried again after a later append of this server's, once the
    /// retry delay has passed (each try encodes the whole state), not left to the next multiple.
    func testARefusedSnapshotIsTriedAgainAfterTheRetryDelay() {
        for (delay, expected) in [(UInt64(60_000), [UInt64(10)]), (0, [10, 11])] {
            var options = CommitPipeline<JSONDocument>.Options()
            options.snapshotEvents = 10
            options.snapshotRetryMilliseconds = delay
            let harness = harness(options: options)
            let events: [any Event] = Array(repeating: Self.increment, count: 10)
            // Each wait ends as the append is published, before its snapshot is decided in the
            // same turn: the snapshots are read in a later one.
            let _: Bool = onLoop { finish in
                harness.log.snapshotsToRefuse = 1
                guard case .success(let outcome)? = harness.core.fireIfIdle(events: events, mode: .allOrNothing, origin: nil) else {
                    return XCTFail("the request applies")
                }
                harness.pipeline.markBatch(versions: 1...10, postedIndices: Array(0..<10))
                harness.pipeline.whenPublished(outcome.version) { _ in finish(true) }
            }
            XCTAssertEqual(onLoop { finish in finish(harness.log.snapshots) }, [10], "the append crossing 10 asks for the snapshot, refused")
            let _: Bool = onLoop { finish in
                guard case .success(let version)? = harness.core.fireIfIdle(event: Self.increment, origin: nil) else {
                    return XCTFail("the increment applies")
                }
                harness.pipeline.whenPublished(version) { _ in finish(true) }
            }
            XCTAssertEqual(onLoop { finish in finish(harness.log.snapshots) }, expected, "with a retry delay of \(delay) ms")
        }
    }

    /// Applies a request of two events, `set /a` and an increment, as `EventPath` does one posted
    /// to a fresh server (versions 1 and 2, marked as one request); its last version, if applied.
    private static func fireRequestOfTwo(_ harness: Harness) -> UInt64? {
        let events: [any Event] = [event(#"{"type":"set","path":"/a","value":1}"#), increment]
        guard case .success(let outcome)? = harness.core.fireIfIdle(events: events, mode: .allOrNothing, origin: nil) else { return nil }
        harness.pipeline.markBatch(versions: 1...2, postedIndices: [0, 1])
        return outcome.version
    }

    /// A request of several events: its key's answer goes with its last event, at the version that
    /// event is finally appended at, the same the client is answered with.
    func testARequestsIdempotencyAnswerIsAppendedWithItsLastEventAtItsFinalVersion() {
        let harness = harness()
        let key = CommitPipeline<JSONDocument>.AnsweredKey(key: "k", fingerprint: "f", milliseconds: 1_000, claim: Self.claim)
        let answer: Answer = onLoop { finish in
            harness.log.holding = true
            guard let version = Self.fireRequestOfTwo(harness) else { return XCTFail("the request applies here first") }
            harness.pipeline.answer(key, withEventOf: version, members: ["version": .integer(2), "applied": .integer(2)])
            harness.pipeline.whenPublished(version) { finish(Answer($0)) }
            harness.log.appendAsAnotherServer([Self.increment])
            harness.log.release()
        }
        XCTAssertEqual(answer, .version(3))
        let answers: [IdempotencyAnswer] = onLoop { finish in finish(harness.log.answers) }
        XCTAssertEqual(answers, [IdempotencyAnswer(key: "k", entry: .answered(fingerprint: "f", status: 200, body: Array(#"{"version":3,"applied":2}"#.utf8)),
                                                   milliseconds: 1_000, claim: Self.claim)])
    }

    /// The events of one request, refused by the log because others appended first, are applied
    /// again as one: all of them, or, when one is refused now, none.
    func testARequestsEventsAreAppliedAgainAllOrNone() {
        for (others, expected) in [(#"{"type":"set","path":"/n","value":10}"#, Answer.version(3)),
                                   (#"{"type":"set","path":"/n","value":"text"}"#, Answer.status(422))] {
            let harness = harness()
            let answer: Answer = onLoop { finish in
                harness.log.holding = true
                guard let version = Self.fireRequestOfTwo(harness) else { return XCTFail("the request applies here first") }
                harness.pipeline.whenPublished(version) { finish(Answer($0)) }
                harness.log.appendAsAnotherServer([Self.event(others)])
                harness.log.release()
            }
            XCTAssertEqual(answer, expected, others)
            let deadline = Date().addingTimeInterval(5)
            while settled(harness).version < (expected == .version(3) ? 3 : 1), Date() < deadline { usleep(1_000) }
            let state = settled(harness)
            if expected == .version(3) {
                XCTAssertEqual(state.root, ["n": 11, "a": 1])
                XCTAssertEqual(state.stream.count, 3)
            } else {
                XCTAssertEqual(state.root, ["n": "text"], "neither event of the refused request is applied")
                XCTAssertEqual(state.stream.count, 1)
            }
        }
    }

    func testAnOwnEventTheStateRefusesOnceTheOthersAreAppliedIsAnswered422() {
        let harness = harness()
        let answers = fire([Self.increment], on: harness, whileOthersAppend: [Self.event(#"{"type":"set","path":"/n","value":"text"}"#)])
        XCTAssertEqual(answers, [.status(422)])
        let state = settled(harness)
        XCTAssertEqual(state.version, 1)
        XCTAssertEqual(state.root, ["n": "text"])
        XCTAssertEqual(state.stream.count, 1, "the refused event was never appended")
    }

    /// A middleware that answers every `set` of /ping by incrementing /pong: a reaction.
    final class Echo: Middleware, @unchecked Sendable {  // @unchecked: called on the loop thread only
        weak var core: Core<JSONDocument>?
        func process(event: Event, state: JSONDocument) {}
        func process(event: Event, state: JSONDocument, version: UInt64) {
            if case .set(let path, _)? = event as? DocumentEvent, path.string == "/ping" {
                core?.fire(event: DocumentEvent.increment(path: try! JSONPointer("/pong"), by: 1))
            }
        }
    }

    private func waitUntil(_ harness: Harness, reaches version: UInt64) {
        let deadline = Date().addingTimeInterval(5)
        while settled(harness).version < version, Date() < deadline { usleep(1_000) }
    }

    func testAReactionToAnotherServersEventIsThatServersToFire() {
        let echo = Echo()
        let harness = harness(middlewares: [echo])
        let _: Bool = onLoop { finish in
            echo.core = harness.core
            harness.log.appendAsAnotherServer([Self.event(#"{"type":"set","path":"/ping","value":1}"#), Self.increment])
            finish(true)
        }
        waitUntil(harness, reaches: 2)
        // Its own reaction is in the log after it, where every server applies it as decided.
        let _: Bool = onLoop { finish in
            harness.log.appendAsAnotherServer([Self.event(#"{"type":"increment","path":"/pong","by":1}"#)])
            finish(true)
        }
        waitUntil(harness, reaches: 3)
        usleep(50_000)
        let state = settled(harness)
        XCTAssertEqual(state.version, 3, "the other server's events and its reaction, none of this one's")
        XCTAssertEqual(state.core, 3)
        XCTAssertEqual(state.root, ["ping": 1, "n": 1, "pong": 1])
        XCTAssertEqual(state.stream.count, 3)
        XCTAssertEqual(state.published, [1, 2, 3])
        XCTAssertTrue(harness.pipeline.isHealthy)
    }

    func testAReactionToAnOwnEventAppliedAgainIsFiredAgainNotRepeated() {
        let echo = Echo()
        let harness = harness(middlewares: [echo])
        let _: Bool = onLoop { finish in
            echo.core = harness.core
            finish(true)
        }
        let answers = fire([Self.event(#"{"type":"set","path":"/ping","value":1}"#)], on: harness, whileOthersAppend: [Self.increment])
        XCTAssertEqual(answers, [.version(2)])
        waitUntil(harness, reaches: 3)
        usleep(50_000)
        let state = settled(harness)
        XCTAssertEqual(state.version, 3, "the other's event, then the own event and its reaction once")
        XCTAssertEqual(state.root, ["n": 1, "ping": 1, "pong": 1])
        XCTAssertEqual(state.stream, [#"{"type":"increment","path":"/n","by":1}"#, #"{"type":"set","path":"/ping","value":1}"#,
                                      #"{"type":"increment","path":"/pong","by":1}"#])
        XCTAssertTrue(harness.pipeline.isHealthy)
    }

    func testAReactionToTheStateTakenBackIsNotApplied() {
        // A feedback that marks /cleared whenever /ping is absent: also when the core goes back to
        // the published state, which has none, after the others appended first.
        let harness = harness()
        let _: Bool = onLoop { finish in
            harness.core.add(feedback: .skippingRepeated({ $0.root["ping"] }) { ping in
                ping == nil ? DocumentEvent.set(path: try! JSONPointer("/cleared"), value: true) : nil
            })
            finish(true)
        }
        waitUntil(harness, reaches: 1)
        let answers = fire([Self.event(#"{"type":"set","path":"/ping","value":1}"#)], on: harness, whileOthersAppend: [Self.increment])
        XCTAssertEqual(answers, [.version(3)])
        usleep(50_000)
        let state = settled(harness)
        XCTAssertEqual(state.version, 3)
        XCTAssertEqual(state.root, ["cleared": true, "n": 1, "ping": 1])
        XCTAssertEqual(state.stream.count, 3)
        XCTAssertTrue(harness.pipeline.isHealthy)
    }

    /// A middleware that, the first time it sees a `set` or an increment of `path`, has another thread
    /// fire an increment of /elsewhere, and waits until that event is in the core's inbox.
    final class OtherThreadFirer: Middleware, @unchecked Sendable {  // @unchecked: called on the loop thread only
        weak var core: Core<JSONDocument>?
        let path: String
        var fired = false
        init(path: String) { self.path = path }
        func process(event: Event, state: JSONDocument) {}
        func process(event: Event, state: JSONDocument, version: UInt64) {
            guard !fired, let core, let event = event as? DocumentEvent else { return }
            switch event {
            case .set(let path, _) where path.string == self.path: break
            case .increment(let path, _) where path.string == self.path: break
            default: return
            }
            fired = true
            let inInbox = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                core.fire(event: DocumentEvent.increment(path: try! JSONPointer("/elsewhere"), by: 1))
                inInbox.signal()
            }
            inInbox.wait()
        }
    }

    func testAnEventFiredFromAnotherThreadWhileTheOthersAreAppliedComesAfterThem() {
        let firer = OtherThreadFirer(path: "/a")
        let harness = harness(middlewares: [firer])
        let _: Bool = onLoop { finish in
            firer.core = harness.core
            harness.log.appendAsAnotherServer([Self.event(#"{"type":"set","path":"/a","value":1}"#),
                                               Self.event(#"{"type":"set","path":"/b","value":2}"#)])
            finish(true)
        }
        waitUntil(harness, reaches: 3)
        let state = settled(harness)
        XCTAssertEqual(state.version, 3, "the others' two events, then the one fired meanwhile")
        XCTAssertEqual(state.root, ["a": 1, "b": 2, "elsewhere": 1])
        XCTAssertEqual(state.stream.count, 3)
        XCTAssertTrue(harness.pipeline.isHealthy)
    }

    func testAnEventFiredFromAnotherThreadWhileOwnEventsAreAppliedAgainComesAfterThem() {
        let firer = OtherThreadFirer(path: "/n")
        let harness = harness(middlewares: [firer])
        let _: Bool = onLoop { finish in
            firer.core = harness.core
            finish(true)
        }
        let answers = fire([Self.event(#"{"type":"set","path":"/ping","value":1}"#)], on: harness, whileOthersAppend: [Self.increment])
        XCTAssertEqual(answers, [.version(2)])
        waitUntil(harness, reaches: 3)
        let state = settled(harness)
        XCTAssertEqual(state.version, 3)
        XCTAssertEqual(state.root, ["n": 1, "ping": 1, "elsewhere": 1])
        XCTAssertEqual(state.stream.count, 3)
        XCTAssertTrue(harness.pipeline.isHealthy)
    }

    /// A middleware that, as each increment of /elsewhere is applied, has another thread fire the
    /// next, up to `limit`, and waits until it is in the core's inbox: a thread that never pauses.
    final class ChainFirer: Middleware, @unchecked Sendable {  // @unchecked: called on the loop thread only
        weak var core: Core<JSONDocument>?
        let limit: Int
        var fired = 0
        /// How many it had fired when it was first shown a state with the other server's event.
        var firedWhenOthersApplied: Int?
        init(limit: Int) { self.limit = limit }
        func process(event: Event, state: JSONDocument) {}
        func process(event: Event, state: JSONDocument, version: UInt64) {
            guard let core else { return }
            if firedWhenOthersApplied == nil, state.root["a"] != nil { firedWhenOthersApplied = fired }
            guard case .increment(let path, _)? = event as? DocumentEvent, path.string == "/elsewhere", fired < limit else { return }
            fired += 1
            let inInbox = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                core.fire(event: DocumentEvent.increment(path: try! JSONPointer("/elsewhere"), by: 1))
                inInbox.signal()
            }
            inInbox.wait()
        }
    }

    func testAThreadThatFiresWithoutPauseDoesNotKeepTheServerFromFollowing() {
        let limit = 5_000
        let firer = ChainFirer(limit: limit)
        let harness = harness(middlewares: [firer])
        let _: Bool = onLoop { finish in
            firer.core = harness.core
            let core = harness.core
            DispatchQueue.global().async { core.fire(event: DocumentEvent.increment(path: try! JSONPointer("/elsewhere"), by: 1)) }
            harness.log.appendAsAnotherServer([Self.event(#"{"type":"set","path":"/a","value":1}"#)])
            finish(true)
        }
        let total = UInt64(limit + 2)
        let deadline = Date().addingTimeInterval(60)
        while settled(harness).version < total, Date() < deadline { usleep(10_000) }
        let state = settled(harness)
        XCTAssertEqual(state.version, total)
        XCTAssertEqual(state.root, ["a": 1, "elsewhere": .integer(Int64(limit + 1))])
        XCTAssertEqual(state.stream.count, Int(total))
        XCTAssertTrue(harness.pipeline.isHealthy)
        let seenAt: Int? = onLoop { finish in finish(firer.firedWhenOthersApplied) }
        XCTAssertLessThan(seenAt ?? limit, limit, "the other server's event waited until the thread stopped firing")
    }
}
