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

    @inlinable
    init(
        _ subscriber: any Subscriber<Selected>,
        queue: DispatchQueue?,
        select: @escaping (StateType) -> Selected,
        isRepeat: ((Selected, Selected) -> Bool)?
    ) {
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
        guard let queue else {
            guard let subscriber else { return false }
            subscriber.update(with: value, version: version)
            return true
        }
        guard isLive, !cancelled.load(ordering: .relaxed) else { return false }
        send(UncheckedValue(value), version: version, on: queue)
        return true
    }

    /// Calls the subscriber on its queue, unless it was removed meanwhile; while it runs, a removal
    /// of the subscriber from inside `update` takes effect at once (`SubscriberDelivery`).
    @usableFromInline
    func send(_ box: UncheckedValue<Selected>, version: UInt64, on queue: DispatchQueue) {
        queue.async {
            guard !self.cancelled.load(ordering: .acquiring), let subscriber = self.subscriber else { return }
            SubscriberDelivery.$current.withValue(self) {
                subscriber.update(with: box.value, version: version)
            }
        }
    }

    @usableFromInline
    func cancel() {
        cancelled.store(true, ordering: .releasing)
    }
}

extension Subscription: CancellableDelivery {
    func cancel(ifDeliveringTo subscriber: AnyObject) {
        if ObjectIdentifier(subscriber) == subscriberID { cancel() }
    }
}

/// A delivery running on a subscriber's own queue, which the subscriber may end from inside it.
protocol CancellableDelivery: AnyObject, Sendable {
    func cancel(ifDeliveringTo subscriber: AnyObject)
}

/// The delivery whose `update` runs on this thread, while one runs on a subscriber's own queue:
/// `Core.remove(subscriber:)` called from there stops the deliveries already sent to that queue.
/// (A task-local value outside a task is bound to the thread for the duration of `withValue`.)
enum SubscriberDelivery {
    @TaskLocal static var current: (any CancellableDelivery)?
}

/// Carries a selected value to a subscriber's queue.
/// @unchecked Sendable: a selection of a Sendable state, handed over once and never shared after.
@usableFromInline
struct UncheckedValue<Value>: @unchecked Sendable {
    @usableFromInline let value: Value
    @inlinable init(_ value: Value) { self.value = value }
}
