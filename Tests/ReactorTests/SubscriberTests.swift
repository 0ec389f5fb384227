import Dispatch
import Foundation
import Reactor
import XCTest

final class SubscriberTests: XCTestCase {
    func testANewSubscriberGetsTheCurrentStateThenEveryLaterOne() {
        let core = Core(state: Counter(count: 41))
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        core.fire(event: Add())
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [41, 42, 43])
        XCTAssertEqual(recorder.versions, [0, 1, 2])
    }

    func testASecondAddOfTheSameSubscriberIsIgnored() {
        let core = Core(state: Counter())
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        core.add(subscriber: recorder)
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0, 1])
    }

    /// Held weakly, and, while events fired from another thread run in a round, held for that
    /// round only: the core lets go of its subscriber when the round ends.
    func testSubscribersAreHeldWeakly() {
        let core = Core(state: Counter())
        weak var gone: Recorder<Counter>?
        do {
            let recorder = Recorder<Counter>()
            gone = recorder
            core.add(subscriber: recorder)
            for _ in 0..<1_000 { core.fire(event: Add()) }
            core.drain()
            XCTAssertEqual(recorder.versions, Array(0...1_000))
        }
        XCTAssertNil(gone, "the core kept its subscriber alive")
        core.fire(event: Add())
        XCTAssertEqual(core.state.count, 1_001)
    }

    func testAnEventFiredRightAfterAddReachesTheSubscriber() {
        // The seed's issue #17, from many threads at once so the two calls race with others.
        let core = Core(state: Counter())
        let recorders = (0..<200).map { _ in Recorder<Counter>() }
        DispatchQueue.concurrentPerform(iterations: recorders.count) { index in
            core.add(subscriber: recorders[index])
            core.fire(event: Add())
        }
        core.drain()
        for recorder in recorders {
            XCTAssertGreaterThanOrEqual(recorder.count, 2, "a subscriber missed the event fired right after its add")
            XCTAssertEqual(recorder.values.last?.count, 200)
        }
    }

    func testTheDefaultTargetIsTheCoresExecutorNotTheMainQueue() {
        // The main thread is blocked below and never services the main queue: the seed's default
        // target would deliver nothing.
        let core = Core(state: Counter())
        let delivered = DispatchSemaphore(value: 0)
        let recorder = Recorder<Counter> { _, state, _ in
            dispatchPrecondition(condition: .notOnQueue(.main))
            if state.count == 1 { delivered.signal() }
        }
        core.add(subscriber: recorder)
        core.fire(event: Add())
        XCTAssertEqual(delivered.wait(timeout: .now() + 10), .success)
    }

    func testNotifyOnQueueDeliversThereInOrder() {
        let core = Core(state: Counter())
        let queue = DispatchQueue(label: "subscriber")
        let recorder = Recorder<Counter> { _, _, _ in dispatchPrecondition(condition: .onQueue(queue)) }
        core.add(subscriber: recorder, notifyOnQueue: queue)
        for _ in 0..<100 { core.fire(event: Add()) }
        core.drain()
        queue.sync {}
        XCTAssertEqual(recorder.values.map(\.count), Array(0...100))
    }

    /// States sent to a subscriber's queue while a block that delivers there is still waiting ride
    /// in that block: one hop per batch of states, not one per state.
    func testStatesSentWhileASubscribersQueueIsBusyRideInTheBlockAlreadyThere() {
        let core = Core(state: Counter())
        let queue = DispatchQueue(label: "subscriber")
        let seen = Locked<[String]>([])
        let recorder = Recorder<Counter> { _, state, _ in seen.withLock { $0.append("state \(state.count)") } }
        core.add(subscriber: recorder, notifyOnQueue: queue)
        core.drain()
        queue.sync {}
        queue.suspend()
        core.fire(events: [Add(), Add(), Add()], mode: .allOrNothing) { _ in }
        core.drain()
        queue.async { seen.withLock { $0.append("marker") } }
        core.fire(events: [Add(), Add()], mode: .allOrNothing) { _ in }
        core.drain()
        queue.resume()
        queue.sync {}
        XCTAssertEqual(seen.withLock { $0 }, ["state 0", "state 1", "state 2", "state 3", "state 4", "state 5", "marker"])
    }

    /// Whoever learns of a version from the core finds every state up to it already sent to
    /// subscribers on their own queues: the states of a burst are gathered, not held back.
    func testAVersionReportedByTheCoreIsAlreadyOnTheSubscribersQueue() async throws {
        let core = Core(state: Counter())
        let queue = DispatchQueue(label: "subscriber")
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder, notifyOnQueue: queue)
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<500 { core.fire(event: Add()) }
        }
        let version = try await core.fireAndWait(event: Add())
        queue.sync {}
        XCTAssertEqual(recorder.versions.last, version)
        XCTAssertEqual(recorder.versions, Array(0...1_001))

        let batchVersion = Locked<UInt64?>(nil)
        let answered = DispatchSemaphore(value: 0)
        core.fire(events: [Add(), Add(), Add()], mode: .allOrNothing) { outcome in
            queue.sync {}
            batchVersion.withLock { $0 = try? outcome.get().version }
            XCTAssertEqual(recorder.versions.last, try? outcome.get().version, "a batch's completion came before its states")
            answered.signal()
        }
        XCTAssertEqual(answered.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(batchVersion.withLock { $0 }, 1_004)
    }

    func testASelectorDeliversItsSelection() {
        let core = Core(state: Counter())
        let names = Recorder<String?>()
        core.add(subscriber: names, selector: { $0.name })
        core.fire(event: SetName(value: "a"))
        core.drain()
        XCTAssertEqual(names.values, [nil, "a"])
    }

    func testAnEquatableSelectionIsDeliveredOnlyWhenItChanges() {
        let core = Core(state: Counter())
        let flags = Recorder<Bool>()
        core.add(subscriber: flags, selector: { $0.flag })
        core.fire(event: Add())
        core.fire(event: SetFlag(value: true))
        core.fire(event: Add())
        core.fire(event: SetFlag(value: true))
        core.fire(event: SetFlag(value: false))
        core.drain()
        XCTAssertEqual(flags.values, [false, true, false])
        XCTAssertEqual(flags.versions, [0, 2, 5])
    }

    func testASeedStyleSubscriberImplementingOnlyUpdateWithStateWorks() {
        let core = Core(state: Counter())
        let subscriber = SeedStyleSubscriber()
        core.add(subscriber: subscriber)
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(subscriber.received.map(\.count), [0, 1])
    }

    // The seed crashed on each of these: `remove` did a `sync` onto the queue it was running on.

    func testRemoveFromASubscriberNotifiedOnTheCoresOwnExecutor() {
        let core = Core(state: Counter())
        let recorder = Recorder<Counter> { recorder, state, _ in
            if state.count == 1 { core.remove(subscriber: recorder) }
        }
        core.add(subscriber: recorder)
        core.fire(event: Add())
        core.drain()
        core.fire(event: Add())
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0, 1])
    }

    func testRemoveFromAMiddleware() {
        let recorder = Recorder<Counter>()
        let coreBox = Box<Core<Counter>?>(nil)
        let middleware = RecordingMiddleware { _, state in
            if state.count == 1 { coreBox.value?.remove(subscriber: recorder) }
        }
        let core = Core(state: Counter(), middlewares: [middleware])
        coreBox.mutate { $0 = core }
        core.add(subscriber: recorder)
        core.fire(event: Add())
        core.drain()
        core.fire(event: Add())
        core.fire(event: Add())
        core.drain()
        // Middleware runs before subscribers, and a removal on the executor takes effect at once:
        // the state being published is not seen.
        XCTAssertEqual(recorder.values.map(\.count), [0])
        coreBox.mutate { $0 = nil }
    }

    func testRemoveFromACommand() {
        struct Unsubscribe: Command {
            let recorder: Recorder<Counter>
            func execute(state: Counter, core: Core<Counter>) { core.remove(subscriber: recorder) }
        }
        let core = Core(state: Counter())
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        core.fire(event: Add())
        core.fire(command: Unsubscribe(recorder: recorder))
        core.drain()
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0, 1])
    }
}
