import Synchronization

/// Jobs handed to an executor from any thread, taken off all together by the one thread that runs
/// them: a lock-free inbox for many producers and one consumer (a Treiber stack of retained nodes,
/// reversed when taken). `DispatchQueueExecutor` schedules one block per batch instead of one per
/// job: a producer that finds the inbox empty schedules the block that drains it.
///
/// The one unsafe construct of the library's executor, kept here: nodes travel as raw pointers to
/// retained objects. A node's `next` is written by its producer before the release that publishes
/// it, and by the consumer only after the acquire that took it, so no two threads touch it at once.
/// @unchecked Sendable: its one stored property is atomic; the pointers in it are the nodes above.
final class JobInbox: @unchecked Sendable {
    private final class Node {
        let job: @Sendable () -> Void
        var next: UnsafeMutableRawPointer?
        init(_ job: @escaping @Sendable () -> Void) { self.job = job }
    }

    private let head = Atomic<UnsafeMutableRawPointer?>(nil)

    /// Adds `job` after every job pushed before it; true when the inbox was empty, and the caller
    /// must then have `drain` run.
    func push(_ job: @escaping @Sendable () -> Void) -> Bool {
        let node = Unmanaged.passRetained(Node(job))
        var current = head.load(ordering: .relaxed)
        while true {
            node.takeUnretainedValue().next = current
            let (exchanged, original) = head.compareExchange(
                expected: current, desired: node.toOpaque(), successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { return original == nil }
            current = original
        }
    }

    /// Runs every job pushed so far, oldest first. On the consumer only, one drain at a time.
    func drain() {
        var taken = head.exchange(nil, ordering: .acquiring)
        var oldestFirst: UnsafeMutableRawPointer?
        while let pointer = taken {
            let node = Unmanaged<Node>.fromOpaque(pointer).takeUnretainedValue()
            taken = node.next
            node.next = oldestFirst
            oldestFirst = pointer
        }
        while let pointer = oldestFirst {
            let node = Unmanaged<Node>.fromOpaque(pointer).takeRetainedValue()
            oldestFirst = node.next
            node.job()
        }
    }
}
