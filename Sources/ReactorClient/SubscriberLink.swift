import Dispatch
import Synchronization

/// One subscriber's link to a remote core: a weak reference, what it selects, where it is notified.
///
/// The selection is made, and repeats skipped, on the subscriber's queue, so that none of the app's
/// code runs on the remote core's own queue (where it could block the connection, or deadlock by
/// reading the remote core's state).
///
/// @unchecked Sendable: `last` and calls to `subscriber` (a weak reference, atomic to load) are confined to the serial `queue`; `isRemoved` is atomic.
final class SubscriberLink<StateType: Sendable, Selected>: @unchecked Sendable {
    private weak var subscriber: (any Subscriber<Selected>)?
    private let queue: DispatchQueue
    private let select: @Sendable (StateType) -> Selected
    private let isRepeat: ((Selected, Selected) -> Bool)?
    private var last: Selected?
    private let isRemoved = Atomic<Bool>(false)

    init(_ subscriber: any Subscriber<Selected>, queue: DispatchQueue, select: @escaping @Sendable (StateType) -> Selected,
         isRepeat: ((Selected, Selected) -> Bool)?) {
        self.subscriber = subscriber
        self.queue = queue
        self.select = select
        self.isRepeat = isRepeat
    }

    var isLive: Bool { subscriber != nil && !isRemoved.load(ordering: .acquiring) }

    func deliver(_ state: StateType, version: UInt64) {
        queue.async { [self] in
            // Removed after this delivery was queued: `remove(subscriber:)` promises nothing more.
            guard !isRemoved.load(ordering: .acquiring), let subscriber else { return }
            let value = select(state)
            if let isRepeat {
                if let last, isRepeat(last, value) { return }
                last = value
            }
            subscriber.update(with: value, version: version)
        }
    }

    func cancel() {
        isRemoved.store(true, ordering: .releasing)
    }
}
