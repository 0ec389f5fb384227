import Dispatch
@testable import Reactor
import Synchronization
import XCTest

final class SlotInboxTests: XCTestCase {
    static func contract(_ inbox: SlotInbox<Int>) -> InboxContract {
        InboxContract(push: { inbox.push($0) }, takeAll: { body in inbox.takeAll { body($0) } }, endTaking: { inbox.endTaking() },
                      isEmpty: { inbox.isEmpty })
    }

    func testOnlyAPushThatFindsTheInboxIdleAsksForAWakeUp() {
        Self.contract(SlotInbox<Int>()).checkWakeUps()
    }

    /// Enough values to cross many blocks of slots while the consumer takes.
    func testManyProducersOneConsumerLoseNothingAndKeepEachProducersOrder() {
        Self.contract(SlotInbox<Int>()).checkManyProducers(perProducer: 50_000)
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
            Self.contract(inbox).takeUntilIdle { taken.append($0) }
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
        Self.contract(inbox).takeUntilIdle { order.append($0) }
        XCTAssertEqual(order, Array(0..<110))
    }

    /// A take inside a take while a slot is claimed and not yet written: the inner take waits for
    /// it and takes everything pushed before it began, so the outer one, which began earlier, has
    /// nothing left to hand over out of order.
    func testATakeInsideATakeWaitsForASlotBeingWritten() {
        let inbox = SlotInbox<Int>()
        _ = inbox.push(1)
        _ = inbox.push(2)
        let slot = inbox.claim()
        _ = inbox.push(4)
        // @unchecked Sendable: the claim is written once, by the thread below.
        struct Pending: @unchecked Sendable { let inbox: SlotInbox<Int>; let slot: SlotInbox<Int>.Claim }
        let pending = Pending(inbox: inbox, slot: slot)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { pending.inbox.write(3, into: pending.slot) }
        var outer: [Int] = []
        var inner: [Int] = []
        inbox.takeAll { value in
            outer.append(value)
            if value == 1 { inbox.takeAll { inner.append($0) } }
        }
        XCTAssertEqual(outer, [1])
        XCTAssertEqual(inner, [2, 3, 4])
        XCTAssertTrue(inbox.endTaking())
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
}
