import Foundation

/// A value behind an NSLock, which ThreadSanitizer understands (it cannot see Synchronization's
/// Mutex, and would report what it guards as racing).
/// @unchecked Sendable: every access to `value` holds `lock`.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
