import Reactor
import XCTest

final class BatchTests: XCTestCase {
    private func fire(_ core: Core<Counter>, _ events: [any Event], _ mode: BatchMode) -> Result<BatchOutcome, BatchRejection> {
        let result = Box<Result<BatchOutcome, BatchRejection>?>(nil)
        let done = expectation(description: "batch")
        core.fire(events: events, mode: mode) { outcome in
            result.mutate { $0 = outcome }
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value!
    }

    func testAnAllOrNothingBatchAppliesEveryEventWithItsOwnVersionAndState() throws {
        let middleware = RecordingMiddleware()
        let core = Core(state: Counter(), middlewares: [middleware])
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        let outcome = try fire(core, [Add(amount: 1), Add(amount: 2), Add(amount: 3)], .allOrNothing).get()
        XCTAssertEqual(outcome.version, 3)
        XCTAssertEqual(outcome.applied, 3)
        XCTAssertEqual(recorder.values.map(\.count), [0, 1, 3, 6])
        XCTAssertEqual(recorder.versions, [0, 1, 2, 3])
        XCTAssertEqual(middleware.seen.withLock { $0.map(\.count) }, [1, 3, 6])
    }

    func testAnAllOrNothingBatchWithARejectedEventAppliesNothing() {
        let middleware = RecordingMiddleware()
        let core = Core(state: Counter(), middlewares: [middleware])
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        core.fire(event: Add(amount: 10))
        let result = fire(core, [Add(amount: 1), Refused(), Add(amount: 3)], .allOrNothing)
        guard case .failure(let rejection) = result else { return XCTFail("the batch was applied") }
        XCTAssertEqual(rejection.index, 1)
        XCTAssertEqual(rejection.error as? Refusal, Refusal(reason: "refused by the state"))
        let snapshot = core.snapshot()
        XCTAssertEqual(snapshot.version, 1)
        XCTAssertEqual(snapshot.state, Counter(count: 10, log: [10]))
        XCTAssertEqual(recorder.values.map(\.count), [0, 10], "a subscriber saw part of a rejected batch")
        XCTAssertEqual(middleware.seen.withLock { $0.count }, 1, "middleware saw part of a rejected batch")
    }

    func testAPruneBatchAppliesTheAcceptedEventsAndReportsTheOthers() throws {
        let core = Core(state: Counter())
        let outcome = try fire(core, [Add(amount: 1), Refused(), Add(amount: 3), Refused()], .prune).get()
        XCTAssertEqual(outcome.version, 2)
        XCTAssertEqual(outcome.applied, 2)
        XCTAssertEqual(outcome.rejected.map(\.index), [1, 3])
        XCTAssertEqual(core.state.log, [1, 3])
    }

    func testNothingIsAppliedBetweenTheEventsOfABatch() {
        // Events fired from another thread while batches run never land inside one.
        let core = Core(state: Counter())
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        let done = expectation(description: "batches")
        done.expectedFulfillmentCount = 50
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for _ in 0..<50 {
                if worker == 0 {
                    core.fire(events: [SetName(value: "a"), Add(amount: 1), SetName(value: nil)], mode: .allOrNothing) { _ in done.fulfill() }
                } else {
                    core.fire(event: Add(amount: 1000))
                }
            }
        }
        wait(for: [done], timeout: 10)
        core.drain()
        let states = recorder.values
        XCTAssertEqual(states.last?.count, 50 * 1 + 50 * 1000)
        var batches = 0
        for index in states.indices where states[index].name == "a" && states[index - 1].name == nil {
            batches += 1
            XCTAssertEqual(states[index + 1].log.last, 1, "another event landed inside a batch")
            XCTAssertEqual(states[index + 1].name, "a")
            XCTAssertNil(states[index + 2].name)
            XCTAssertEqual(states[index + 2].count, states[index + 1].count)
        }
        XCTAssertEqual(batches, 50)
    }

