/// The frame opcodes of RFC 6455 §5.2. The reserved values (0x3–0x7, 0xB–0xF) have no case:
/// `WebSocketOpcode(rawValue:)` returns nil for them, and receiving one fails the connection.
public enum WebSocketOpcode: UInt8, Hashable, Sendable, CustomStringConvertible {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Control frames (close, ping, pong) have the high opcode bit set (§5.5).
    public var isControl: Bool { rawValue & 0x8 != 0 }

    public var description: String {
        switch self {
        case .continuation: "continuation"
        case .text: "text"
        case .binary: "binary"
        case .close: "close"
        case .ping: "ping"
        case .pong: "pong"
        }
    }
}

/// One frame as it is on the wire, minus masking: the encoder writes these, and tests build
/// client streams from them. The decoder does not produce frames; it streams payloads straight
/// into messages so that nothing is buffered twice.
public struct WebSocketFrame: Hashable, Sendable {
    public var fin: Bool
    /// RSV1–RSV3 as the low three bits (RSV1 = 0b100). Non-zero only with an extension.
    public var reservedBits: UInt8
    public var opcode: WebSocketOpcode
    public var payload: [UInt8]

    public init(fin: Bool = true, reservedBits: UInt8 = 0, opcode: WebSocketOpcode, payload: [UInt8] = []) {
        precondition(reservedBits & ~0b111 == 0, "only three reserved bits exist")
        self.fin = fin
        self.reservedBits = reservedBits
        self.opcode = opcode
        self.payload = payload
    }
}
