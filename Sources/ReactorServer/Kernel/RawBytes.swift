import ByteWords

/// Byte comparisons for the hot path (member names, paths, media types), on `ByteScan.equal`.
enum RawBytes {
    /// Whether the `count` bytes at `a` and at `b` are the same.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        ByteScan.equal(a, b, count: count)
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
