import Dispatch
import Logging
import Reactor
@testable import ReactorServer
import XCTest

/// The event path without sockets: bytes in, the answer out, and what the journal was given in
/// between. A log in memory stands for the journal; its appends complete on a later turn of the
/// loop, or fail when the test says so.
final class EventPathTests: XCTestCase {
    private var loop: EventLoop!
    private let confined = LoopConfinedObjects()

    override func setUpWithError() throws {
        loop = try EventLoop.startThread()
    }

    override func tearDownWithError() throws {
        confined.release(on: loop)
        loop.stop()
    }

    /// @unchecked Sendable: used on the loop thread only.
    final class MemoryLog: EventLog, @unchecked Sendable {
        let loop: EventLoop
        var records: [LogRecord] = []
        /// The error the next appends fail with; nil lets them through.
        var failure: EventLogError?
        var statistics = EventLogStatistics()
        let history = "memory"

        init(loop: EventLoop) { self.loop = loop }

        var lastVersion: UInt64 { records.last?.version ?? 0 }
        var oldestVersion: UInt64 { 0 }

        func append(_ records: [LogRecord], completion: @escaping (Result<Void, EventLogError>) -> Void) {
            nonisolated(unsafe) let completion = completion  // called on this loop's thread only
            loop.enqueue { [self] in
                if let failure { return completion(.failure(failure)) }
                self.records += records
                completion(.success(()))
            }
        }
        func read(after version: UInt64, limit: Int, completion: @escaping (Result<[LogRecord], EventLogError>) -> Void) {
            completion(.success(Array(records.filter { $0.version > version }.prefix(limit))))
        }
        func saveSnapshot(at version: UInt64, encode: @escaping @Sendable () throws -> [UInt8], completion: @escaping (Result<Void, EventLogError>) -> Void) {
            completion(.success(()))
        }
        func loadSnapshot(atOrBefore version: UInt64, completion: @escaping (Result<LogRecord?, EventLogError>) -> Void) {
            completion(.success(nil))
        }
        func close(completion: @escaping () -> Void) { completion() }
    }

    /// @unchecked Sendable: used on the loop thread only (see `onLoop`).
    final class Harness: @unchecked Sendable {
        let core: Core<JSONDocument>
        let path: EventPath<JSONDocument>
        let log: MemoryLog?

        init(core: Core<JSONDocument>, path: EventPath<JSONDocument>, log: MemoryLog?) {
            self.core = core
            self.path = path
            self.log = log
        }

        /// The journal's records as text.
        var journaled: [String] { log!.records.map { String(decoding: $0.payload, as: UTF8.self) } }
    }

