
/// One client connection: turns its bytes into requests, passes them to the server in order, and
/// writes the responses in the order of the requests, however late each is ready (pipelining).
final class HTTPServerConnection: TCPConnectionDelegate {
    let tcp: TCPConnection
    /// Strong, though the server holds its connections too: it lets go of each when it closes, which
    /// breaks the cycle. An unowned reference, even an unsafe one, is retained around every call
    /// made through it; a `let` of this object's own is borrowed.
    private let server: HTTPServer
    private let parser: HTTPRequestParser

    // @exclusivity(unchecked) on the stored properties below: touched on the loop thread only, and no callback runs while one of them is being modified;
    // a dynamic exclusivity check on each access costs more than the work it guards here.
    /// Requests are numbered as they are read; `firstSlotSequence` is the one whose answer is due next.
    @exclusivity(unchecked) private var firstSlotSequence: UInt64 = 0
    @exclusivity(unchecked) private var nextSequence: UInt64 = 0
    /// Answers ready before their turn: `slots[i]` is the one to request `firstSlotSequence + i`
    /// (`nil`: not ready). Empty unless a pipelined request was answered out of order, so an answer
    /// that is due at once touches no queue.
    @exclusivity(unchecked) private var slots: [Slot?] = []
    /// After this response the connection closes (a request without keep-alive, or an error).
    @exclusivity(unchecked) private var closeAfter: UInt64?
    @exclusivity(unchecked) private var isReadingPaused = false
    /// Bytes that followed an upgrade request: they belong to the protocol that takes over.
    @exclusivity(unchecked) private var upgradeLeftover: [UInt8] = []

    /// Bytes of a request have arrived and it is not complete yet.
    @exclusivity(unchecked) private(set) var isMidRequest = false
    /// The last answer is written and the connection is closing (lingering): nothing more to do,
    /// in particular no second timeout answer on a socket already shut down for writing.
    @exclusivity(unchecked) private(set) var isClosing = false
    /// Loop time (ms) by which the current request must be complete, or the idle connection used.
    @exclusivity(unchecked) var deadline: UInt64
    /// The context of the last request, for the server to reuse once nothing holds it (see
    /// `HTTPServer.handle`). It holds this connection in turn: the cycle is broken when the connection
    /// closes or leaves HTTP.
    @exclusivity(unchecked) var spareContext: RequestContext?

    private struct Slot {
        var response: HTTPResponse
        let isHead: Bool
        let keepAliveHeader: Bool
    }

    init(tcp: TCPConnection, server: HTTPServer) {
        self.tcp = tcp
        self.server = server
        parser = HTTPRequestParser(limits: server.configuration.limits)
        deadline = server.now + server.idleTimeoutMilliseconds
        super.init()
        tcp.delegate = self
        tcp.startReading()
    }

    var hasPendingResponses: Bool { nextSequence != firstSlotSequence }
    /// Requests read and not answered yet.
    private var pendingCount: Int { Int(nextSequence - firstSlotSequence) }

    // MARK: TCPConnectionDelegate

