/// Bytes as lowercase hexadecimal digits, two per byte, and back: the SHA-1 fingerprints and keys
/// of idempotency answers, which every request that carries a key computes.
enum HexDigits {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends the two digits of each byte of `bytes` to `output`.
    static func append<Bytes: Sequence<UInt8>>(_ bytes: Bytes, to output: inout [UInt8]) {
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0f)])
        }
    }

    static func lowercase<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        append(bytes, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// The value of a lowercase digit; nil for anything else.
    static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
