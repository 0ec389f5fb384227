import ByteWords

/// Byte-level helpers for the ASCII protocol elements of HTTP (names, tokens), which compare
/// case-insensitively for letters only.
enum HTTPASCII {
    /// RFC 9110 §5.6.2 tchar: what methods and field names are made of.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// The value of a hexadecimal digit (either case): percent escapes, chunk sizes.
    static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

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

    /// `bytes` equal `name`, a lowercase field name of letters and `-`, ignoring ASCII case: eight
    /// bytes at a time, each with its 0x20 bit set. That lowercases a letter and keeps `-`; the only
    /// other bytes it could match are control characters (CR to `-`), which no field name holds.
    /// Inlined: with the name's length known, the loops unroll into a few compares.
    @inline(__always)
    static func isFieldName(_ bytes: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        guard bytes.count == count, let start = bytes.baseAddress else { return false }
        return ByteScan.equal(UnsafeRawPointer(start), UnsafeRawPointer(name.utf8Start), count: count, settingBits: 0x20)
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
