import CUV

/// One WebSocket subscriber: a minimal RFC 6455 client. Opening handshake with a fixed key, server
/// frames parsed (unmasked; 7-, 16- and 64-bit lengths; fragmented messages joined), pings answered
/// with masked pongs, a close answered with a close. Each text message's `"type"` and `"version"`
/// go to the bench.
final class Subscriber: ClientSocket {
    enum Phase { case connecting, handshaking, open, closed }

    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    /// base64(SHA-1(key + the RFC's GUID)) for the fixed key (RFC 6455 §1.3's own example).
    static let expectedAccept = Array("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".utf8)
    static let headEnd = Array("\r\n\r\n".utf8)
    static let versionKey = Array("\"version\":".utf8)
    static let typeKey = Array("\"type\":\"".utf8)
    static let mask: [UInt8] = [0x5a, 0x17, 0xc3, 0x8e]
    static let deflateAgreed = Array("Sec-WebSocket-Extensions: permessage-deflate".utf8)

    let index: Int
    var phase = Phase.connecting
    /// Bytes of an incomplete handshake response or frame, kept until the rest arrives.
    private var pending: [UInt8] = []
    /// A fragmented message being joined.
    private var fragments: [UInt8] = []
    private var fragmentOpcode: UInt8 = 0

    /// Inflates this subscriber's compressed messages, its window kept from one to the next as the
    /// server may refer back to them (made at the first).
    private var inflater: MessageInflater?

    /// What the bench tracks for this subscriber.
    var hasSnapshot = false
    var lastVersion: UInt64 = 0

    init(bench: Bench, index: Int) {
        self.index = index
        super.init(bench: bench)
    }

    func start() {
        connect(port: bench.options.port)
    }

    override func didConnect(status: Int32) {
        guard status == 0 else {
            phase = .closed
            close()
            bench.subscriberFailed(self, reason: "connect: \(String(cString: uv_err_name(status)))")
            return
        }
        phase = .handshaking
        let request = "GET /subscribe HTTP/1.1\r\nHost: 127.0.0.1:\(bench.options.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 13\r\n"
            + (bench.options.deflate ? "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" : "") + "\r\n"
        write(Array(request.utf8))
    }

    override func didEnd(error: String?) {
        guard phase != .closed else { return }
        let wasOpen = phase == .open
        phase = .closed
        close()
        if wasOpen {
            bench.subscriberClosed(self, reason: error ?? "the server closed the connection")
        } else {
            bench.subscriberFailed(self, reason: error ?? "the server closed the connection during the handshake")
        }
    }

