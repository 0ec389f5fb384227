/// Writes server frames (RFC 6455 §5.2): unmasked, as §5.1 requires of servers, with the
/// shortest length encoding.
///
/// A broadcast is encoded once with `frame(opcode:payload:)` and the same bytes are then
/// written to every subscriber: server frames carry no per-connection state (no mask), so one
/// buffer serves 10,000 connections.
public enum WebSocketFrameEncoder {
    /// Control frames carry at most this many payload bytes (§5.5).
    public static let maxControlPayload = 125
    /// A close reason fits after the two code bytes of a control frame's payload.
    public static let maxCloseReason = maxControlPayload - 2

    /// Bytes a frame header takes for a payload of `count` bytes.
    public static func headerLength(payloadCount count: Int) -> Int {
        switch count {
        case ..<126: 2
        case ...0xFFFF: 4
        default: 10
        }
    }

    public static func appendHeader(
        fin: Bool = true, reservedBits: UInt8 = 0, opcode: WebSocketOpcode, payloadCount: Int,
        into buffer: inout [UInt8]
    ) {
        precondition(payloadCount >= 0 && reservedBits & ~0b111 == 0)
        precondition(!opcode.isControl || (fin && payloadCount <= maxControlPayload),
                     "control frames are unfragmented and carry at most 125 bytes")
        buffer.append((fin ? 0x80 : 0) | reservedBits << 4 | opcode.rawValue)
        switch payloadCount {
        case ..<126:
            buffer.append(UInt8(payloadCount))
        case ...0xFFFF:
            buffer.append(126)
            buffer.append(UInt8(truncatingIfNeeded: payloadCount >> 8))
            buffer.append(UInt8(truncatingIfNeeded: payloadCount))
        default:
            buffer.append(127)
            let length = UInt64(payloadCount)
            for shift in stride(from: 56, through: 0, by: -8) {
                buffer.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
            }
        }
    }

    public static func append(
        opcode: WebSocketOpcode, fin: Bool = true, payload: UnsafeRawBufferPointer, into buffer: inout [UInt8]
    ) {
        buffer.reserveCapacity(buffer.count + headerLength(payloadCount: payload.count) + payload.count)
        appendHeader(fin: fin, opcode: opcode, payloadCount: payload.count, into: &buffer)
        buffer.append(contentsOf: payload)
    }

    /// A data frame carrying `payload` compressed for permessage-deflate (RSV1 set, RFC 7692 §6),
    /// or plain when compressing does not make it smaller.
    static func deflatedFrame(opcode: WebSocketOpcode, payload: [UInt8], compressor: MessageCompressor) -> [UInt8] {
        let compressed = payload.withUnsafeBytes { compressor.deflate($0) }
        guard compressed.count < payload.count else { return frame(opcode: opcode, payload: payload) }
        var frame: [UInt8] = []
        frame.reserveCapacity(headerLength(payloadCount: compressed.count) + compressed.count)
        appendHeader(reservedBits: 0b100, opcode: opcode, payloadCount: compressed.count, into: &frame)
        frame.append(contentsOf: compressed)
        return frame
    }

    public static func append(
        opcode: WebSocketOpcode, fin: Bool = true, payload: [UInt8], into buffer: inout [UInt8]
    ) {
        payload.withUnsafeBytes { append(opcode: opcode, fin: fin, payload: $0, into: &buffer) }
    }

    public static func append(_ frame: WebSocketFrame, into buffer: inout [UInt8]) {
        buffer.reserveCapacity(buffer.count + headerLength(payloadCount: frame.payload.count) + frame.payload.count)
        appendHeader(fin: frame.fin, reservedBits: frame.reservedBits, opcode: frame.opcode,
                     payloadCount: frame.payload.count, into: &buffer)
        buffer.append(contentsOf: frame.payload)
    }

    public static func appendText(_ text: String, into buffer: inout [UInt8]) {
        var text = text
        text.withUTF8 { append(opcode: .text, payload: UnsafeRawBufferPointer($0), into: &buffer) }
    }

    /// A close frame; `code` nil sends an empty body (then `reason` must be empty). The reason
    /// is cut to 123 bytes, at a character boundary so it stays valid UTF-8.
    public static func appendClose(code: WebSocketCloseCode?, reason: String = "", into buffer: inout [UInt8]) {
        guard let code else {
            precondition(reason.isEmpty, "a close reason needs a close code")
            appendHeader(opcode: .close, payloadCount: 0, into: &buffer)
            return
        }
        // §7.4.1: these only report conditions locally and must never be sent.
        precondition(![1005, 1006, 1015].contains(code.rawValue), "close code \(code.rawValue) must not be sent")
        let reason = truncatedUTF8(reason, maxBytes: maxCloseReason)
        appendHeader(opcode: .close, payloadCount: 2 + reason.count, into: &buffer)
        buffer.append(UInt8(truncatingIfNeeded: code.rawValue >> 8))
        buffer.append(UInt8(truncatingIfNeeded: code.rawValue))
        buffer.append(contentsOf: reason)
    }

    /// A complete unfragmented frame as a standalone buffer, to be sent unchanged on many
    /// connections.
    public static func frame(opcode: WebSocketOpcode, payload: [UInt8]) -> [UInt8] {
        var buffer: [UInt8] = []
        append(opcode: opcode, payload: payload, into: &buffer)
        return buffer
    }

    public static func frame(text: String) -> [UInt8] {
        var buffer: [UInt8] = []
        appendText(text, into: &buffer)
        return buffer
    }

    public static func closeFrame(code: WebSocketCloseCode?, reason: String = "") -> [UInt8] {
        var buffer: [UInt8] = []
        appendClose(code: code, reason: reason, into: &buffer)
        return buffer
    }

    // Cuts before the first byte of the sequence that would not fit, so none is split.
    static func truncatedUTF8(_ string: String, maxBytes: Int) -> [UInt8] {
        let bytes = Array(string.utf8)
        guard bytes.count > maxBytes else { return bytes }
        var end = maxBytes
        while end > 0, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(bytes[..<end])
    }
}
