import Synchronization

/// Values handed from any thread to the one thread that consumes them, taken in batches: a
/// lock-free inbox for many producers and one consumer (a Treiber stack of retained nodes, reversed
/// when taken). Only a producer that finds the inbox idle wakes the consumer; while the consumer
/// takes and works through batches, pushes only add to what it will take next, so a burst costs one
/// wake-up, not one per value. The core gathers the jobs fired from other threads here, its default
/// executor the blocks it is given, and a subscriber on its own queue the states sent to it.
///
/// The head is nil when idle, `taking` while the consumer works (both end a list of nodes pushed
/// on top of them), or the newest node. The consumer repeats `takeAll` until `endTaking` finds
/// nothing new and makes the inbox idle again.
///
/// The library's one use of raw pointers between threads, kept here: nodes travel as pointers to
/// retained objects. A node's `next` is written by its producer before the release that publishes
/// it, and by the consumer only after the acquire that took it, so no two threads touch it at once.
/// @unchecked Sendable: its one stored property is atomic; the pointers in it are the nodes above.
@usableFromInline
final class AtomicInbox<Element: Sendable>: @unchecked Sendable {
    @usableFromInline
    final class Node {
        @usableFromInline let element: Element
        /// Never touched by two threads at once (above): @exclusivity(unchecked).
        @exclusivity(unchecked) @usableFromInline var next: UnsafeMutableRawPointer?
        @inlinable init(_ element: Element) { self.element = element }
    }

    @usableFromInline let head = Atomic<UnsafeMutableRawPointer?>(nil)

    @inlinable init() {}

    /// Stands at the end of the list while the consumer takes: no node has this address.
    @inlinable static var taking: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }

    /// True when nothing was pushed since the last `takeAll`.
    @inlinable var isEmpty: Bool {
        let newest = head.load(ordering: .acquiring)
        return newest == nil || newest == Self.taking
    }

    /// Adds `element` after every element pushed before it; true when the inbox was idle, and the
    /// caller must then wake the consumer.
    @inlinable
    func push(_ element: Element) -> Bool {
        let node = Unmanaged.passRetained(Node(element))
        var current = head.load(ordering: .relaxed)
        while true {
            node.takeUnretainedValue().next = current
            let (exchanged, original) = head.compareExchange(
                expected: current, desired: node.toOpaque(), successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { return original == nil }
            current = original
        }
    }

    /// Hands every element pushed so far to `body`, oldest first, and leaves the inbox taking: pushes
    /// wake nobody until `endTaking`. On the consumer only; a consumer woken by a push, or one that
    /// took, owes an `endTaking`.
    @inlinable
    func takeAll(_ body: (Element) -> Void) {
        var taken = head.exchange(Self.taking, ordering: .acquiring)
        var oldestFirst: UnsafeMutableRawPointer?
        while let pointer = taken, pointer != Self.taking {
            let node = Unmanaged<Node>.fromOpaque(pointer).takeUnretainedValue()
            taken = node.next
            node.next = oldestFirst
            oldestFirst = pointer
        }
        while let pointer = oldestFirst {
            let node = Unmanaged<Node>.fromOpaque(pointer).takeRetainedValue()
            oldestFirst = node.next
            body(node.element)
        }
    }

    /// Makes the inbox idle if nothing was pushed since `takeAll`, and returns true; returns false,
    /// still taking, when something was: take it.
    @inlinable
    func endTaking() -> Bool {
        head.compareExchange(expected: Self.taking, desired: nil, successOrdering: .relaxed, failureOrdering: .relaxed).exchanged
    }

    /// The consumer's turn, when woken: hands everything pushed to `body`, batch after batch, oldest
    /// first, until none is left and the inbox is idle.
    @inlinable
    func takeUntilIdle(_ body: (Element) -> Void) {
        repeat { takeAll(body) } while !endTaking()
    }
}
