import Dispatch
@testable import Reactor
import Synchronization
import XCTest

final class SlotInboxTests: XCTestCase {
    func testOnlyAPushThatFindsTheInboxIdleAsksForAWakeUp() {
        let inbox = SlotInbox<Int>()
        XCTAssertTrue(inbox.isEmpty)
        XCTAssertTrue(inbox.push(1), "the first push finds it idle")
        XCTAssertFalse(inbox.push(2), "the consumer is already owed a turn")
        XCTAssertFalse(inbox.isEmpty)
        var taken: [Int] = []
        inbox.takeAll { taken.append($0) }
        XCTAssertEqual(taken, [1, 2])
        XCTAssertTrue(inbox.isEmpty)
        XCTAssertFalse(inbox.push(3), "while the consumer takes, pushes wake nobody")
        XCTAssertFalse(inbox.endTaking(), "something came meanwhile: take it")
        inbox.takeAll { taken.append($0) }
        XCTAssertTrue(inbox.endTaking())
        XCTAssertEqual(taken, [1, 2, 3])
        XCTAssertTrue(inbox.push(4), "idle again")
        inbox.takeUntilIdle { taken.append($0) }
        XCTAssertEqual(taken, [1, 2, 3, 4])
    }

    /// Across many blocks (63 slots each), with the consumer taking at every possible distance
    /// behind the producer: every value once, in order, and the blocks the consumer leaves reused.
    func testValuesCrossBlocksInOrder() {
        let inbox = SlotInbox<Int>()
        var next = 0
        var taken: [Int] = []
        for burst in 1...200 {
            for _ in 0..<burst {
                _ = inbox.push(next)
                next += 1
            }
            inbox.takeUntilIdle { taken.append($0) }
            XCTAssertTrue(inbox.isEmpty)
        }
        XCTAssertEqual(taken, Array(0..<next))
    }

    /// A `takeAll` whose body takes from the inbox itself (as the core does when a job fires on its
    /// executor) hands over nothing twice and nothing out of order.
    func testATakeInsideATakeKeepsTheOrder() {
        let inbox = SlotInbox<Int>()
        for value in 0..<100 { _ = inbox.push(value) }
        var order: [Int] = []
        var deferred: [Int] = []
        inbox.takeAll { value in
            order.append(value)
            if value == 10 {
                for later in 100..<110 { _ = inbox.push(later) }
                inbox.takeAll { deferred.append($0) }
            }
        }
        order += deferred
        inbox.takeUntilIdle { order.append($0) }
        XCTAssertEqual(order, Array(0..<110))
    }

    /// Values left in the inbox when it goes away are released with it.
    func testValuesNotTakenAreReleasedWithTheInbox() {
        final class Counter: Sendable {
            let count = Atomic<Int>(0)
        }
        let released = Counter()
        final class Probe: Sendable {
            let onDeinit: @Sendable () -> Void
            init(_ onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
            deinit { onDeinit() }
        }
        do {
            let inbox = SlotInbox<Probe>()
            for _ in 0..<150 { _ = inbox.push(Probe { released.count.add(1, ordering: .relaxed) }) }
            var taken = 0
            inbox.takeAll { _ in
                taken += 1
            }
            XCTAssertEqual(taken, 150)
            XCTAssertEqual(released.count.load(ordering: .relaxed), 150, "taken values are the taker's")
            for _ in 0..<100 { _ = inbox.push(Probe { released.count.add(1, ordering: .relaxed) }) }
        }
        XCTAssertEqual(released.count.load(ordering: .relaxed), 250, "the inbox released what it still held")
    }

    /// Four producers and one consumer woken only by the pushes that found the inbox idle: every
    /// value arrives once, each producer's in the order it pushed them.
    func testManyProducersOneConsumerLoseNothingAndKeepEachProducersOrder() {
        let producers = 4
        let perProducer = 50_000
        let inbox = SlotInbox<Int>()
        let wakeups = DispatchSemaphore(value: 0)
        let consumed = DispatchSemaphore(value: 0)
        let wakeupsAsked = Atomic<Int>(0)
        final class Tally: @unchecked Sendable {
            // @unchecked Sendable: touched by the consumer thread only, read after it finished.
            var next: [Int]
            var turns = 0
            init(producers: Int) { next = Array(repeating: 0, count: producers) }
        }
        let tally = Tally(producers: producers)
        let consumer = Thread {
            var received = 0
            while received < producers * perProducer {
                wakeups.wait()
                tally.turns += 1
                inbox.takeUntilIdle { value in
                    let producer = value / perProducer
                    XCTAssertEqual(value % perProducer, tally.next[producer], "producer \(producer) out of order")
                    tally.next[producer] += 1
                    received += 1
                }
            }
            consumed.signal()
        }
        consumer.start()
        DispatchQueue.concurrentPerform(iterations: producers) { producer in
            for index in 0..<perProducer where inbox.push(producer * perProducer + index) {
                wakeupsAsked.add(1, ordering: .relaxed)
                wakeups.signal()
            }
        }
        XCTAssertEqual(consumed.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(tally.next, Array(repeating: perProducer, count: producers))
        XCTAssertTrue(inbox.isEmpty)
        XCTAssertEqual(tally.turns, wakeupsAsked.load(ordering: .relaxed), "one turn per wake-up asked, none lost")
    }
}
