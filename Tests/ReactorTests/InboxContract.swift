import Dispatch
import Foundation
import Synchronization
import XCTest

/// What both of the library's inboxes for many producers and one consumer (`AtomicInbox`,
/// `SlotInbox`) promise, checked through their four operations.
struct InboxContract {
    let push: @Sendable (Int) -> Bool
    let takeAll: ((Int) -> Void) -> Void
    let endTaking: () -> Bool
    let isEmpty: () -> Bool

    func takeUntilIdle(_ body: (Int) -> Void) {
        repeat { takeAll(body) } while !endTaking()
    }

    /// Only a push that finds the inbox idle asks for a wake-up, and the consumer's turn ends only
    /// when nothing came meanwhile.
    func checkWakeUps(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(isEmpty(), file: file, line: line)
        XCTAssertTrue(push(1), "the first push finds it idle", file: file, line: line)
        XCTAssertFalse(push(2), "the consumer is already owed a turn", file: file, line: line)
        var taken: [Int] = []
        takeAll { taken.append($0) }
        XCTAssertEqual(taken, [1, 2], file: file, line: line)
        XCTAssertTrue(isEmpty(), file: file, line: line)
        XCTAssertFalse(push(3), "while the consumer takes, pushes wake nobody", file: file, line: line)
        XCTAssertFalse(endTaking(), "something came meanwhile: take it", file: file, line: line)
        takeAll { taken.append($0) }
        XCTAssertTrue(endTaking(), file: file, line: line)
        XCTAssertEqual(taken, [1, 2, 3], file: file, line: line)
        XCTAssertTrue(push(4), "idle again", file: file, line: line)
        takeUntilIdle { taken.append($0) }
        XCTAssertEqual(taken, [1, 2, 3, 4], file: file, line: line)
    }

    /// Four producers and one consumer woken only by the pushes that found the inbox idle: every
    /// value arrives once, each producer's in the order it pushed them, one turn per wake-up asked.
    func checkManyProducers(perProducer: Int, file: StaticString = #filePath, line: UInt = #line) {
        let producers = 4
        let wakeups = DispatchSemaphore(value: 0)
        let consumed = DispatchSemaphore(value: 0)
        final class Tally: @unchecked Sendable {
            // @unchecked Sendable: `next` and `turns` are touched by the consumer thread only and
            // read after it finished; `wakeupsAsked` is atomic.
            var next: [Int]
            var turns = 0
            let wakeupsAsked = Atomic<Int>(0)
            init(producers: Int) { next = Array(repeating: 0, count: producers) }
        }
        let tally = Tally(producers: producers)
        // @unchecked Sendable: the consumer's operations run on the consumer thread only.
        struct Consumer: @unchecked Sendable { let contract: InboxContract }
        let consumer = Consumer(contract: self)
        let thread = Thread {
            var received = 0
            while received < producers * perProducer {
                wakeups.wait()
                tally.turns += 1
                consumer.contract.takeUntilIdle { value in
                    let producer = value / perProducer
                    XCTAssertEqual(value % perProducer, tally.next[producer], "producer \(producer) out of order", file: file, line: line)
                    tally.next[producer] += 1
                    received += 1
                }
            }
            consumed.signal()
        }
        thread.start()
        let push = push
        DispatchQueue.concurrentPerform(iterations: producers) { producer in
            for index in 0..<perProducer where push(producer * perProducer + index) {
                tally.wakeupsAsked.add(1, ordering: .relaxed)
                wakeups.signal()
            }
        }
        XCTAssertEqual(consumed.wait(timeout: .now() + 60), .success, file: file, line: line)
        XCTAssertEqual(tally.next, Array(repeating: perProducer, count: producers), file: file, line: line)
        XCTAssertTrue(isEmpty(), file: file, line: line)
        XCTAssertEqual(tally.turns, tally.wakeupsAsked.load(ordering: .relaxed), "one turn per wake-up asked, none lost", file: file, line: line)
    }
}
