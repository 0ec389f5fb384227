import Foundation

/// A value behind a lock, for the few places where threads meet (a loop's inbox).
///
/// NSLock rather than Synchronization's Mutex: NSLock is a pthread mutex, whose locking
/// ThreadSanitizer sees; Mutex's futex it cannot see, and it reports the guarded value as a race.
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
