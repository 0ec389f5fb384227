import Dispatch
import Synchronization

/// Receives the current state when it subscribes, then every later state, in order.
/// A core holds its subscribers weakly: a subscriber that goes away is dropped.
public protocol Subscriber<StateType>: AnyObject {
    associatedtype StateType

    func update(with state: StateType)

    /// As `update(with:)`, with the version of the state. The default forwards to `update(with:)`.
    func update(with state: StateType, version: UInt64)
}

extension Subscriber {
    public func update(with state: StateType, version: UInt64) {
        update(with: state)
    }
}

/// One subscriber's link to a core: a weak reference, what it selects, where it is notified.
/// @unchecked Sendable: built by the caller, then used only on the core's executor; the subscriber
/// itself is only compared by identity here and called on the queue its owner chose.
@usableFromInline
final class Subscription<StateType, Selected>: @unchecked Sendable {
    @usableFromInline weak var subscriber: (any Subscriber<Selected>)?
    @usableFromInline let queue: DispatchQueue?
    @usableFromInline let select: (StateType) -> Selected
    @usableFromInline let isRepeat: ((Selected, Selected) -> Bool)?
    @usableFromInline var last: Selected?
    /// Set by a removal that takes effect at once: what was sent to `queue` and has not run is dropped.
    @usableFromInline let cancelled = Atomic<Bool>(false)
    @usableFromInline let subscriberID: ObjectIdentifier
    /// For a subscriber on its own queue: the selections of the core's running work, sent together
    /// when it ends (`QueuedDeliveries`). Confined to the executor, and no access to it overlaps a
    /// call out, hence @exclusivity(unchecked), as the core's own fields.
    @exclusivity(unchecked) @usableFromInline var gathered: [Delivery] = []
    /// The core's list of subscriptions with selections gathered.
    @usableFromInline let queuedDeliveries: QueuedDeliveries
    /// The batches sent to `queue` and not yet delivered: one block on the queue delivers all that
    /// gathered, one hop per batch of states rather than per state.
    @usableFromInline let outbox = AtomicInbox<[Delivery]>()

    /// @unchecked Sendable: a selection of a Sendable state, handed over once and never shared after.
    @usableFromInline
    struct Delivery: @unchecked Sendable {
        @usableFromInline let value: Selected
        @usableFromInline let version: UInt64
        @inlinable init(_ value: Selected, version: UInt64) {
            self.value = value
            self.version = version
        }
    }

    @inlinable
    init(
        _ subscriber: any Subscriber<Selected>,
        queue: DispatchQueue?,
        select: @escaping (StateType) -> Selected,
        isRepeat: ((Selected, Selected) -> Bool)?,
        queuedDeliveries: QueuedDeliveries
    ) {
        self.queuedDeliveries = queuedDeliveries
        self.subscriber = subscriber
        self.queue = queue
        self.select = select
        self.isRepeat = isRepeat
        subscriberID = ObjectIdentifier(subscriber)
    }

    @inlinable var isLive: Bool { subscriber != nil }

    /// Delivers the selection of `state` on `queue`, or right here on the core's executor when
    /// `queue` is nil, unless it repeats the last one. Returns false once the subscriber has gone away.
    @inlinable
    func deliver(_ state: StateType, version: UInt64) -> Bool {
        let value = select(state)
        if let isRepeat {
            if let last, isRepeat(last, value) { return isLive }
            last = value
        }
        guard queue != nil else {
            guard let subscriber else { return false }
            subscriber.update(with: value, version: version)
            return true
        }
        guard isLive, !cancelled.load(ordering: .relaxed) else { return false }
        if gathered.isEmpty { queuedDeliveries.waiting.append(self) }
        gathered.append(Delivery(value, version: version))
        return true
    }

    /// Sends what was gathered to `queue`, waking it if it was idle. On the executor.
    @inlinable
    func sendGathered() {
        guard let queue else { return }
        let batch = gathered
        gathered = []
        if outbox.push(batch) {
            queue.async { self.deliverSent() }
        }
    }

    /// On `queue`: calls the subscriber with every selection sent so far, in order, unless it was
    /// removed meanwhile; while they run, a removal of the subscriber from inside `update` takes
    /// effect at once (`SubscriberDelivery`), and the rest of the batch is dropped.
    @inlinable
    func deliverSent() {
        guard let subscriber else {
            outbox.takeUntilIdle { _ in }
            return
        }
        SubscriberDelivery.during(self) {
            outbox.takeUntilIdle { batch in
                for delivery in batch {
                    guard !cancelled.load(ordering: .acquiring) else { return }
                    subscriber.update(with: delivery.value, version: delivery.version)
                }
            }
        }
    }

    @usableFromInline
    func cancel() {
        cancelled.store(true, ordering: .releasing)
    }
}

extension Subscription: CancellableDelivery {
    @usableFromInline
    func cancel(ifDeliveringTo subscriber: AnyObject) {
        if ObjectIdentifier(subscriber) == subscriberID { cancel() }
    }
}

/// The subscriptions on queues of their own that were given selections during the core's running
/// work. Each gets its selections in one block on its queue when the work ends, so that a burst of
/// events costs a subscriber one hop, not one per state. Confined to the core's executor.
@usableFromInline
final class QueuedDeliveries {
    /// Confined to the executor, and no access to it overlaps a call out: @exclusivity(unchecked),
    /// as the core's own fields, since the core reads it after every event.
    @exclusivity(unchecked) @usableFromInline var waiting: [any GatheredDeliveries] = []

    @inlinable init() {}

    /// Sends every subscription's gathered selections to its queue. The core calls it when its work ends.
    @inlinable
    func send() {
        let sending = waiting
        waiting = []
        for subscription in sending { subscription.sendGathered() }
    }
}

/// A subscription whose selections gather during the core's work (`QueuedDeliveries`).
@usableFromInline
protocol GatheredDeliveries: AnyObject {
    func sendGathered()
}

extension Subscription: GatheredDeliveries {}

/// A delivery running on a subscriber's own queue, which the subscriber may end from inside it.
@usableFromInline
protocol CancellableDelivery: AnyObject, Sendable {
    func cancel(ifDeliveringTo subscriber: AnyObject)
}

/// The delivery whose `update` runs on this thread, while one runs on a subscriber's own queue:
/// `Core.remove(subscriber:)` called from there stops the deliveries already sent to that queue.
/// (A task-local value outside a task is bound to the thread for the duration of `withValue`.)
@usableFromInline
enum SubscriberDelivery {
    @TaskLocal static var current: (any CancellableDelivery)?

    /// Runs `body` as `delivery`'s.
    @usableFromInline
    static func during(_ delivery: any CancellableDelivery, _ body: () -> Void) {
        $current.withValue(delivery, operation: body)
    }
}
