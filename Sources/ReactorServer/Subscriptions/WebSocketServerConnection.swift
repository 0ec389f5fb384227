/// What a WebSocket connection's owner hears, on the loop thread.
protocol WebSocketMessageHandler: AnyObject {
    func webSocket(_ connection: WebSocketServerConnection, received opcode: WebSocketOpcode, payload: [UInt8])
    /// Everything sent so far has reached the kernel.
    func webSocketDidDrain(_ connection: WebSocketServerConnection)
    func webSocketDidClose(_ connection: WebSocketServerConnection)
    /// Whether the handler still owes the peer answers (acknowledgements of events it fired): a
    /// server shutting down closes the connection only after they are sent.
    var owesReplies: Bool { get }
}

extension WebSocketMessageHandler {
    var owesReplies: Bool { false }
}

/// A WebSocket after its handshake: decodes frames, answers pings, pings a quiet peer and drops a
/// dead one, and runs the close handshake. What the messages mean is the handler's business.
final class WebSocketServerConnection: TCPConnectionDelegate, UpgradedConnection {
    struct Timing {
        /// A peer silent this long is pinged.
        var pingAfter: UInt64 = 30_000
        /// A ping unanswered this long means the peer is gone.
        var pongWithin: UInt64 = 10_000
    }

    /// permessage-deflate as negotiated for a connection, and what it needs to speak it.
    struct Deflate {
        let negotiated: PerMessageDeflate
        /// Shared by the server's connections (see `MessageCompressor`).
        let compressor: MessageCompressor
        /// Smaller messages go out plain: compressing them on their own saves too little to pay for
        /// itself. (A shared stream compresses them all: there they shrink to a few bytes.)
        let minimumBytes: Int
        /// The selection's shared stream, when the peer lets the server keep its context.
        let shared: SharedDeflateStream?
    }

    /// A frame about to be sent: `send(_:)` records that this connection took it.
    struct PreparedFrame {
        let bytes: [UInt8]
        /// The shared stream's entry the frame is, if it is one.
        fileprivate let sharedEntry: UInt64?
    }

    let tcp: TCPConnection
    /// Set when the client and this server agreed on permessage-deflate.
    let deflate: Deflate?
    /// Held until the connection closes (nothing else need own an echo handler).
    var handler: WebSocketMessageHandler?
    private let loop: EventLoop
    /// Tells the server the connection closed (see `ConnectionTakeover`).
    private let closed: () -> Void
    private var decoder: WebSocketFrameDecoder
    /// The number of the last shared-stream entry this connection sent, while it has taken every
    /// one since the stream's last fresh start and nothing else compressed; 0 when out of step.
    private var sharedEntryTaken: UInt64 = 0
    private let timing: Timing
    private var lastHeard: UInt64
    /// The newest ping's payload, to answer once the output drains (`pongRoom`).
    private var pendingPong: [UInt8]?
    /// Pongs go out at once while no more than this waits in the output.
    private static let pongRoom = 64 * 1024
    private var pingSentAt: UInt64?
    /// The server is shutting down: the connection closes (1001) once its handler owes nothing.
    private(set) var isDraining = false
    private(set) var isClosing = false {
        didSet { if isClosing && closingSince == nil { closingSince = loop.now } }
    }
    /// When the close handshake began: a peer that never reads (so the close frame never drains)
    /// is cut off `closeGrace` milliseconds later.
    private var closingSince: UInt64?
    private static var closeGrace: UInt64 { 2_000 }

    init(tcp: TCPConnection, loop: EventLoop, closed: @escaping () -> Void, limits: WebSocketLimits, timing: Timing, deflate: Deflate? = nil) {
        self.tcp = tcp
        self.loop = loop
        self.closed = closed
        self.timing = timing
        self.deflate = deflate
        decoder = WebSocketFrameDecoder(limits: limits)
        decoder.acceptsCompressedMessages = deflate != nil
        lastHeard = loop.now
        super.init()
        tcp.delegate = self
    }

    /// Starts reading, after handling the bytes that came with the handshake.
    func start(leftover: [UInt8]) {
        if !leftover.isEmpty { leftover.withUnsafeBytes { received($0) } }
        tcp.startReading()
    }

    /// Sends a complete frame (made once, perhaps sent to many).
    func send(frame: [UInt8]) {
        guard !isClosing else { return }
        tcp.write(frame)
    }

    func send(text: [UInt8]) {
        send(frame: WebSocketFrameEncoder.frame(opcode: .text, payload: text))
    }

    /// A subscriber message's frame for this connection. A `live` message (one the hub publishes to
    /// the whole selection, in order) comes from the selection's shared stream while this connection
    /// is in step with it; anything else is compressed on its own when worth it, or goes plain. Each
    /// compressed form is made once, for every connection that asks. Send it with `send(_:)`.
    func frame(for message: SubscriberMessage, live: Bool) -> PreparedFrame {
        guard let deflate, deflate.negotiated.serverMaxWindowBits == 15 else { return PreparedFrame(bytes: message.webSocketFrame, sharedEntry: nil) }
        if let shared = deflate.shared, live {
            let entry = shared.entry(for: message)
            if entry.startsAfresh || (sharedEntryTaken != 0 && entry.number == sharedEntryTaken + 1) {
                return PreparedFrame(bytes: entry.frame, sharedEntry: entry.number)
            }
            // Out of step (a message missed, or one compressed on its own taken): on its own until
            // the stream's next fresh start.
            leaveSharedStream()
        }
        guard message.json.count >= deflate.minimumBytes else { return PreparedFrame(bytes: message.webSocketFrame, sharedEntry: nil) }
        leaveSharedStream()
        return PreparedFrame(bytes: message.deflatedWebSocketFrame(deflate.compressor), sharedEntry: nil)
    }