    func testInterceptorsSeeTheOriginAnEventWasFiredWith() throws {
        struct OnlyAlice: Interceptor {
            func intercept(event: Event, state: Counter) throws {}
            func intercept(event: Event, state: Counter, origin: (any Sendable)?) throws {
                guard let origin = origin as? String else { return }
                if origin != "alice" { throw Refusal(reason: "\(origin) may not fire") }
            }
        }
        let core = Core(state: Counter())
        core.add(interceptor: OnlyAlice())
        let results = Box<[String]>([])
        let done = expectation(description: "fires")
        done.expectedFulfillmentCount = 3
        for origin in ["alice", "bob"] as [String?] + [nil] {
            core.fire(event: Add(), origin: origin) { result in
                results.mutate { $0.append("\(origin ?? "none"): \((try? result.get()).map(String.init) ?? "rejected")") }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(results.value, ["alice: 1", "bob: rejected", "none: 2"])
    }
}

/// A state whose storage counts the times it is copied: what a long all-or-nothing batch costs in
/// copies of the state, which kept intermediate states would multiply.
private struct CopyCountingState: State {
    final class Storage: @unchecked Sendable {  // @unchecked: the tests touch it on the core's executor only
        var values: [Int]
        nonisolated(unsafe) static var copies = 0  // read by the test after the core's work
        init(_ values: [Int]) { self.values = values }
    }

    var storage = Storage(Array(repeating: 0, count: 1_000))

    mutating func react(to event: Event) { try? apply(event) }

    mutating func apply(_ event: Event) throws {
        if event is Refused { throw Refusal(reason: "refused by the state") }
        guard let add = event as? Add else { return }
        if !isKnownUniquelyReferenced(&storage) {
            storage = Storage(storage.values)
            Storage.copies += 1
        }
        storage.values[0] += add.amount
    }
}

final class LongBatchTests: XCTestCase {
    private struct CountingInterceptor: Interceptor {
        let seen: Locked<Int>
        func intercept(event: Event, state: CopyCountingState) throws { seen.withLock { $0 += 1 } }
    }

    private func fire(_ core: Core<CopyCountingState>, _ events: [any Event]) -> Result<BatchOutcome, BatchRejection> {
        let result = Locked<Result<BatchOutcome, BatchRejection>?>(nil)
        let done = expectation(description: "batch")
        core.fire(events: events, mode: .allOrNothing) { outcome in
            result.withLock { $0 = outcome }
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.withLock { $0! }
    }

    func testALongAllOrNothingBatchCopiesTheStateAFewTimesNotOncePerEvent() throws {
        let core = Core(state: CopyCountingState())
        let seen = Locked(0)
        core.add(interceptor: CountingInterceptor(seen: seen))
        let recorder = Recorder<CopyCountingState>()
        core.add(subscriber: recorder)
        CopyCountingState.Storage.copies = 0
        let outcome = try fire(core, Array(repeating: Add(amount: 1), count: 100)).get()
        XCTAssertEqual(outcome.version, 100)
        XCTAssertEqual(outcome.applied, 100)
        XCTAssertEqual(core.state.storage.values[0], 100)
        XCTAssertEqual(seen.withLock { $0 }, 100, "each event is intercepted once")
        // Every state was shown, in order, each with its own version.
        XCTAssertEqual(recorder.versions, Array(0...100).map(UInt64.init))
    }

    func testALongAllOrNothingBatchThatIsRefusedCopiesOnceAndShowsNothing() {
        let core = Core(state: CopyCountingState())
        let recorder = Recorder<CopyCountingState>()
        core.add(subscriber: recorder)
        CopyCountingState.Storage.copies = 0
        let result = fire(core, Array(repeating: Add(amount: 1), count: 50) + [Refused()])
        guard case .failure(let rejection) = result else { return XCTFail("the batch was applied") }
        XCTAssertEqual(rejection.index, 50)
        XCTAssertEqual(core.state.storage.values[0], 0)
        XCTAssertEqual(core.snapshot().version, 0)
        XCTAssertEqual(recorder.versions, [0], "a subscriber saw part of a refused batch")
        // Kept states would have copied the state for each of the 50 events.
        XCTAssertLessThanOrEqual(CopyCountingState.Storage.copies, 2)
    }

    func testALongBatchWithoutSubscribersEditsInPlace() throws {
        let core = Core(state: CopyCountingState())
        CopyCountingState.Storage.copies = 0
        _ = try fire(core, Array(repeating: Add(amount: 1), count: 100)).get()
        XCTAssertEqual(core.state.storage.values[0], 100)
        XCTAssertLessThanOrEqual(CopyCountingState.Storage.copies, 3)
    }
}
