import Dispatch

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
        guard isLive else { return false }
        let box = UncheckedValue(value)
        queue.async { self.subscriber?.update(with: box.value, version: version) }
        return true
    }
}

/// Carries a selected value to a subscriber's queue.
/// @unchecked Sendable: a selection of a Sendable state, handed over once and never shared after.
@usableFromInline
struct UncheckedValue<Value>: @unchecked Sendable {
    @usableFromInline let value: Value
    @inlinable init(_ value: Value) { self.value = value }
}
