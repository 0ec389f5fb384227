import Dispatch
import Reactor
import Synchronization
import XCTest

/// Removal called on the core's executor takes effect before it returns: nothing more is delivered
/// to what was removed, not even the states of events queued before the call (the seed README's
/// pattern: unsubscribe from a command, a middleware or an update). Off the executor it keeps its
/// turn in the FIFO order (OrderingTests).
final class RemovalTests: XCTestCase {
    /// Holds the executor until `release()`, so that the jobs submitted meanwhile are all queued
    /// when it resumes: the removal then runs with events already waiting behind it.
    private struct Hold: Command {
        let gate = DispatchSemaphore(value: 0)
        func execute(state: Counter, core: Core<Counter>) { gate.wait() }
        func release() { gate.signal() }
    }

    private struct Unsubscribe: Command {
        let subscriber: Recorder<Counter>
        func execute(state: Counter, core: Core<Counter>) { core.remove(subscriber: subscriber) }
    }

    private struct RemoveRegistration: Command {
        let registration: Box<Registration?>
        func execute(state: Counter, core: Core<Counter>) { core.remove(registration.value!) }
    }

    func testASubscriberRemovedByACommandGetsNoStateOfTheEventsQueuedBehindIt() {
        let core = Core(state: Counter())
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        let hold = Hold()
        core.fire(command: hold)
        core.fire(command: Unsubscribe(subscriber: recorder))
        for _ in 0..<5 { core.fire(event: Add()) }
        hold.release()
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0])
        XCTAssertEqual(core.state.count, 5)
    }

    func testASubscriberRemovedByAMiddlewareMissesTheStateBeingPublishedAndAllAfter() {
        let recorder = Recorder<Counter>()
        let coreBox = Box<Core<Counter>?>(nil)
        let middleware = RecordingMiddleware { _, state in
            if state.count == 1 { coreBox.value?.remove(subscriber: recorder) }
        }
        let core = Core(state: Counter(), middlewares: [middleware])
        coreBox.mutate { $0 = core }
        core.add(subscriber: recorder)
        let hold = Hold()
        core.fire(command: hold)
        for _ in 0..<5 { core.fire(event: Add()) }
        hold.release()
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0])
        XCTAssertEqual(middleware.seen.withLock { $0.count }, 5)
        coreBox.mutate { $0 = nil }
    }

    func testASubscriberRemovedByAnInterceptorMissesTheEventBeingAdmitted() {
        struct RemovingInterceptor: Interceptor {
            let core: Box<Core<Counter>?>
            let subscriber: Recorder<Counter>
            func intercept(event: Event, state: Counter) throws {
                core.value?.remove(subscriber: subscriber)
            }
        }
        let recorder = Recorder<Counter>()
        let coreBox = Box<Core<Counter>?>(nil)
        let core = Core(state: Counter())
        coreBox.mutate { $0 = core }
        core.add(subscriber: recorder)
        core.add(interceptor: RemovingInterceptor(core: coreBox, subscriber: recorder))
        let hold = Hold()
        core.fire(command: hold)
        for _ in 0..<5 { core.fire(event: Add()) }
        hold.release()
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0])
        coreBox.mutate { $0 = nil }
    }

    func testASubscriberThatRemovesItselfAtItsFirstUpdateGetsNothingMore() {
        let core = Core(state: Counter())
        let recorder = Recorder<Counter> { recorder, _, _ in core.remove(subscriber: recorder) }
        let hold = Hold()
        core.fire(command: hold)
        core.add(subscriber: recorder)
        for _ in 0..<5 { core.fire(event: Add()) }
        hold.release()
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0])
    }

    func testASubscriberOnItsOwnQueueThatRemovesItselfGetsNoneOfTheStatesAlreadySentThere() {
        let core = Core(state: Counter())
        let queue = DispatchQueue(label: "subscriber")
        // The subscriber's queue is held too, so that every state is sent there before the first runs.
        let queueGate = DispatchSemaphore(value: 0)
        queue.async { queueGate.wait() }
        let recorder = Recorder<Counter> { recorder, _, _ in core.remove(subscriber: recorder) }
        core.add(subscriber: recorder, notifyOnQueue: queue)
        for _ in 0..<5 { core.fire(event: Add()) }
        core.drain()
        queueGate.signal()
        queue.sync {}
        core.fire(event: Add())
        core.drain()
        queue.sync {}
        XCTAssertEqual(recorder.values.map(\.count), [0])
    }

    func testASubscriberOnItsOwnQueueRemovedOnTheExecutorGetsNoneOfTheStatesAlreadySentThere() {
        let core = Core(state: Counter())
        let queue = DispatchQueue(label: "subscriber")
        let queueGate = DispatchSemaphore(value: 0)
        queue.async { queueGate.wait() }
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder, notifyOnQueue: queue)
        for _ in 0..<5 { core.fire(event: Add()) }
        core.fire(command: Unsubscribe(subscriber: recorder))
        core.drain()
        queueGate.signal()
        queue.sync {}
        XCTAssertEqual(recorder.values.map(\.count), [])
    }

    func testRemovingAnotherSubscriberDuringANotificationSkipsOnlyThatOne() {
        let core = Core(state: Counter())
        let second = Recorder<Counter>()
        let first = Recorder<Counter> { _, state, _ in
            if state.count == 1 { core.remove(subscriber: second) }
        }
        let third = Recorder<Counter>()
        core.add(subscriber: first)
        core.add(subscriber: second)
        core.add(subscriber: third)
        core.fire(event: Add())
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(first.values.map(\.count), [0, 1, 2])
        XCTAssertEqual(second.values.map(\.count), [0])
        XCTAssertEqual(third.values.map(\.count), [0, 1, 2])
    }

    func testAMiddlewareRemovedByACommandSeesNoEventQueuedBehindIt() {
        let middleware = RecordingMiddleware()
        let core = Core(state: Counter())
        let registration = Box<Registration?>(nil)
        registration.mutate { $0 = core.add(middleware: middleware) }
        core.fire(event: Add())
        let hold = Hold()
        core.fire(command: hold)
        core.fire(command: RemoveRegistration(registration: registration))
        for _ in 0..<3 { core.fire(event: Add()) }
        hold.release()
        core.drain()
        XCTAssertEqual(middleware.seen.withLock { $0.map(\.version) }, [1])
        XCTAssertEqual(core.state.count, 4)
    }

    func testAMiddlewareThatRemovesItselfSeesNothingMoreAndTheOthersStillRun() {
        let registration = Box<Registration?>(nil)
        let coreBox = Box<Core<Counter>?>(nil)
        let removing = RecordingMiddleware { _, _ in coreBox.value?.remove(registration.value!) }
        let after = RecordingMiddleware()
        let core = Core(state: Counter())
        coreBox.mutate { $0 = core }
        registration.mutate { $0 = core.add(middleware: removing) }
        core.add(middleware: after)
        let hold = Hold()
        core.fire(command: hold)
        for _ in 0..<3 { core.fire(event: Add()) }
        hold.release()
        core.drain()
        XCTAssertEqual(removing.seen.withLock { $0.map(\.version) }, [1])
        XCTAssertEqual(after.seen.withLock { $0.map(\.version) }, [1, 2, 3])
        coreBox.mutate { $0 = nil }
    }

    func testAnInterceptorRemovedByACommandRefusesNoEventQueuedBehindIt() {
        struct RefuseAll: Interceptor {
            func intercept(event: Event, state: Counter) throws { throw Refusal(reason: "no") }
        }
        let core = Core(state: Counter())
        let registration = Box<Registration?>(nil)
        registration.mutate { $0 = core.add(interceptor: RefuseAll()) }
        let hold = Hold()
        core.fire(command: hold)
        core.fire(command: RemoveRegistration(registration: registration))
        for _ in 0..<3 { core.fire(event: Add()) }
        hold.release()
        core.drain()
        XCTAssertEqual(core.state.count, 3)
    }

    func testARemovedSubscriberCanBeAddedAgainInTheSameJob() {
        struct Resubscribe: Command {
            let subscriber: Recorder<Counter>
            func execute(state: Counter, core: Core<Counter>) {
                core.remove(subscriber: subscriber)
                core.add(subscriber: subscriber)
            }
        }
        let core = Core(state: Counter())
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        core.fire(command: Resubscribe(subscriber: recorder))
        core.drain()
        core.fire(event: Add())
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [0, 0, 1])
    }
}
