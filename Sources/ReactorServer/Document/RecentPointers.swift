import ByteWords
import Foundation

/// The pointers of the paths events were read with lately, per thread: clients fire at the same
/// paths again and again (a counter, a list, one key per player of a game), and parsing a pointer
/// costs an array and a String per token each time. Per thread, so that the loop thread (or a
/// replay) needs no lock.
///
/// A table of `slotCount` slots, each path in the slot its bytes hash to, replacing what was there:
/// a hit costs a hash of two words and one compare, whatever the number of paths in use, where a
/// list scanned in order costs a compare per path kept, and misses once more paths are in use than
/// it keeps.
final class RecentPointers {
    private static let slotCount = 256
    // @exclusivity(unchecked) on the stored properties below: one thread's own, touched by
    // `pointer(_:)` alone, which calls nothing that could reach them meanwhile; a dynamic check on
    // each access would run for every event read.
    /// The paths' UTF-8, compared as bytes: a path read from a request is never made a String
    /// while it is among these.
    @exclusivity(unchecked) private var texts = [[UInt8]](repeating: [], count: slotCount)
    /// nil for a slot that holds no path yet.
    @exclusivity(unchecked) private var pointers = [JSONPointer?](repeating: nil, count: slotCount)

    /// The pointer `text` spells, parsed once while it is among the recent ones; nil if it is none.
    static func pointer(_ text: UnsafeRawBufferPointer) -> JSONPointer? {
        withCurrent { $0.pointer(text) }
    }

    static func pointer(_ text: String) -> JSONPointer? {
        var text = text
        return text.withUTF8 { bytes in withCurrent { $0.pointer(UnsafeRawBufferPointer(bytes)) } }
    }

    /// Longer paths are parsed each time, not kept: 256 slots of megabyte paths (a client sending
    /// them, each refused) would hold a quarter of a gigabyte per thread.
    static let longestKept = 512

    private func pointer(_ text: UnsafeRawBufferPointer) -> JSONPointer? {
        guard text.count <= Self.longestKept else { return try? JSONPointer(String(decoding: text, as: UTF8.self)) }
        let slot = Self.slot(of: text)
        if let kept = pointers[slot], Self.equal(texts[slot], text) { return kept }
        guard let pointer = try? JSONPointer(String(decoding: text, as: UTF8.self)) else { return nil }
        texts[slot] = Array(text)
        pointers[slot] = pointer
        return pointer
    }

    /// The bytes of the paths this thread keeps, for tests.
    static var keptBytes: Int { withCurrent { $0.texts.reduce(0) { $0 + $1.count } } }

    /// Where `text` is kept: a hash of its length and its first and last eight bytes, which tell
    /// apart the paths a client uses side by side (`/player12`, `/player13`).
    private static func slot(of text: UnsafeRawBufferPointer) -> Int {
        let count = text.count
        var head: UInt64 = 0
        var tail: UInt64 = 0
        if count >= 8 {
            head = ByteWord(loadingFrom: text.baseAddress!, at: 0).bits
            tail = ByteWord(loadingFrom: text.baseAddress!, at: count - 8).bits
        } else {
            for index in 0 ..< count { head |= UInt64(text[index]) << UInt64(index * 8) }
        }
        let mixed = ((head &* 0x9E37_79B9_7F4A_7C15) ^ tail ^ UInt64(count)) &* 0xC2B2_AE3D_27D4_EB4F
        return Int(truncatingIfNeeded: mixed >> 56) & (slotCount - 1)
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
