import Dispatch
import Synchronization

/// Receives the current state when it subscribes, then every later state, in order.
/// A core holds its subscribers weakly: a subscriber that goes away is dropped. (While it runs a
/// batch of events fired from other threads, a core holds each subscriber it notified until the
/// batch ends: the subscriber goes away then, not in the middle of it.)
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
///
/// A weakly referenced object counts its references in a side table, so every load of the weak
/// reference and every retain of the subscriber costs two atomic operations there; with ten
/// subscribers that was most of an event's cost. So the subscription checks the weak reference once
/// per round of the core's work (`DeliveryRound`) rather than once per state: a subscriber on the
/// executor is held strongly from its first state in a round that runs a batch of jobs to the
/// round's end, and called in between with no reference counting (`updateHeld`); one on its own
/// queue is checked when its first state of the round is gathered.
///
/// @unchecked Sendable: built by the caller, then used only on the core's executor; the subscriber
/// itself is only compared by identity here and called on the queue its owner chose.
@usableFromInline
final class Subscription<StateType, Selected>: @unchecked Sendable {
    @usableFromInline weak var subscriber: (any Subscriber<Selected>)?
    /// The subscriber, held for the core's running round once it got a state in it (executor only).
    @exclusivity(unchecked) @usableFromInline var held: (any Subscriber<Selected>)?
    /// Calls `update(with:version:)` on the subscriber without retaining it: only while `held`.
    @usableFromInline let updateHeld: (Selected, UInt64) -> Void
    @usableFromInline let queue: DispatchQueue?
    @usableFromInline let select: (StateType) -> Selected
    @usableFromInline let isRepeat: ((Selected, Selected) -> Bool)?
    @usableFromInline var last: Selected?
    /// Set by a removal that takes effect at once: what was sent to `queue` and has not run is dropped.
    @usableFromInline let cancelled = Atomic<Bool>(false)
    @usableFromInline let subscriberID: ObjectIdentifier
    /// For a subscriber on its own queue: the selections of the core's running work, sent together
    /// when it ends (`DeliveryRound`). Confined to the executor, and no access to it overlaps a
    /// call out, hence @exclusivity(unchecked), as the core's own fields.
    @exclusivity(unchecked) @usableFromInline var gathered: [Delivery] = []
    /// What the core's running round owes its subscriptions when it ends, and this subscription's
    /// place in its list (executor only).
    @usableFromInline let round: DeliveryRound
    @exclusivity(unchecked) @usableFromInline var nextInRound: (any RoundDeliveries)?
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
    init<Target: Subscriber<Selected>>(
        _ subscriber: Target,
        queue: DispatchQueue?,
        select: @escaping (StateType) -> Selected,
        isRepeat: ((Selected, Selected) -> Bool)?,
        round: DeliveryRound
    ) {
        self.round = round
        self.subscriber = subscriber
        let unretained = Unmanaged.passUnretained(subscriber)
        updateHeld = { value, version in
            unretained._withUnsafeGuaranteedRef { $0.update(with: value, version: version) }
        }
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
            if held == nil {
                guard let subscriber else { return false }
                guard round.holdsSubscribers else {
                    subscriber.update(with: value, version: version)
                    return true
                }
                held = subscriber
                round.enlist(self)
            }
            updateHeld(value, version)
            return true
        }
        guard !cancelled.load(ordering: .relaxed) else { return false }
        if gathered.isEmpty {
            guard isLive else { return false }
            round.enlist(self)
        }
        gathered.append(Delivery(value, version: version))
        return true
    }

    /// At the end of a round in which it was given a state: lets go of the subscriber held for it,
    /// or sends what it gathered to its queue.
    @inlinable
    func endRound() {
        held = nil
        if queue != nil { sendGathered() }
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

/// What a round of the core's work (the jobs it runs before it lets anything out) owes its
/// subscriptions when it ends: the selections gathered for subscribers on queues of their own, sent
/// in one block to each queue, so that a burst of events costs such a subscriber one hop, not one
/// per state; and the subscribers on the executor held for the round, let go. Confined to the
/// core's executor.
@usableFromInline
final class DeliveryRound {
    /// The subscriptions given a state in this round, the latest first, linked through their
    /// `nextInRound`: a list that costs no allocation per round. Confined to the executor, and no
    /// access to it overlaps a call out: @exclusivity(unchecked), as the core's own fields, since
    /// the core reads it after every event.
    @exclusivity(unchecked) @usableFromInline var first: (any RoundDeliveries)?
    /// Whether subscribers on the executor are held for the round: when it runs a batch of jobs
    /// (those fired from other threads), where holding saves a check per state; for a round of one
    /// event it would only add to it.
    @exclusivity(unchecked) @usableFromInline var holdsSubscribers = false

    @inlinable init() {}

    @inlinable var isEmpty: Bool { first == nil }

    /// Adds `subscription`, given its first state of the round.
    @inlinable
    func enlist(_ subscription: any RoundDeliveries) {
        subscription.nextInRound = first
        first = subscription
    }

    /// Ends the round for every subscription in it. The core calls it when its work ends. The list
    /// is taken first: what letting go of a subscriber sets off (its deinit may fire) makes a round
    /// of its own.
    @inlinable
    func end() {
        var next = first
        first = nil
        while let subscription = next {
            next = subscription.nextInRound
            subscription.nextInRound = nil
            subscription.endRound()
        }
    }
}

/// A subscription as a round of the core's work sees it (`DeliveryRound`).
@usableFromInline
protocol RoundDeliveries: AnyObject {
    var nextInRound: (any RoundDeliveries)? { get set }
    func endRound()
}

extension Subscription: RoundDeliveries {}

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
