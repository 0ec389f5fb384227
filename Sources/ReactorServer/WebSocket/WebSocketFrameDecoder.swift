/// Turns the bytes a client sends on an upgraded connection into messages and control events
/// (RFC 6455 §5–§8), server side. Sans-I/O: give it bytes as they are read, in any split, and
/// take events out.
///
///     var input = UnsafeRawBufferPointer(readBuffer)
///     while let event = decoder.next(from: &input) { ... }
///
/// The decoder streams: a frame's payload is unmasked into the message as it arrives, so the
/// header is all it needs to enforce the limits, and a text message is rejected at the first
/// byte that makes it invalid UTF-8, not when the message ends. Nothing of `input` is kept after
/// the call, so the read buffer can be reused at once.
///
/// It fails the connection (a `.protocolError` event, after which it is dead) on anything
/// RFC 6455 says to fail on. The reserved bits must be zero, except RSV1 on the first frame of a
/// data message once permessage-deflate is negotiated (`acceptsCompressedMessages`, RFC 7692 §6).
/// After a `.close` event it ignores further input (§5.5.1: nothing follows a close frame).
public struct WebSocketFrameDecoder: Sendable {
    public enum Output: Hashable, Sendable {
        /// A complete data message, reassembled from its fragments. `opcode` is `.text` (payload
        /// is valid UTF-8) or `.binary`.
        case message(opcode: WebSocketOpcode, payload: [UInt8])
        /// A complete data message sent compressed (RFC 7692): `payload` is still deflated, and a
        /// text message's UTF-8 is checked once it is inflated.
        case compressedMessage(opcode: WebSocketOpcode, payload: [UInt8])
        /// Answer with a pong carrying the same payload (§5.5.2).
        case ping([UInt8])
        case pong([UInt8])
        /// The client starts the closing handshake. `code` is nil when the frame had no body
        /// (report it as 1005). Echo a close frame, then close the TCP connection (§5.5.1).
        case close(code: WebSocketCloseCode?, reason: String)
        /// The client broke the protocol: send a close frame with this code, then close the
        /// connection (§7.1.7). The decoder is dead from now on.
        case protocolError(WebSocketCloseCode, reason: String)
    }

    public enum Phase: Hashable, Sendable {
        case open
        /// A close frame was received; further input is ignored.
        case closeReceived
        /// The connection has been failed with this code; further input is ignored.
        case failed(WebSocketCloseCode)
    }

    // Where in a frame the next byte belongs. Headers are parsed a byte at a time so that a
    // header split anywhere needs no reassembly buffer, and so that violations visible in the
    // first byte fail before the rest arrives.
    private enum Step: Hashable, Sendable {
        case firstByte
        case secondByte
        case extendedLength(remaining: Int)
        case maskingKey(remaining: Int)
        case payload
    }

    public let limits: WebSocketLimits
    public private(set) var phase: Phase = .open
    /// Whether the peer may set RSV1 on a message's first frame: permessage-deflate was negotiated.
    public var acceptsCompressedMessages = false

    private var step: Step = .firstByte
    // The frame being read.
    private var fin = false
    private var opcode: WebSocketOpcode = .continuation
    private var announcedLength: UInt64 = 0
    private var remainingPayload = 0
    private var maskingKey: UInt32 = 0
    private var maskPhase = 0
    // The data message being assembled; `messageOpcode` is nil between messages.
    private var messageOpcode: WebSocketOpcode?
    private var messageIsCompressed = false
    private var message: [UInt8] = []
    private var utf8 = WebSocketUTF8Validator()
    // A control frame's payload (at most 125 bytes); it may arrive in the middle of a message.
    private var control: [UInt8] = []

    public init(limits: WebSocketLimits = WebSocketLimits()) {
        self.limits = limits
    }

    /// Heap bytes held for partial messages and control frames; zero between messages.
    var bufferedCapacity: Int { message.capacity + control.capacity }

