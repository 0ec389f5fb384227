import Foundation

/// The pointers of the last few distinct paths events were read with, per thread: clients fire at
/// the same paths again and again (a counter, a list), and parsing a pointer costs an array and a
/// String per token each time. Per thread, so that the loop thread (or a replay) needs no lock.
final class RecentPointers {
    private static let capacity = 8
    private var texts: [String] = []
    private var pointers: [JSONPointer] = []
    private var next = 0

    /// The pointer `text` spells, parsed once while it is among the recent ones; nil if it is none.
    static func pointer(_ text: String) -> JSONPointer? {
        current.pointer(text)
    }

    private func pointer(_ text: String) -> JSONPointer? {
        for index in texts.indices where texts[index] == text { return pointers[index] }
        guard let pointer = try? JSONPointer(text) else { return nil }
        if texts.count < Self.capacity {
            texts.append(text)
            pointers.append(pointer)
        } else {
            texts[next] = text
            pointers[next] = pointer
            next = (next + 1) % Self.capacity
        }
        return pointer
    }

    /// This thread's cache, made on first use and released when the thread ends.
    private static var current: RecentPointers {
        if let existing = pthread_getspecific(key) {
            return Unmanaged<RecentPointers>.fromOpaque(existing).takeUnretainedValue()
        }
        let made = RecentPointers()
        pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque())
        return made
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { cache in
            // Optional in Glibc's signature, not in Darwin's.
            guard let cache = cache as UnsafeMutableRawPointer? else { return }
            Unmanaged<RecentPointers>.fromOpaque(cache).release()
        }
        return key
    }()
}
