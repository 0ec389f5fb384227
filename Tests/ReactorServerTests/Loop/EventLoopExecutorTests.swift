import Dispatch
import Reactor
@testable import ReactorServer
import Synchronization
import XCTest

/// A core confined to a real libuv loop thread: fired on the loop it runs inline, fired elsewhere it
/// arrives through uv_async_send.
final class EventLoopExecutorTests: XCTestCase {
    struct Tally: State {
        var total = 0
        var order: [Int] = []
        mutating func react(to event: Event) {
            if let add = event as? Add {
                total += add.amount
                order.append(add.amount)
            }
        }
    }

    struct Add: Event { let amount: Int }

    final class OnLoopRecorder: Subscriber, Sendable {
        let loop: EventLoop
        let versions = Locked<[UInt64]>([])
        let offLoop = Atomic<Int>(0)
        init(loop: EventLoop) { self.loop = loop }
        func update(with state: Tally) {}
        func update(with state: Tally, version: UInt64) {
            if !loop.isCurrent { offLoop.add(1, ordering: .relaxed) }
            versions.withLock { $0.append(version) }
        }
    }

    func testOnTheLoopThreadEventsApplyInlineAndSubscribersAreCalledThere() throws {
        let loop = try EventLoop.startThread()
        defer { loop.stop() }
        let core = Core(state: Tally(), executor: loop)
        let recorder = OnLoopRecorder(loop: loop)
        let checked = DispatchSemaphore(value: 0)
        let inline = Locked<[Bool]>([])
        loop.enqueue {
            core.add(subscriber: recorder)
            for amount in 1...100 {
                core.fire(event: Add(amount: amount))
                let applied = core.state.order.last == amount && recorder.versions.withLock { $0.last } == UInt64(amount)
                inline.withLock { $0.append(applied) }
            }
            checked.signal()
        }
        XCTAssertEqual(checked.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(inline.withLock { $0 }, Array(repeating: true, count: 100), "an event fired on the loop was not applied before fire returned")
        XCTAssertEqual(recorder.offLoop.load(ordering: .relaxed), 0)
    }

    func testEventsFiredFromOtherThreadsArriveInOneOrderOnTheLoop() throws {
        let loop = try EventLoop.startThread()
        defer { loop.stop() }
        let core = Core(state: Tally(), executor: loop)
        let recorder = OnLoopRecorder(loop: loop)
        core.add(subscriber: recorder)
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for index in 0..<500 {
                if worker == 0 && index.isMultiple(of: 10) {
                    loop.enqueue { core.fire(event: Add(amount: 1)) }
                } else {
                    core.fire(event: Add(amount: 1))
                }
            }
        }
        // The jobs handed to the loop directly fire when the loop runs them: wait for those too.
        let flushed = DispatchSemaphore(value: 0)
        loop.enqueue { flushed.signal() }
        flushed.wait()
        let snapshot = core.snapshot()
        XCTAssertEqual(snapshot.version, 2_000)
        XCTAssertEqual(snapshot.state.total, 2_000)
        XCTAssertEqual(recorder.versions.withLock { $0 }, Array(0...2_000))
        XCTAssertEqual(recorder.offLoop.load(ordering: .relaxed), 0)
    }

    func testStopEndsTheLoopThread() throws {
        let loop = try EventLoop.startThread()
        let ran = DispatchSemaphore(value: 0)
        loop.enqueue { ran.signal() }
        XCTAssertEqual(ran.wait(timeout: .now() + 10), .success)
        loop.stop()
        // After stop, the loop no longer runs jobs: a job sent now is never run.
        let late = DispatchSemaphore(value: 0)
        Thread.sleep(forTimeInterval: 0.1)
        loop.enqueue { late.signal() }
        XCTAssertEqual(late.wait(timeout: .now() + 0.3), .timedOut)
    }
}
