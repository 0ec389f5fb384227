import Dispatch

/// Where a core runs its jobs: one thread or serial queue, in FIFO order.
///
/// A caller already on the executor has its job run right there, with no thread hop: this is how a
/// server confines a core to its event-loop thread. Callers on other threads reach it through
/// `enqueue`, which must be safe from any thread.
public protocol CoreExecutor: AnyObject, Sendable {
    /// True when the calling thread is the executor's own.
    var isCurrent: Bool { get }

    /// Runs `job` later on the executor, after every job enqueued before it.
    func enqueue(_ job: @escaping @Sendable () -> Void)
}

/// The default executor: a private serial dispatch queue. Never the main queue, which a server does not service.
/// Jobs from other threads gather in an inbox (`AtomicInbox`), and one block on the queue runs all
/// that gathered: one hop per batch of jobs, not per job.
public final class DispatchQueueExecutor: CoreExecutor {
    public let queue: DispatchQueue
    private let key = DispatchSpecificKey<ObjectIdentifier>()
    private let inbox = AtomicInbox<@Sendable () -> Void>()

    public init(label: String = "reactor.core", qos: DispatchQoS = .userInitiated) {
        queue = DispatchQueue(label: label, qos: qos)
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    public var isCurrent: Bool {
        DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self)
    }

    public func enqueue(_ job: @escaping @Sendable () -> Void) {
        if inbox.push(job) {
            queue.async { [inbox] in inbox.takeUntilIdle { job in job() } }
        }
    }
}