    /// Consumes `input` up to and including the next event and returns it, or consumes all of
    /// `input` and returns nil when it ends before one. Once the phase is no longer `.open`,
    /// consumes everything and returns nil.
    public mutating func next(from input: inout UnsafeRawBufferPointer) -> Output? {
        guard phase == .open else {
            input = UnsafeRawBufferPointer(rebasing: input[input.endIndex...])
            return nil
        }
        while true {
            if step == .payload {
                if remainingPayload > 0 {
                    guard !input.isEmpty else { return nil }
                    let n = min(remainingPayload, input.count)
                    let error = consumePayload(UnsafeRawBufferPointer(rebasing: input[..<n]))
                    input = UnsafeRawBufferPointer(rebasing: input[n...])
                    if let error { return error }
                }
                if remainingPayload == 0 {
                    step = .firstByte
                    if let event = finishFrame() { return event }
                }
                continue
            }
            guard let byte = input.first else { return nil }
            input = UnsafeRawBufferPointer(rebasing: input[1...])
            if let error = consumeHeaderByte(byte) { return error }
        }
    }

    /// All events in `input`, in order; the last one is `.close` or `.protocolError` if the
    /// input brings the connection to an end.
    public mutating func feed(_ input: UnsafeRawBufferPointer) -> [Output] {
        var input = input
        var events: [Output] = []
        while let event = next(from: &input) { events.append(event) }
        return events
    }

    public mutating func feed(_ input: [UInt8]) -> [Output] {
        input.withUnsafeBytes { feed($0) }
    }

    // MARK: - Header

    private mutating func consumeHeaderByte(_ byte: UInt8) -> Output? {
        switch step {
        case .firstByte:
            return startFrame(byte)
        case .secondByte:
            // §5.1: a server must close the connection on an unmasked client frame.
            guard byte & 0x80 != 0 else { return fail(.protocolError, "client frame is not masked") }
            switch byte & 0x7F {
            case 126:
                announcedLength = 0
                step = .extendedLength(remaining: 2)
            case 127:
                announcedLength = 0
                step = .extendedLength(remaining: 8)
            case let length:
                announcedLength = UInt64(length)
                if let error = checkLength() { return error }
                step = .maskingKey(remaining: 4)
            }
        case .extendedLength(let remaining):
            // §5.2: the most significant bit of a 64-bit length must be 0. Lengths that would
            // fit a shorter encoding are allowed: the RFC asks senders for minimal encodings
            // but does not tell receivers to reject others.
            if remaining == 8, byte & 0x80 != 0 {
                return fail(.protocolError, "64-bit payload length has its most significant bit set")
            }
            announcedLength = announcedLength << 8 | UInt64(byte)
            if remaining > 1 {
                step = .extendedLength(remaining: remaining - 1)
            } else {
                if let error = checkLength() { return error }
                step = .maskingKey(remaining: 4)
            }
        case .maskingKey(let remaining):
            maskingKey |= UInt32(byte) << (8 * UInt32(4 - remaining))
            if remaining > 1 {
                step = .maskingKey(remaining: remaining - 1)
            } else {
                // Fits: checkLength bounded it by an Int limit or by 125.
                remainingPayload = Int(announcedLength)
                maskPhase = 0
                step = .payload
            }
        case .payload:
            preconditionFailure("payload bytes are not header bytes")
        }
        return nil
    }

    private mutating func startFrame(_ byte: UInt8) -> Output? {
        fin = byte & 0x80 != 0
        maskingKey = 0
        guard let opcode = WebSocketOpcode(rawValue: byte & 0x0F) else {
            return fail(.protocolError, "reserved opcode \(byte & 0x0F)")
        }
        // §5.2: non-zero reserved bits without an extension that defines them fail the connection.
        // permessage-deflate defines RSV1, on the first frame of a data message only (RFC 7692 §6).
        let compressed = byte & 0x40 != 0
        guard byte & 0x30 == 0, !compressed || (acceptsCompressedMessages && (opcode == .text || opcode == .binary)) else {
            return fail(.protocolError, "reserved bits set without a negotiated extension that defines them")
        }
        self.opcode = opcode
        switch opcode {
        case .close, .ping, .pong:
            // §5.5: control frames must not be fragmented; they may come between fragments.
            guard fin else { return fail(.protocolError, "fragmented \(opcode) frame") }
        case .continuation:
            guard messageOpcode != nil else {
                return fail(.protocolError, "continuation frame without a message to continue")
            }
        case .text, .binary:
            // §5.4: fragments of different messages must not interleave.
            guard messageOpcode == nil else {
                return fail(.protocolError, "\(opcode) frame while a fragmented message is unfinished")
            }
            messageOpcode = opcode
            messageIsCompressed = compressed
            utf8.reset()
        }
        step = .secondByte
        return nil
    }

