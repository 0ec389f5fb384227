/// Byte comparisons for the hot path, eight bytes at a time and with no call into the C library: for
/// the few bytes of a member name, a path or a media type, calling `memcmp` costs more than comparing.
enum RawBytes {
    /// Whether the `count` bytes at `a` and at `b` are the same.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        var offset = 0
        while offset + 8 <= count {
            guard a.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else {
                return false
            }
            offset += 8
        }
        while offset < count {
            guard a.load(fromByteOffset: offset, as: UInt8.self) == b.load(fromByteOffset: offset, as: UInt8.self) else { return false }
            offset += 1
        }
        return true
    }

    /// Whether `bytes` are the same as `other`.
    @inline(__always)
    static func equal(_ bytes: UnsafeRawBufferPointer, _ other: UnsafeRawBufferPointer) -> Bool {
        // An empty buffer may have no address.
        bytes.count == other.count && (bytes.isEmpty || equal(bytes.baseAddress!, other.baseAddress!, count: bytes.count))
    }

    /// Whether `bytes` are `text`'s UTF-8.
    @inline(__always)
    static func equal(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        equal(bytes, UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
