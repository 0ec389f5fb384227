import DequeModule

/// One client connection: turns its bytes into requests, passes them to the server in order, and
/// writes the responses in the order of the requests, however late each is ready (pipelining).
final class HTTPServerConnection: TCPConnectionDelegate {
    let tcp: TCPConnection
    /// Strong, though the server holds its connections too: it lets go of each when it closes, which
    /// breaks the cycle. An unowned reference, even an unsafe one, is retained around every call
    /// made through it; a `let` of this object's own is borrowed.
    private let server: HTTPServer
    private let parser: HTTPRequestParser

    /// Where the connection stands in its stream of requests and answers.
    private struct State {
        /// Requests are numbered as they are read; `firstSlotSequence` is the one whose answer is due next.
        var firstSlotSequence: UInt64 = 0
        var nextSequence: UInt64 = 0
        /// Answers ready before their turn: `slots[i]` is the one to request `firstSlotSequence + i`
        /// (`nil`: not ready). Empty unless a pipelined request was answered out of order, so an answer
        /// that is due at once touches no queue.
        var slots: [Slot?] = []
        /// After this response the connection closes (a request without keep-alive, or an error).
        var closeAfter: UInt64?
        var isReadingPaused = false
        /// The client reads its answers slower than it sends requests: more than `maxUnsentBytes` of
        /// them wait unsent, so reading stopped, and what was read but not parsed waits in `unparsed`
        /// until they drain.
        var isOutputBlocked = false
        var unparsed: [UInt8] = []
        /// The request being read asked for `100 Continue` while answers to earlier ones were still
        /// due: it goes out after them, in order (RFC 9110 §15.2), unless the body comes first.
        var continueOwed = false
        /// Bytes that followed an upgrade request: they belong to the protocol that takes over.
        var upgradeLeftover: [UInt8] = []
        var isMidRequest = false
        var isClosing = false
        /// An answer took the connection over (a `text/event-stream` subscription): HTTP ends there,
        /// as at an upgrade. Requests the client pipelined after it get no answer, and are not run.
        var isTakenOver = false
        /// The newest request that may change the state (anything but GET, HEAD and OPTIONS).
        var lastWriteSequence: UInt64?
        /// A read the server did not answer at once (a subscription waiting for a version this node
        /// has not reached, a page of history read from Redis). Its answer may take the connection
        /// over, after which what was pipelined behind it gets no answer: so that nothing runs
        /// unanswered, what follows it is held until it is answered (see `readIsUnanswered`).
        var awaitedRead: UInt64?
        /// Read after a write that is not answered yet: held back until it is (see `writeIsUnanswered`).
        var held: Deque<Held> = []
        var isDispatchingHeld = false
        /// The peer sent its last byte while requests were held: the last of them closes.
        var peerEnded = false
    }

    /// What was read but not handed to the server yet, in order.
    private enum Held {
        case request(HTTPRequest)
        case upgrade(HTTPRequest, leftover: [UInt8])
        case failure(Problem, head: HTTPRequest?, principal: Principal?)
    }
    // @exclusivity(unchecked) on `state` and the server's two fields below: touched on the loop thread
    // only, and no callback runs while one of them is being modified; a dynamic exclusivity check on
    // each access would cost more than the work it guards.
    @exclusivity(unchecked) private var state = State()

