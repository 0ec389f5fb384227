import ByteWords

/// Validates UTF-8 incrementally, chunk by chunk, so a text message can be rejected at the first
/// byte that makes it invalid, even in the middle of a frame (RFC 6455 §8.1 asks to fail
/// "as soon as" invalid data is seen; Autobahn 6.4.x checks it).
///
/// Follows the well-formed byte sequences of Unicode Table 3-7: no overlong forms, no surrogates
/// (U+D800–U+DFFF), nothing above U+10FFFF. A sequence may be split across any chunks.
public struct WebSocketUTF8Validator: Hashable, Sendable {
    public enum Status: Hashable, Sendable {
        /// Everything so far is valid and ends on a code point boundary.
        case complete
        /// Everything so far is valid, but a multi-byte sequence is still open: fine between
        /// fragments, invalid at the end of a message.
        case incomplete
        /// An ill-formed sequence was seen. Final: further input does not change it.
        case invalid
    }

    // Each case names what the next byte must be. The lead byte's special cases (E0, ED, F0,
    // F4) narrow the range of the first continuation byte; that is what excludes overlongs,
    // surrogates and values above U+10FFFF without decoding anything.
    private enum NextByte: UInt8, Hashable, Sendable {
        case boundary
        case needs1          // 80–BF, then boundary
        case needs2          // 80–BF, then needs1
        case needs3          // 80–BF, then needs2
        case afterE0         // A0–BF (else overlong), then needs1
        case afterED         // 80–9F (else surrogate), then needs1
        case afterF0         // 90–BF (else overlong), then needs2
        case afterF4         // 80–8F (else > U+10FFFF), then needs2
        case invalid
    }

    private var state: NextByte = .boundary

    public init() {}

    public var status: Status {
        switch state {
        case .boundary: .complete
        case .invalid: .invalid
        default: .incomplete
        }
    }

    public mutating func reset() { state = .boundary }

    @discardableResult
    public mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Status {
        guard state != .invalid, let base = bytes.baseAddress else { return status }
        let count = bytes.count
        var i = 0
        var state = self.state
        defer { self.state = state }
        while i < count {
            if state == .boundary {
                // Text is mostly ASCII: skip it eight bytes at a time.
                i = ByteScan.firstIndex(in: base, from: i, to: count, wordStops: { $0.nonASCIILanes }, byteStops: { $0 >= 0x80 })
                if i == count { break }
            }
            state = Self.next(state, base.load(fromByteOffset: i, as: UInt8.self))
            if state == .invalid { return .invalid }
            i += 1
        }
        return state == .boundary ? .complete : .incomplete
    }

    @discardableResult
    public mutating func validate(_ bytes: [UInt8]) -> Status {
        bytes.withUnsafeBytes { validate($0) }
    }

    /// Whether `bytes` is, on its own, complete and valid UTF-8.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = WebSocketUTF8Validator()
        return validator.validate(bytes) == .complete
    }

    public static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isValid($0) }
    }

    private static func next(_ state: NextByte, _ byte: UInt8) -> NextByte {
        switch state {
        case .boundary:
            switch byte {
            case 0x00...0x7F: return .boundary
            case 0xC2...0xDF: return .needs1
            case 0xE0: return .afterE0
            case 0xE1...0xEC, 0xEE...0xEF: return .needs2
            case 0xED: return .afterED
            case 0xF0: return .afterF0
            case 0xF1...0xF3: return .needs3
            case 0xF4: return .afterF4
            // 80–BF: continuation without a lead; C0–C1: always overlong; F5–FF: beyond U+10FFFF.
            default: return .invalid
            }
        case .needs1: return (0x80...0xBF).contains(byte) ? .boundary : .invalid
        case .needs2: return (0x80...0xBF).contains(byte) ? .needs1 : .invalid
        case .needs3: return (0x80...0xBF).contains(byte) ? .needs2 : .invalid
        case .afterE0: return (0xA0...0xBF).contains(byte) ? .needs1 : .invalid
        case .afterED: return (0x80...0x9F).contains(byte) ? .needs1 : .invalid
        case .afterF0: return (0x90...0xBF).contains(byte) ? .needs2 : .invalid
        case .afterF4: return (0x80...0x8F).contains(byte) ? .needs2 : .invalid
        case .invalid: return .invalid
        }
    }
}
