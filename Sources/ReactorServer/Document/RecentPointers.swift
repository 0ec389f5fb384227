import Foundation

/// The pointers of the last few distinct paths events were read with, per thread: clients fire at
/// the same paths again and again (a counter, a list), and parsing a pointer costs an array and a
/// String per token each time. Per thread, so that the loop thread (or a replay) needs no lock.
final class RecentPointers {
    private static let capacity = 8
    // @exclusivity(unchecked) on the stored properties below: one thread's own, touched by
    // `pointer(_:)` alone, which calls nothing that could reach them meanwhile; a dynamic check on
    // each access would run for every event read.
    /// The paths' UTF-8, compared as bytes: a path read from a request is never made a String
    /// while it is among these.
    @exclusivity(unchecked) private var texts: [[UInt8]] = []
    @exclusivity(unchecked) private var pointers: [JSONPointer] = []
    @exclusivity(unchecked) private var next = 0

    /// The pointer `text` spells, parsed once while it is among the recent ones; nil if it is none.
    static func pointer(_ text: UnsafeRawBufferPointer) -> JSONPointer? {
        withCurrent { $0.pointer(text) }
    }

    static func pointer(_ text: String) -> JSONPointer? {
        var text = text
        return text.withUTF8 { bytes in withCurrent { $0.pointer(UnsafeRawBufferPointer(bytes)) } }
    }

    private func pointer(_ text: UnsafeRawBufferPointer) -> JSONPointer? {
        for index in texts.indices where Self.equal(texts[index], text) { return pointers[index] }
        guard let pointer = try? JSONPointer(String(decoding: text, as: UTF8.self)) else { return nil }
        if texts.count < Self.capacity {
            texts.append(Array(text))
            pointers.append(pointer)
        } else {
            texts[next] = Array(text)
            pointers[next] = pointer
            next = (next + 1) % Self.capacity
        }
        return pointer
    }

    private static func equal(_ stored: [UInt8], _ text: UnsafeRawBufferPointer) -> Bool {
        stored.withUnsafeBytes { RawBytes.equal($0, text) }
    }

    /// `body` with this thread's cache, made on first use and released when the thread ends. Lent
    /// unretained: the thread's key holds it.
    private static func withCurrent<Result>(_ body: (RecentPointers) -> Result) -> Result {
        if let existing = pthread_getspecific(key) {
            return Unmanaged<RecentPointers>.fromOpaque(existing).withBorrowed(body)
        }
        let made = RecentPointers()
        pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque())
        return body(made)
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
