import Dispatch
import Reactor
import Synchronization
import XCTest

/// One total FIFO order over add, fire and remove; jobs started from inside a job run after it.
final class OrderingTests: XCTestCase {
    func testAddFireAndRemoveFromOneThreadApplyInTheOrderCalled() {
        let core = Core(state: Counter())
        let recorder = Recorder<Counter>()
        core.fire(event: Add(amount: 1))
        core.add(subscriber: recorder)
        core.fire(event: Add(amount: 2))
        core.fire(event: Add(amount: 3))
        core.remove(subscriber: recorder)
        core.fire(event: Add(amount: 4))
        core.drain()
        XCTAssertEqual(recorder.values.map(\.count), [1, 3, 6])
        XCTAssertEqual(recorder.versions, [1, 2, 3])
        XCTAssertEqual(core.state.count, 10)
    }

    func testEventsFromManyThreadsGetContiguousVersionsAndEveryStateIsSeenInOrder() {
        let core = Core(state: Counter())
        let recorder = Recorder<Counter>()
        core.add(subscriber: recorder)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<250 { core.fire(event: Add()) }
        }
        core.drain()
        XCTAssertEqual(recorder.versions, Array(0...2_000))
        XCTAssertEqual(recorder.values.map(\.count), Array(0...2_000))
    }

    /// Threads firing while jobs fire on the executor too (a middleware firing after every seventh
    /// event takes what the other threads pushed before it, from inside the job taking them): each
    /// thread's events apply in the order it fired them, and nothing is lost or applied twice.
    func testEventsFromManyThreadsKeepEachThreadsOrderWhileTheExecutorFiresToo() {
        let producers = 4
        let perProducer = 5_000
        let coreBox = Box<Core<Counter>?>(nil)
        let middleware = RecordingMiddleware { event, _ in
            if let add = event as? Add, add.amount > 0, add.amount % 7 == 0 { coreBox.value?.fire(event: Add(amount: -1)) }
        }
        let core = Core(state: Counter(), middlewares: [middleware])
        coreBox.mutate { $0 = core }
        DispatchQueue.concurrentPerform(iterations: producers) { producer in
            for sequence in 1...perProducer { core.fire(event: Add(amount: producer * 1_000_000 + sequence)) }
        }
        core.drain()
        let log = core.state.log
        var next = Array(repeating: 1, count: producers)
        var markers = 0
        for amount in log {
            if amount == -1 { markers += 1; continue }
            let producer = amount / 1_000_000
            XCTAssertEqual(amount % 1_000_000, next[producer], "producer \(producer) out of order")
            next[producer] = amount % 1_000_000 + 1
        }
        XCTAssertEqual(next, Array(repeating: perProducer + 1, count: producers))
        XCTAssertEqual(markers, log.filter { $0 > 0 && $0 % 7 == 0 }.count)
        coreBox.mutate { $0 = nil }
    }

    func testAFireFromInsideASubscriberRunsAfterEverySubscriberSawTheCurrentState() {
        let core = Core(state: Counter())
        let depth = Box(0)
        let nested = Box(false)
        let first = Recorder<Counter> { _, state, _ in
            let level = depth.mutate { $0 += 1; return $0 }
            if level > 1 { nested.mutate { $0 = true } }
            if state.count == 1 { core.fire(event: Add(amount: 10)) }
            depth.mutate { $0 -= 1 }
        }
        let second = Recorder<Counter>()
        core.add(subscriber: first)
        core.add(subscriber: second)
        core.fire(event: Add())
        core.drain()
        XCTAssertFalse(nested.value, "a subscriber's fire ran nested inside its own notification")
        XCTAssertEqual(second.values.map(\.count), [0, 1, 11], "the second subscriber must see 1 before 11")
        XCTAssertEqual(first.values.map(\.count), [0, 1, 11])
    }

    func testAFireFromMiddlewareRunsAfterTheCurrentJob() {
        let recorder = Recorder<Counter>()
        let coreBox = Box<Core<Counter>?>(nil)
        let middleware = RecordingMiddleware { _, state in
            if state.count == 1 { coreBox.value?.fire(event: Add(amount: 5)) }
        }
        let core = Core(state: Counter(), middlewares: [middleware])
        coreBox.mutate { $0 = core }
        core.add(subscriber: recorder)
        core.fire(event: Add())
        core.drain()
        // The subscriber saw 1 before 6: the middleware's event did not jump the queue.
        XCTAssertEqual(recorder.values.map(\.count), [0, 1, 6])
        XCTAssertEqual(middleware.seen.withLock { $0.map(\.count) }, [1, 6])
        coreBox.mutate { $0 = nil }
    }

    func testACommandRunsWithTheStateAsOfItsTurn() {
        struct Probe: Command {
            let seen: Box<[Int]>
            func execute(state: Counter, core: Core<Counter>) {
                seen.mutate { $0.append(state.count) }
                core.fire(event: Add(amount: 100))
                // The fire above is queued, not applied inside this command.
                seen.mutate { $0.append(core.state.count) }
            }
        }
        let core = Core(state: Counter())
        let seen = Box<[Int]>([])
        core.fire(event: Add(amount: 2))
        core.fire(command: Probe(seen: seen))
        core.drain()
        XCTAssertEqual(seen.value, [2, 2])
        XCTAssertEqual(core.state.log, [2, 100])
    }
}