    override func didRead(_ bytes: UnsafeRawBufferPointer) {
        if pending.isEmpty {
            let used = consume(bytes)
            if used < bytes.count, phase != .closed { pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...])) }
        } else {
            pending.append(contentsOf: bytes)
            let kept = pending
            pending = []
            let used = kept.withUnsafeBytes { consume($0) }
            if used < kept.count, phase != .closed { pending = Array(kept[used...]) }
        }
    }

    /// Handles what `bytes` holds whole; returns how many bytes that was.
    private func consume(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        if phase == .handshaking {
            guard let end = find(Self.headEnd, in: bytes) else { return 0 }
            let head = UnsafeRawBufferPointer(rebasing: bytes[..<end])
            let statusOK = head.count > 12 && head.starts(with: "HTTP/1.1 101".utf8)
            let deflateAgreed = find(Self.deflateAgreed, in: head) != nil
            guard statusOK, find(Self.expectedAccept, in: head) != nil, deflateAgreed == bench.options.deflate else {
                let line = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self)
                phase = .closed
                close()
                bench.subscriberFailed(self, reason: "handshake refused: \(line)")
                return bytes.count
            }
            phase = .open
            offset = end + 4
        }
        while phase == .open {
            let available = bytes.count - offset
            guard available >= 2 else { break }
            let b0 = bytes[offset], b1 = bytes[offset + 1]
            var headerLength = 2
            var length = UInt64(b1 & 0x7f)
            if length == 126 {
                guard available >= 4 else { break }
                length = UInt64(bytes[offset + 2]) << 8 | UInt64(bytes[offset + 3])
                headerLength = 4
            } else if length == 127 {
                guard available >= 10 else { break }
                length = 0
                for i in 0..<8 { length = length << 8 | UInt64(bytes[offset + 2 + i]) }
                headerLength = 10
            }
            if b1 & 0x80 != 0 {
                // A server must not mask (RFC 6455 §5.1): the client must fail the connection.
                bench.protocolError(self, "masked frame from the server")
                failConnection(code: 1002)
                return bytes.count
            }
            guard UInt64(available - headerLength) >= length else { break }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + headerLength)..<(offset + headerLength + Int(length))])
            offset += headerLength + Int(length)
            bench.wireBytes += headerLength + Int(length)
            if b0 & 0x40 != 0 {
                // RSV1: a permessage-deflate message, never fragmented by this server.
                if inflater == nil { inflater = MessageInflater() }
                guard bench.options.deflate, b0 & 0x80 != 0, let message = inflater!.inflate(payload) else {
                    bench.protocolError(self, "a compressed frame that does not inflate")
                    failConnection(code: 1002)
                    return bytes.count
                }
                message.withUnsafeBytes { frame(fin: true, opcode: b0 & 0x0f, payload: $0) }
                continue
            }
            frame(fin: b0 & 0x80 != 0, opcode: b0 & 0x0f, payload: payload)
        }
        return phase == .closed ? bytes.count : offset
    }

    private func frame(fin: Bool, opcode: UInt8, payload: UnsafeRawBufferPointer) {
        switch opcode {
        case 0x1, 0x2:
            if fin {
                message(opcode: opcode, payload)
            } else {
                fragmentOpcode = opcode
                fragments = Array(payload)
            }
        case 0x0:
            fragments.append(contentsOf: payload)
            if fin {
                let whole = fragments
                fragments = []
                whole.withUnsafeBytes { message(opcode: fragmentOpcode, $0) }
            }
        case 0x9:
            bench.pings += 1
            write(Self.maskedFrame(opcode: 0xA, payload: Array(payload)))
        case 0xA:
            break
        case 0x8:
            let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
            let reason = payload.count > 2 ? String(decoding: payload[2...], as: UTF8.self) : ""
            write(Self.maskedFrame(opcode: 0x8, payload: payload.count >= 2 ? Array(payload[0..<2]) : []))
            phase = .closed
            close()
            bench.subscriberClosed(self, reason: "close frame \(code) \(reason)")
        default:
            bench.protocolError(self, "unknown opcode \(opcode)")
            failConnection(code: 1002)
        }
    }

    private func message(opcode: UInt8, _ payload: UnsafeRawBufferPointer) {
        guard opcode == 0x1 else {
            bench.protocolError(self, "binary message")
            return
        }
        // {"type":"patch","version":N,...}: the first "type" and "version" are the top-level ones
        // (both servers write them before the state or the ops).
        guard let typeAt = find(Self.typeKey, in: payload),
              let versionAt = find(Self.versionKey, in: payload),
              let version = decimal(in: payload, at: versionAt + Self.versionKey.count) else {
            bench.protocolError(self, "message without type or version: \(String(decoding: payload.prefix(120), as: UTF8.self))")
            return
        }
        let start = typeAt + Self.typeKey.count
        let kind: Bench.MessageKind
        if UnsafeRawBufferPointer(rebasing: payload[start...]).starts(with: "patch\"".utf8) {
            kind = .patch
        } else if UnsafeRawBufferPointer(rebasing: payload[start...]).starts(with: "snapshot\"".utf8) {
            kind = .snapshot
        } else {
            kind = .other
        }
        bench.received(kind, version: version, by: self)
    }

    private func failConnection(code: UInt16) {
        write(Self.maskedFrame(opcode: 0x8, payload: [UInt8(code >> 8), UInt8(code & 0xff)]))
        phase = .closed
        close()
    }

    /// A client frame: FIN set, masked (RFC 6455 §5.3), with a length of 7, 16 or 64 bits.
    static func maskedFrame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xffff {
            frame.append(0x80 | 126)
            frame.append(UInt8(payload.count >> 8))
            frame.append(UInt8(payload.count & 0xff))
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((UInt64(payload.count) >> UInt64(shift)) & 0xff)) }
        }
        frame.append(contentsOf: mask)
        for (i, byte) in payload.enumerated() { frame.append(byte ^ mask[i & 3]) }
        return frame
    }
}
