import Foundation

@testable import ReactorClient

/// A subscriber written as for a local core: it implements `update(with:)` only.
/// @unchecked Sendable: `received` is guarded by `lock`.
final class PlainSubscriber<Value: Sendable>: Subscriber, @unchecked Sendable {
    private let lock = NSLock()
    private var received: [Value] = []
    private let onUpdate: @Sendable ([Value]) -> Void

    init(onUpdate: @escaping @Sendable ([Value]) -> Void = { _ in }) {
        self.onUpdate = onUpdate
    }

    var values: [Value] { lock.withLock { received } }

    func update(with state: Value) {
        let values = lock.withLock {
            received.append(state)
            return received
        }
        onUpdate(values)
    }
}
