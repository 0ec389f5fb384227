/// Byte-level helpers for the ASCII protocol elements of HTTP (names, tokens), which compare
/// case-insensitively for letters only.
enum HTTPASCII {
    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        // Not `byte | 0x20`: that would also fold '^' into '~', which are distinct token bytes.
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// `bytes` equal `lowercase` (all lowercase), ignoring ASCII case: a plain loop, for names
    /// compared on every request.
    static func caseInsensitiveEqual(_ bytes: UnsafeBufferPointer<UInt8>, lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for index in 0..<bytes.count where lowercased(bytes[index]) != expected[index] { return false }
        return true
    }

    static func caseInsensitiveEqual<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { lowercased($0) == lowercased($1) }
    }

    static func trimmingWhitespace(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isWhitespace = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isWhitespace($0) }) else { return bytes[bytes.endIndex...] }
        let last = bytes.lastIndex(where: { !isWhitespace($0) })!
        return bytes[first...last]
    }
}