    /// Bytes of a request have arrived and it is not complete yet.
    var isMidRequest: Bool { state.isMidRequest }
    /// The last answer is written and the connection is closing (lingering): nothing more to do,
    /// in particular no second timeout answer on a socket already shut down for writing.
    var isClosing: Bool { state.isClosing }

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
        parser = HTTPRequestParser(limits: server.configuration.limits, announcesBodies: server.checksHeads)
        deadline = server.now + server.idleTimeoutMilliseconds
        super.init()
        tcp.delegate = self
        tcp.startReading()
    }

    var hasPendingResponses: Bool { state.nextSequence != state.firstSlotSequence || !state.held.isEmpty }
    /// Requests read and not answered yet.
    private var pendingCount: Int { Int(state.nextSequence - state.firstSlotSequence) + state.held.count }

    /// Whether a request that only reads must wait before it is handled: a write read before it on
    /// this connection is not answered yet. The write is applied, but not published until the
    /// journal holds it; a read handled now would answer from the state before it, after the
    /// client was told the write's version. Writes need no wait: the core applies them in order.
    private var writeIsUnanswered: Bool {
        guard let write = state.lastWriteSequence else { return false }
        return write >= state.firstSlotSequence
    }

    /// Whether requests must wait for a read the server has not answered yet (`State.awaitedRead`).
    private var readIsUnanswered: Bool {
        guard let read = state.awaitedRead else { return false }
        return read >= state.firstSlotSequence
    }

    private static func isRead(_ request: HTTPRequest) -> Bool {
        switch request.method {
        case .get, .head, .options: true
        default: false
        }
    }

    // MARK: TCPConnectionDelegate

    override func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        // What follows a declined upgrade is read as the rest of the same input, in turn, under the
        // same bounds (not by recursion: a client sending nothing but upgrade offers would nest it).
        var next = parse(bytes)
        while let leftover = next { next = leftover.withUnsafeBytes { parse($0) } }
    }

    /// Parses `bytes` and handles the requests in them; returns the bytes after an upgrade offer
    /// this server declined, which are requests again, to parse next.
    private func parse(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        // Nothing after the last answer: not after a takeover, nor after a request that closes.
        guard !state.isTakenOver, state.closeAfter == nil else { return nil }
        if !state.isMidRequest {
            state.isMidRequest = true
            deadline = server.now + server.requestTimeoutMilliseconds
        }
        var input = bytes
        while let event = parser.next(from: &input) {
            // Consumed: the request moves out of the event rather than being copied, buffer by buffer.
            switch consume event {
            case .request(let request):
                state.continueOwed = false
                // Bytes left over start the next request, which gets a deadline of its own.
                state.isMidRequest = !input.isEmpty
                deadline = server.now + (state.isMidRequest ? server.requestTimeoutMilliseconds : server.idleTimeoutMilliseconds)
                if let problem = Self.hostProblem(request) {
                    fail(with: problem, head: request)
                    return nil
                }
                if !state.held.isEmpty || readIsUnanswered || (Self.isRead(request) && writeIsUnanswered) {
                    state.held.append(.request(request))
                } else {
                    handle(request)
                    parser.recycle(request)
                    if state.isTakenOver { return nil }
                }
            case .expectsContinue(let head):
                if refusedOnHead(head) { return nil }
                if hasPendingResponses { state.continueOwed = true } else { tcp.write(Self.continueLine) }
            case .bodyFollows(let head):
                if refusedOnHead(head) { return nil }
            case .upgrade(let request, let leftover):
                state.isMidRequest = false
                if let problem = Self.hostProblem(request) {
                    fail(with: problem, head: request)
                    return nil
                }
                if request.method == .connect {
                    // What follows a CONNECT is a tunnel's bytes, not a request: answered, then closed.
                    fail(with: .notImplemented("reactord does not implement CONNECT"), head: request)
                    return nil
                }
                guard request.headers.containsToken("websocket", in: "Upgrade") else {
                    // Another protocol (h2c, say): ignore the offer and go on speaking HTTP/1.1.
                    parser.declineUpgrade()
                    state.isMidRequest = !leftover.isEmpty
                    if !state.held.isEmpty || writeIsUnanswered || readIsUnanswered { state.held.append(.request(request)) } else { handle(request) }
                    guard !state.isTakenOver, !leftover.isEmpty, isReadingOn(unparsed: leftover[...]) else { return nil }
                    pauseReadingIfPipelinedTooDeep()
                    return leftover
                }
                // HTTP ends here: the route answers 101 and takes the connection over, or refuses and closes.
                if !state.held.isEmpty || writeIsUnanswered || readIsUnanswered {
                    state.held.append(.upgrade(request, leftover: leftover))
                } else {
                    upgrade(request, leftover: leftover)
                }
                return nil
            case .error(let error):
                state.isMidRequest = false
                fail(with: Problem.parseError(error, limits: parser.limits), head: parser.failedRequestHead)
                return nil
            }
            guard isReadingOn(unparsed: input) else { return nil }
        }
        pauseReadingIfPipelinedTooDeep()
        return nil
    }

    /// Answers a request the server refuses on its head (`HTTPServer.refusal(ofHead:)`) without
    /// reading its body, and closes after the answer: the body would come next.
    private func refusedOnHead(_ head: HTTPRequest) -> Bool {
        guard let refusal = server.refusal(ofHead: head) else { return false }
        parser.stop()
        state.isMidRequest = false
        fail(with: refusal.problem, head: head, principal: refusal.principal)
        return true
    }

    /// After a request: whether to go on reading what follows it (`unparsed`). Not once the
    /// connection is closed; nor while more than `maxUnsentBytes` of answers wait for the client:
    /// the answers so far go to the kernel now, and past the bound what it cannot take waits, and
    /// so does the rest of the input, until they drain.
    private func isReadingOn<Bytes: Collection<UInt8>>(unparsed: Bytes) -> Bool {
        if tcp.isClosed { return false }
        guard tcp.queuedBytes + tcp.batchedBytes > server.configuration.maxUnsentBytes else { return true }
        guard tcp.sendBatchedBytes() else { return false }
        guard tcp.queuedBytes > server.configuration.maxUnsentBytes else { return true }
        state.unparsed = Array(unparsed)
        state.isOutputBlocked = true
        tcp.stopReading()
        return false
    }

    private func pauseReadingIfPipelinedTooDeep() {
        if pendingCount >= server.configuration.maxPipelinedRequests && !state.isReadingPaused {
            state.isReadingPaused = true
            tcp.stopReading()
        }
    }

    override func connectionDidDrain(_ connection: TCPConnection) {
        guard state.isOutputBlocked, !state.isClosing else { return }
        state.isOutputBlocked = false
        let unparsed = state.unparsed
        state.unparsed = []
        if !unparsed.isEmpty { unparsed.withUnsafeBytes { self.connection(connection, didRead: $0) } }
        if !state.isOutputBlocked && !state.isReadingPaused && !tcp.isClosed { tcp.startReading() }
    }

    override func connectionDidEnd(_ connection: TCPConnection) {
        // The client sends no more; it still gets the answers to what it sent.
        if case .error(let error)? = parser.finish() {
            state.isMidRequest = false
            return fail(with: Problem.parseError(error, limits: parser.limits), head: parser.failedRequestHead)
        }
        state.isMidRequest = false
        if !hasPendingResponses {
            // Answers still on their way to the peer go first.
            if tcp.queuedBytes > 0 { tcp.closeAfterWriting() } else { tcp.close() }
        } else if !state.held.isEmpty {
            state.peerEnded = true
        } else {
            state.closeAfter = state.nextSequence - 1
        }
    }

    override func connectionDidClose(_ connection: TCPConnection) {
        spareContext = nil
        server.connectionClosed(self)
    }

    // MARK: Requests and responses

    private func handle(_ request: HTTPRequest) {
        let sequence = state.nextSequence
        state.nextSequence += 1
        if !request.keepAlive || (state.peerEnded && state.held.isEmpty) { state.closeAfter = sequence }
        let isRead = Self.isRead(request)
        if !isRead { state.lastWriteSequence = sequence }
        server.handle(request, from: self, sequence: sequence)
        if isRead && state.firstSlotSequence <= sequence { state.awaitedRead = sequence }
    }

    private func upgrade(_ request: HTTPRequest, leftover: [UInt8]) {
        state.upgradeLeftover = leftover
        state.closeAfter = state.nextSequence
        handle(request)
    }

    /// Hands the server what was held, in order, as far as the writes before each allow.
    private func dispatchHeld() {
        guard !state.isDispatchingHeld else { return }
        state.isDispatchingHeld = true
        defer { state.isDispatchingHeld = false }
        while let next = state.held.first, !tcp.isClosed {
            switch next {
            case .request(let request):
                if readIsUnanswered || (Self.isRead(request) && writeIsUnanswered) { return }
                state.held.removeFirst()
                handle(request)
            case .upgrade(let request, let leftover):
                if writeIsUnanswered || readIsUnanswered { return }
                state.held.removeFirst()
                return upgrade(request, leftover: leftover)
            case .failure(let problem, let head, let principal):
                state.held.removeFirst()
                return fail(with: problem, head: head, principal: principal)
            }
        }
    }

    /// Answers a broken request (its response follows those already due) and closes.
    private func fail(with problem: Problem, head: HTTPRequest?, principal: Principal? = nil) {
        if !state.held.isEmpty && !state.isDispatchingHeld {
            // After the requests held before it.
            state.held.append(.failure(problem, head: head, principal: principal))
            return
        }
        let sequence = state.nextSequence
        state.nextSequence += 1
        state.closeAfter = sequence
        server.handleFailure(problem, head: head, principal: principal, from: self, sequence: sequence)
    }

    /// The server answers 408 to a request that trickles in, or to an idle connection, and closes.
    func timeOut() {
        guard !tcp.isClosed, !state.isClosing else { return }
        let seconds = state.isMidRequest ? server.configuration.requestTimeout : server.configuration.idleTimeout
        state.isMidRequest = false
        tcp.stopReading()
        fail(with: .requestTimeout(seconds: seconds), head: nil)
    }

    /// The answer to the request of `context`, ready now: written at its turn.
    func complete(_ context: RequestContext, _ response: HTTPResponse) {
        server.record(response, to: context)
        guard !tcp.isClosed, !state.isTakenOver else { return }
        let sequence = context.sequence
        if sequence == state.firstSlotSequence {
            // Due now (always, without pipelining): written straight away, never stored, so the
            // response is not copied into the queue and out again.
            if !state.slots.isEmpty { state.slots.removeFirst() }
            state.firstSlotSequence += 1
            guard send(response, sequence: sequence, isHead: context.isHead, keepAliveHeader: context.keepAliveHeader) else { return }
        } else {
            let index = Int(sequence - state.firstSlotSequence)
            if state.slots.count <= index { state.slots.append(contentsOf: repeatElement(nil, count: index + 1 - state.slots.count)) }
            state.slots[index] = Slot(response: response, isHead: context.isHead, keepAliveHeader: context.keepAliveHeader)
        }
        // Answers that were waiting for this one.
        while !state.slots.isEmpty, state.slots[0] != nil {
            // Moved out rather than copied: a copy would retain the response's buffers once more.
            let slot = state.slots[0].take()!
            let current = state.firstSlotSequence
            state.slots.removeFirst()
            state.firstSlotSequence += 1
            guard send(slot.response, sequence: current, isHead: slot.isHead, keepAliveHeader: slot.keepAliveHeader) else { return }
        }
        if !state.held.isEmpty { dispatchHeld() }
        if tcp.isClosed { return }
        if state.continueOwed && !hasPendingResponses {
            state.continueOwed = false
            tcp.write(Self.continueLine)
        }
        if state.isReadingPaused && pendingCount < server.configuration.maxPipelinedRequests {
            state.isReadingPaused = false
            if !state.isOutputBlocked { tcp.startReading() }
        }
        if !hasPendingResponses && !state.isMidRequest {
            deadline = server.now + server.idleTimeoutMilliseconds
        }
    }

    /// Writes the answer to request `sequence`; false when the connection is done with HTTP
    /// (closing, or handed over to another protocol).
    private func send(_ response: HTTPResponse, sequence: UInt64, isHead: Bool, keepAliveHeader: Bool) -> Bool {
        if let takeover = response.takeover {
            server.write(response, isHead: false, closing: false, keepAliveHeader: false, to: tcp)
            state.isTakenOver = true
            state.held.removeAll()
            spareContext = nil
            server.connectionUpgraded(self, to: takeover.attach(tcp, state.upgradeLeftover) { [server, tcp] in server.upgradedConnectionClosed(tcp) })
            return false
        }
        // While the server shuts down, the last answer due is the last one: it says so.
        let closing = state.closeAfter == sequence || (server.isShuttingDown && !hasPendingResponses && !state.isMidRequest)
        server.write(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, to: tcp)
        if closing {
            state.isClosing = true
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
