/// Percent-decoding for the parts of a request-target (RFC 3986 §2.1).
public enum HTTPPercentDecoding {
    /// Whether every `%` in `target` starts a `%XX` escape (RFC 3986 §2.1). A request whose target
    /// has another is refused when its head is read, so that `%2` and `%zz` are both a 400 rather
    /// than text some handler takes literally.
    static func escapesAreWellFormed(_ target: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < target.count {
            if target[index] == UInt8(ascii: "%") {
                guard index + 2 < target.count, HTTPASCII.hexDigitValue(target[index + 1]) != nil, HTTPASCII.hexDigitValue(target[index + 2]) != nil else { return false }
                index += 3
            } else {
                index += 1
            }
        }
        return true
    }

    /// Whether what a target with well-formed escapes spells, once they are decoded, is UTF-8: a
    /// request whose is not is refused when its head is read, rather than have a handler take a
    /// parameter with U+FFFD in place of its bytes.
    static func decodesToUTF8(_ target: UnsafeBufferPointer<UInt8>) -> Bool {
        guard target.contains(where: { $0 == UInt8(ascii: "%") || $0 >= 0x80 }) else { return true }
        return decodedEscapes(target).flatMap { String(validating: $0, as: UTF8.self) } != nil
    }

    /// Decodes `%XX` escapes (and `+` as space for form-encoded queries). A malformed escape is kept
    /// literally (a request's target has none: `escapesAreWellFormed`). Invalid UTF-8 after
    /// decoding becomes U+FFFD.
    public static func decode(_ text: Substring, plusAsSpace: Bool) -> String {
        let utf8 = text.utf8
        guard utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"),
                let high = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex), high != utf8.endIndex,
                let low = utf8.index(high, offsetBy: 1, limitedBy: utf8.endIndex), low != utf8.endIndex,
                let h = HTTPASCII.hexDigitValue(utf8[high]), let l = HTTPASCII.hexDigitValue(utf8[low])
            {
                decoded.append(h << 4 | l)
                index = utf8.index(after: low)
                continue
            }
            decoded.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index = utf8.index(after: index)
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    /// `path` with its escapes of unreserved characters decoded (RFC 3986 §6.2.2.2: `/%73tate` is
    /// `/state`), the others kept as they are (`%2F` is not a `/`); nil when it has none of those.
    /// For routing a path that matched no route as sent.
    static func decodingUnreserved(_ path: Substring) -> Substring? {
        let bytes = Array(path.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = HTTPASCII.hexDigitValue(bytes[index + 1]), let low = HTTPASCII.hexDigitValue(bytes[index + 2]), isUnreserved(high << 4 | low) {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return decoded.count == bytes.count ? nil : Substring(decoding: decoded, as: UTF8.self)
    }

    /// ALPHA / DIGIT / `-` / `.` / `_` / `~` (RFC 3986 §2.3): the same character escaped or not.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// Decodes `%XX` escapes, or nil when an escape is malformed or the bytes decoded are not
    /// UTF-8: for credentials in a URL, which must be taken exactly or not at all.
    static func decodeStrictly(_ text: Substring) -> String? {
        decodedEscapes(text.utf8).flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// The bytes `bytes` spell once their `%XX` escapes are decoded, or nil when an escape is malformed.
    private static func decodedEscapes(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var rest = bytes[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                decoded.append(byte)
                continue
            }
            guard let high = rest.popFirst().flatMap(HTTPASCII.hexDigitValue), let low = rest.popFirst().flatMap(HTTPASCII.hexDigitValue) else { return nil }
            decoded.append(high << 4 | low)
        }
        return decoded
    }
}