    // Runs once the payload length is known, before any payload byte is buffered.
    private mutating func checkLength() -> Output? {
        if opcode.isControl {
            guard announcedLength <= 125 else {
                return fail(.protocolError, "\(opcode) frame payload longer than 125 bytes")
            }
            return nil
        }
        guard announcedLength <= UInt64(limits.maxFramePayload) else {
            return fail(.messageTooBig, "frame payload of \(announcedLength) bytes exceeds the limit of \(limits.maxFramePayload)")
        }
        guard UInt64(message.count) + announcedLength <= UInt64(limits.maxMessageSize) else {
            return fail(.messageTooBig, "message exceeds the limit of \(limits.maxMessageSize) bytes")
        }
        return nil
    }

    // MARK: - Payload

    private mutating func consumePayload(_ chunk: UnsafeRawBufferPointer) -> Output? {
        let key = maskingKey
        let phase = maskPhase
        maskPhase = (maskPhase + chunk.count) & 3
        remainingPayload -= chunk.count
        if opcode.isControl {
            Self.appendUnmasked(chunk, key: key, phase: phase, to: &control)
            return nil
        }
        let start = message.count
        Self.appendUnmasked(chunk, key: key, phase: phase, to: &message)
        if messageOpcode == .text, !messageIsCompressed {
            let status = message.withUnsafeBytes { utf8.validate(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            if status == .invalid { return fail(.invalidPayload, "text message is not valid UTF-8") }
        }
        return nil
    }

    private static func appendUnmasked(
        _ chunk: UnsafeRawBufferPointer, key: UInt32, phase: Int, to buffer: inout [UInt8]
    ) {
        let start = buffer.count
        buffer.append(contentsOf: chunk)
        buffer.withUnsafeMutableBytes {
            WebSocketMasking.apply(key: key, phase: phase, to: UnsafeMutableRawBufferPointer(rebasing: $0[start...]))
        }
    }

    private mutating func finishFrame() -> Output? {
        switch opcode {
        case .ping:
            defer { control = [] }
            return .ping(control)
        case .pong:
            defer { control = [] }
            return .pong(control)
        case .close:
            defer { control = [] }
            return receiveClose(control)
        case .text, .binary, .continuation:
            guard fin, let messageOpcode else { return nil }
            if messageOpcode == .text, !messageIsCompressed, utf8.status != .complete {
                return fail(.invalidPayload, "text message ends inside a UTF-8 sequence")
            }
            // Hand the buffer over instead of copying it, and start the next message without
            // one, so a large message's memory goes with its event.
            let payload = message
            message = []
            self.messageOpcode = nil
            if messageIsCompressed { return .compressedMessage(opcode: messageOpcode, payload: payload) }
            return .message(opcode: messageOpcode, payload: payload)
        }
    }

    // §5.5.1 and §7.4: an optional 2-byte code, then an optional UTF-8 reason.
    private mutating func receiveClose(_ payload: [UInt8]) -> Output {
        switch payload.count {
        case 0:
            phase = .closeReceived
            return .close(code: nil, reason: "")
        case 1:
            return fail(.protocolError, "close frame payload of one byte")
        default:
            let code = WebSocketCloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
            guard code.isValidOnWire else { return fail(.protocolError, "invalid close code \(code.rawValue)") }
            let reason = payload[2...]
            guard reason.withUnsafeBytes({ WebSocketUTF8Validator.isValid($0) }) else {
                return fail(.invalidPayload, "close reason is not valid UTF-8")
            }
            phase = .closeReceived
            return .close(code: code, reason: String(decoding: reason, as: UTF8.self))
        }
    }

    private mutating func fail(_ code: WebSocketCloseCode, _ reason: String) -> Output {
        phase = .failed(code)
        message = []
        control = []
        messageOpcode = nil
        return .protocolError(code, reason: reason)
    }
}