    override func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        if !isMidRequest {
            isMidRequest = true
            deadline = server.now + server.requestTimeoutMilliseconds
        }
        var input = bytes
        while let event = parser.next(from: &input) {
            // Consumed: the request moves out of the event rather than being copied, buffer by buffer.
            switch consume event {
            case .request(let request):
                // Bytes left over start the next request, which gets a deadline of its own.
                isMidRequest = !input.isEmpty
                deadline = server.now + (isMidRequest ? server.requestTimeoutMilliseconds : server.idleTimeoutMilliseconds)
                if let problem = Self.hostProblem(request) {
                    return fail(with: problem, head: request)
                }
                handle(request)
                parser.recycle(request)
            case .expectsContinue:
                tcp.write(Self.continueLine)
            case .upgrade(let request, let leftover):
                guard request.headers.containsToken("websocket", in: "Upgrade") else {
                    // Another protocol (h2c, say): ignore the offer and go on speaking HTTP/1.1.
                    parser.declineUpgrade()
                    isMidRequest = !leftover.isEmpty
                    handle(request)
                    if !leftover.isEmpty { leftover.withUnsafeBytes { self.connection(connection, didRead: $0) } }
                    return
                }
                // HTTP ends here: the route answers 101 and takes the connection over, or refuses and closes.
                isMidRequest = false
                upgradeLeftover = leftover
                closeAfter = nextSequence
                handle(request)
                return
            case .error(let error):
                isMidRequest = false
                fail(with: Problem.parseError(error, limits: parser.limits), head: parser.failedRequestHead)
                return
            }
            if tcp.isClosed { return }
        }
        if pendingCount >= server.configuration.maxPipelinedRequests && !isReadingPaused {
            isReadingPaused = true
            tcp.stopReading()
        }
    }

    override func connectionDidEnd(_ connection: TCPConnection) {
        // The client sends no more; it still gets the answers to what it sent.
        if case .error(let error)? = parser.finish() {
            isMidRequest = false
            return fail(with: Problem.parseError(error, limits: parser.limits), head: parser.failedRequestHead)
        }
        isMidRequest = false
        if !hasPendingResponses {
            tcp.close()
        } else {
            closeAfter = nextSequence - 1
        }
    }

    override func connectionDidClose(_ connection: TCPConnection) {
        spareContext = nil
        server.connectionClosed(self)
    }

    // MARK: Requests and responses

    private func handle(_ request: HTTPRequest) {
        let sequence = nextSequence
        nextSequence += 1
        if !request.keepAlive { closeAfter = sequence }
        server.handle(request, from: self, sequence: sequence)
    }

    /// Answers a broken request (its response follows those already due) and closes.
    private func fail(with problem: Problem, head: HTTPRequest?) {
        let sequence = nextSequence
        nextSequence += 1
        closeAfter = sequence
        server.handleFailure(problem, head: head, from: self, sequence: sequence)
    }

    /// The server answers 408 to a request that trickles in, or to an idle connection, and closes.
    func timeOut() {
        guard !tcp.isClosed, !isClosing else { return }
        let seconds = isMidRequest ? server.configuration.requestTimeout : server.configuration.idleTimeout
        isMidRequest = false
        tcp.stopReading()
        fail(with: .requestTimeout(seconds: seconds), head: nil)
    }

    /// The answer to the request of `context`, ready now: written at its turn.
    func complete(_ context: RequestContext, _ response: HTTPResponse) {
        server.record(response, to: context)
        guard !tcp.isClosed else { return }
        let sequence = context.sequence
        if sequence == firstSlotSequence {
            // Due now (always, without pipelining): written straight away, never stored, so the
            // response is not copied into the queue and out again.
            if !slots.isEmpty { slots.removeFirst() }
            firstSlotSequence += 1
            guard send(response, sequence: sequence, isHead: context.isHead, keepAliveHeader: context.keepAliveHeader) else { return }
        } else {
            let index = Int(sequence - firstSlotSequence)
            if slots.count <= index { slots.append(contentsOf: repeatElement(nil, count: index + 1 - slots.count)) }
            slots[index] = Slot(response: response, isHead: context.isHead, keepAliveHeader: context.keepAliveHeader)
        }
        // Answers that were waiting for this one.
        while !slots.isEmpty, slots[0] != nil {
            // Moved out rather than copied: a copy would retain the response's buffers once more.
            let slot = slots[0].take()!
            let current = firstSlotSequence
            slots.removeFirst()
            firstSlotSequence += 1
            guard send(slot.response, sequence: current, isHead: slot.isHead, keepAliveHeader: slot.keepAliveHeader) else { return }
        }
        if isReadingPaused && pendingCount < server.configuration.maxPipelinedRequests {
            isReadingPaused = false
            tcp.startReading()
        }
        if !hasPendingResponses && !isMidRequest {
            deadline = server.now + server.idleTimeoutMilliseconds
        }
    }

    /// Writes the answer to request `sequence`; false when the connection is done with HTTP
    /// (closing, or handed over to another protocol).
    private func send(_ response: HTTPResponse, sequence: UInt64, isHead: Bool, keepAliveHeader: Bool) -> Bool {
        if let takeover = response.takeover {
            server.write(response, isHead: false, closing: false, keepAliveHeader: false, to: tcp)
            spareContext = nil
            server.connectionUpgraded(self, to: takeover.attach(tcp, upgradeLeftover) { [server, tcp] in server.upgradedConnectionClosed(tcp) })
            return false
        }
        // While the server shuts down, the last answer due is the last one: it says so.
        let closing = closeAfter == sequence || (server.isShuttingDown && !hasPendingResponses && !isMidRequest)
        server.write(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, to: tcp)
        if closing {
            isClosing = true
            tcp.closeAfterWriting()
            return false
        }
        return true
    }

    /// The path of the route numbered `index` (for `RequestContext.route`).
    func routePath(_ index: Int) -> String { server.routePath(index) }

    /// RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host header; HTTP/1.0 may have none.
    private static func hostProblem(_ request: HTTPRequest) -> Problem? {
        let hosts = request.headers.hostCount
        if hosts > 1 { return .malformedRequest("the request has more than one Host header") }
        if hosts == 0 && request.version == .http1_1 { return .malformedRequest("an HTTP/1.1 request needs a Host header") }
        return nil
    }

    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}