    /// The peer is, or is about to be, out of step with the shared stream: it missed an entry, or a
    /// message compressed on its own enters its window where the stream does not expect one. It
    /// gets no entry until the stream next starts afresh, which it asks for.
    private func leaveSharedStream() {
        guard let shared = deflate?.shared else { return }
        sharedEntryTaken = 0
        shared.requestFreshStart()
    }

    /// Sends a prepared frame; a shared-stream entry counts as taken only once sent.
    func send(_ frame: PreparedFrame) {
        guard !isClosing else { return }
        if let entry = frame.sharedEntry { sharedEntryTaken = entry }
        tcp.write(frame.bytes)
    }

    /// Sends one data message, compressed when deflate was negotiated and it is worth it.
    func send(message: [UInt8], opcode: WebSocketOpcode) {
        guard let deflate = usableDeflate(forBytes: message.count) else {
            return send(frame: WebSocketFrameEncoder.frame(opcode: opcode, payload: message))
        }
        leaveSharedStream()
        send(frame: WebSocketFrameEncoder.deflatedFrame(opcode: opcode, payload: message, compressor: deflate.compressor))
    }

    /// The compressor writes with a full window: a client that capped the server's window below
    /// it (rare; browsers do not) gets plain frames, which permessage-deflate always allows.
    private func usableDeflate(forBytes count: Int) -> Deflate? {
        guard let deflate, count >= deflate.minimumBytes, deflate.negotiated.serverMaxWindowBits == 15 else { return nil }
        return deflate
    }

    /// Starts the close handshake with `code`; the connection closes once the frame is written and
    /// the peer has had its chance to answer.
    func close(_ code: WebSocketCloseCode, reason: String = "") {
        guard !isClosing, !tcp.isClosed else { return }
        isClosing = true
        tcp.write(WebSocketFrameEncoder.closeFrame(code: code, reason: reason))
        tcp.closeAfterWriting()
    }

    var unsentBytes: Int { tcp.queuedBytes }

    // MARK: TCPConnectionDelegate

    override func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        received(bytes)
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        lastHeard = loop.now
        pingSentAt = nil
        var input = bytes
        while !isClosing, let event = decoder.next(from: &input) {
            switch event {
            case .message(let opcode, let payload):
                handler?.webSocket(self, received: opcode, payload: payload)
            case .compressedMessage(let opcode, let payload):
                receivedCompressed(opcode, payload)
            case .ping(let payload):
                // Answered at once while little waits in the output; past that, only the newest
                // ping is, once the output drains (RFC 6455 §5.5.3): a client pinging and reading
                // nothing grows nothing.
                if tcp.queuedBytes + tcp.batchedBytes <= Self.pongRoom {
                    tcp.write(WebSocketFrameEncoder.frame(opcode: .pong, payload: payload))
                } else {
                    pendingPong = payload
                }
            case .pong:
                break
            case .close(let code, _):
                // Echo the peer's code (none if it sent none), then close our side.
                isClosing = true
                tcp.write(WebSocketFrameEncoder.closeFrame(code: code))
                tcp.closeAfterWriting()
            case .protocolError(let code, let reason):
                close(code, reason: reason)
            }
        }
    }

    /// Inflates a compressed message, never past the message limit: a small frame that would
    /// inflate to gigabytes costs no more than the limit before the connection is failed.
    private func receivedCompressed(_ opcode: WebSocketOpcode, _ payload: [UInt8]) {
        guard let deflate else { return close(.protocolError, reason: "compressed message without permessage-deflate") }
        let limit = decoder.limits.maxMessageSize
        switch deflate.compressor.inflate(payload, limit: limit) {
        case .success(let message):
            guard opcode != .text || message.withUnsafeBytes({ WebSocketUTF8Validator.isValid($0) }) else {
                return close(.invalidPayload, reason: "text message is not valid UTF-8")
            }
            handler?.webSocket(self, received: opcode, payload: message)
        case .failure(.tooBig):
            close(.messageTooBig, reason: "message inflates to more than the limit of \(limit) bytes")
        case .failure(.invalid):
            close(.invalidPayload, reason: "compressed message is not valid deflate data")
        }
    }

    override func connectionDidEnd(_ connection: TCPConnection) {
        tcp.close()
    }

    override func connectionDidDrain(_ connection: TCPConnection) {
        if let payload = pendingPong, !isClosing {
            pendingPong = nil
            tcp.write(WebSocketFrameEncoder.frame(opcode: .pong, payload: payload))
        }
        handler?.webSocketDidDrain(self)
    }

    override func connectionDidClose(_ connection: TCPConnection) {
        handler?.webSocketDidClose(self)
        handler = nil
        closed()
    }

    // MARK: UpgradedConnection

    func tick(now: UInt64) {
        if let closingSince {
            if now >= closingSince + Self.closeGrace { tcp.close() }
            return
        }
        if let pingSentAt {
            if now >= pingSentAt + timing.pongWithin { tcp.close() }
        } else if now >= lastHeard + timing.pingAfter {
            pingSentAt = now
            tcp.write(WebSocketFrameEncoder.frame(opcode: .ping, payload: []))
        }
    }

    func serverIsShuttingDown() {
        isDraining = true
        closeIfDrained()
    }

    /// Closes a draining connection once its handler has sent every answer it owed.
    func closeIfDrained() {
        guard isDraining, handler?.owesReplies != true else { return }
        close(.goingAway, reason: "the server is shutting down")
    }

    func close() {
        tcp.close()
    }
}
