/// RFC 9112 §3.2: a server answers 400 to a request whose Host is not a valid `uri-host [":" port]`
/// (RFC 3986 §3.2.2): a proxy and reactord must not disagree on which host a request is for.
enum HTTPHostSyntax {
    /// Whether `value` is a host, optionally with a port: an IP literal in brackets, or a name or
    /// IPv4 address of unreserved characters, percent escapes and sub-delimiters. Empty is valid
    /// (a request whose target names no authority).
    static func isValid(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = value.count
        if count > 0, value[0] == UInt8(ascii: "[") {
            index = 1
            while index < count, value[index] != UInt8(ascii: "]") {
                guard isLiteralByte(value[index]) else { return false }
                index += 1
            }
            guard index < count, index > 1 else { return false }
            index += 1
        } else {
            while index < count, value[index] != UInt8(ascii: ":") {
                guard isNameByte(value[index]) else { return false }
                index += 1
            }
        }
        guard index < count else { return true }
        guard value[index] == UInt8(ascii: ":") else { return false }
        index += 1
        while index < count {
            guard value[index] >= UInt8(ascii: "0"), value[index] <= UInt8(ascii: "9") else { return false }
            index += 1
        }
        return true
    }

    /// unreserved / pct-encoded (its "%"; the hex digits are unreserved) / sub-delims.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"),
             UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

    /// Inside brackets: an IPv6 address (hex digits, colons, dots) or an IPvFuture (`v1.x`, which
    /// also allows unreserved and sub-delimiter characters).
    private static func isLiteralByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ":") || (byte != UInt8(ascii: "%") && isNameByte(byte))
    }
}