    /// Makes the core reentrant for one event: while the core applies the event it is given, a
    /// body is posted, so that the path finds the core busy.
    final class PostWhileApplying: Middleware, @unchecked Sendable {  // @unchecked: used on the loop thread only
        var post: (() -> Void)?
        func process(event: Event, state: JSONDocument) {
            let post = self.post
            self.post = nil
            post?()
        }
    }

    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (@escaping @Sendable (T) -> Void) -> Void) -> T {
        loop.runAndWait(body)
    }

    private func harness(journaled: Bool = true, middlewares: [any Middleware<JSONDocument>] = []) -> Harness {
        let loop = loop!
        let harness: Harness = onLoop { finish in
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let log = journaled ? MemoryLog(loop: loop) : nil
            let core = Core(state: JSONDocument(), version: 0, middlewares: middlewares, executor: loop)
            let published = PublishedState(core: core, state: JSONDocument(), version: 0, isJournaled: log != nil)
            let hub = SubscriptionHub<JSONDocument>(windowCapacity: 64, logger: logger) { published.current.state }
            let pipeline = CommitPipeline(core: core, published: published, log: log, hub: hub, loop: loop, options: .init(), logger: logger)
            core.add(middleware: pipeline)
            finish(Harness(core: core, path: EventPath(core: core, pipeline: pipeline, loop: loop), log: log))
        }
        confined.keep(harness)
        return harness
    }

    struct Answer: Equatable, Sendable {
        let status: Int
        let body: String
        /// The answer's JSON, or its problem's `status` and `detail`.
        var json: JSON { try! JSON(parsing: Array(body.utf8)) }
    }

    /// Posts each body in turn, in one turn of the loop, and waits for every answer.
    private func post(_ bodies: [String], mode: BatchMode = .allOrNothing, to harness: Harness) -> [Answer] {
        onLoop { finish in
            let answers = Locked<[Int: Answer]>([:])
            for (index, body) in bodies.enumerated() {
                harness.path.post(Array(body.utf8), mode: mode, origin: nil) { response in
                    let all = answers.withLock { answers in
                        answers[index] = Answer(status: response.status.code, body: String(decoding: response.body, as: UTF8.self))
                        return answers
                    }
                    if all.count == bodies.count { finish((0..<bodies.count).map { all[$0]! }) }
                }
            }
        }
    }

    private func journaled(_ harness: Harness) -> [String] {
        onLoop { finish in finish(harness.journaled) }
    }

    func testAnEventIsAnsweredWithItsVersionOnceJournaledAndItsRecordIsTheBodyAsItCame() {
        let harness = harness()
        // Spaces and an order of keys this server would not write: the record is the body itself.
        let body = #"{ "path": "/n",  "type": "increment" }"#
        let answered: (answer: Answer, journaledBefore: Int) = onLoop { finish in
            harness.path.post(Array(body.utf8), mode: .allOrNothing, origin: nil) { response in
                finish((Answer(status: response.status.code, body: String(decoding: response.body, as: UTF8.self)), harness.log!.records.count))
            }
        }
        XCTAssertEqual(answered.answer, Answer(status: 200, body: #"{"version":1}"#))
        XCTAssertEqual(answered.journaledBefore, 1, "answered only once the journal holds it")
        XCTAssertEqual(journaled(harness), [body])
    }

    func testABodyOfSeveralLinesIsJournaledEncodedOnOneLine() {
        let harness = harness()
        let answers = post(["{\"type\":\"increment\",\n\"path\":\"/n\"}", #"{"type":"set","path":"/s","value":"é"}"#], to: harness)
        XCTAssertEqual(answers.map(\.status), [200, 200])
        XCTAssertEqual(answers.map(\.json), [["version": 1], ["version": 2]])
        XCTAssertEqual(journaled(harness), [#"{"type":"increment","path":"/n","by":1}"#, #"{"type":"set","path":"/s","value":"é"}"#])
    }

    func testEachEventOfATurnKeepsItsOwnRecordAndVersion() {
        let harness = harness()
        let bodies = (1...5).map { #"{"type":"set","path":"/k\#($0)","value":\#($0)}"# }
        let answers = post(bodies, to: harness)
        XCTAssertEqual(answers.map(\.json), (1...5).map { ["version": .integer(Int64($0))] })
        XCTAssertEqual(journaled(harness), bodies)
    }

    func testAnEventPostedWhileTheCoreIsBusyTakesItsTurnAndKeepsItsRecord() {
        let reentrant = PostWhileApplying()
        let harness = harness(middlewares: [reentrant])
        let inner = #"{"path":"/inner","type":"set","value":true}"#
        let answers: [Answer] = onLoop { finish in
            let collected = Locked<[Answer]>([])
            let record: (HTTPResponse) -> Void = { response in
                let all = collected.withLock { answers in
                    answers.append(Answer(status: response.status.code, body: String(decoding: response.body, as: UTF8.self)))
                    return answers
                }
                if all.count == 2 { finish(all) }
            }
            reentrant.post = { harness.path.post(Array(inner.utf8), mode: .allOrNothing, origin: nil, answer: record) }
            harness.path.post(Array(#"{"type":"set","path":"/outer","value":true}"#.utf8), mode: .allOrNothing, origin: nil, answer: record)
        }
        XCTAssertEqual(Set(answers.map(\.body)), [#"{"version":1}"#, #"{"version":2}"#])
        XCTAssertEqual(journaled(harness), [#"{"type":"set","path":"/outer","value":true}"#, inner])
    }

    func testRefusedAndUnreadableEventsAreProblemsAndJournalNothing() {
        let harness = harness()
        let answers = post([
            #"{"type":"set","path":"/n","value":1}"#,
            #"{"type":"increment","path":"/n/x"}"#,  // /n is a number
            #"{"type":"set","path":"/n""#,
            #"{"type":"explode"}"#,
        ], to: harness)
        XCTAssertEqual(answers.map(\.status), [200, 422, 400, 422])
        XCTAssertEqual(answers[1].json["status"], 422)
        XCTAssertEqual(journaled(harness), [#"{"type":"set","path":"/n","value":1}"#])
        let version: UInt64 = onLoop { finish in finish(harness.core.version) }
        XCTAssertEqual(version, 1)
    }

    func testEventsTheJournalRefusesAreUndoneAndAnswered503() {
        let harness = harness()
        XCTAssertEqual(post([#"{"type":"set","path":"/n","value":1}"#], to: harness).map(\.status), [200])
        let _: Bool = onLoop { finish in
            harness.log!.failure = EventLogError(.io(code: 28), "no space left on device")
            finish(true)
        }
        let answers = post([#"{"type":"increment","path":"/n"}"#, #"{"type":"increment","path":"/n"}"#], to: harness)
        XCTAssertEqual(answers.map(\.status), [503, 503])
        let state: (version: UInt64, n: JSON?) = onLoop { finish in
            let (version, state) = harness.core.snapshot()
            finish((version, state.jsonValue()["n"]))
        }
        XCTAssertEqual(state.version, 1)
        XCTAssertEqual(state.n, 1)
    }

    func testABatchIsAnsweredWithItsLastVersionAndPrunedEventsAreNamedByTheirPlace() {
        let harness = harness()
        let strict = post([#"[{"type":"set","path":"/n","value":1},{"type":"increment","path":"/n","by":2}]"#], to: harness)
        XCTAssertEqual(strict.map(\.json), [["version": 2, "applied": 2]])
        let refused = post([#"[{"type":"increment","path":"/n"},{"type":"nope"}]"#], to: harness)
        XCTAssertEqual(refused.map(\.status), [422])
        let pruned = post([#"[{"type":"increment","path":"/n"},{"type":"nope"},{"type":"increment","path":"/n/x"}]"#], mode: .prune, to: harness)
        XCTAssertEqual(pruned.first?.json["version"], 3)
        XCTAssertEqual(pruned.first?.json["applied"], 1)
        XCTAssertEqual(pruned.first?.json["rejected"]?.arrayValue?.map { $0["index"] }, [1, 2])
        XCTAssertEqual(journaled(harness).count, 3)
    }

    /// A request of several events that applied none (all pruned) waits for nothing: it is not
    /// answered with the fate of another request's event, applied before it and refused by the log.
    func testARequestThatAppliedNothingIsNotAnsweredWithAnotherRequestsFailure() {
        let harness = harness()
        let _: Bool = onLoop { finish in
            harness.log!.failure = EventLogError(.io(code: 28), "no space left on device")
            finish(true)
        }
        let answers = post([#"{"type":"increment","path":"/n"}"#, #"[{"type":"nope"}]"#], mode: .prune, to: harness)
        XCTAssertEqual(answers.map(\.status), [503, 200])
        XCTAssertEqual(answers[1].json["version"], 0, "the published version: the increment before it never was")
        XCTAssertEqual(answers[1].json["applied"], 0)
    }

    func testWithoutAJournalAnEventIsAnsweredAtOnce() {
        let harness = harness(journaled: false)
        let answered: Answer = onLoop { finish in
            var answer: Answer?
            harness.path.post(Array(#"{"type":"increment","path":"/n"}"#.utf8), mode: .allOrNothing, origin: nil) { response in
                answer = Answer(status: response.status.code, body: String(decoding: response.body, as: UTF8.self))
            }
            finish(answer ?? Answer(status: 0, body: "not answered before post returned"))
        }
        XCTAssertEqual(answered, Answer(status: 200, body: #"{"version":1}"#))
    }

    func testAnEventGivenAsJSONIsAnsweredWithItsOutcome() {
        let harness = harness()
        let outcomes: [String] = onLoop { finish in
            let collected = Locked<[Int: String]>([:])
            let events: [JSON] = [["type": "set", "path": "/n", "value": 1], ["type": "increment", "path": "/n/x"], ["type": 3]]
            for (index, event) in events.enumerated() {
                harness.path.fire(event, origin: nil) { outcome in
                    let text: String
                    switch outcome {
                    case .success(let version): text = "version \(version)"
                    case .failure(let problem): text = "\(problem.status.code)"
                    }
                    let all = collected.withLock { collected in
                        collected[index] = text
                        return collected
                    }
                    if all.count == events.count { finish((0..<events.count).map { all[$0]! }) }
                }
            }
        }
        XCTAssertEqual(outcomes, ["version 1", "422", "422"])
        XCTAssertEqual(journaled(harness), [#"{"type":"set","path":"/n","value":1}"#])
    }
}
