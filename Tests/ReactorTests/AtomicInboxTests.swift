import Dispatch
@testable import Reactor
import Synchronization
import XCTest

final class AtomicInboxTests: XCTestCase {
    func testOnlyAPushThatFindsTheInboxIdleAsksForAWakeUp() {
        let inbox = AtomicInbox<Int>()
        XCTAssertTrue(inbox.isEmpty)
        XCTAssertTrue(inbox.push(1), "the first push finds it idle")
        XCTAssertFalse(inbox.push(2), "the consumer is already owed a turn")
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

    /// Four producers and one consumer woken only by the pushes that found the inbox idle: every
    /// value arrives once, each producer's in the order it pushed them.
    func testManyProducersOneConsumerLoseNothingAndKeepEachProducersOrder() {
        let producers = 4
        let perProducer = 20_000
        let inbox = AtomicInbox<Int>()
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
