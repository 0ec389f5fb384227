import Foundation
import Logging

/// An HTTP/1.1 server on one event loop: it accepts connections, enforces the limits of its
/// configuration, routes requests through its middleware, and writes the answers.
///
/// Everything here runs on the loop thread, which owns every connection.
public final class HTTPServer {
    public let loop: EventLoop
    public let configuration: ServerConfiguration
    let logger: Logger
    private let routes: RouteTable
    private let responder: HTTPResponder
    /// The middleware that may refuse a request on its head, before its body is read.
    private let headChecks: [any HeadCheckingMiddleware]
    /// The server's listeners, connections and counters, as they change on the loop.
    private struct State {
        var listener: TCPListener?
        /// The TLS listener beside the plain one (`tlsPort`).
        var tlsListener: TCPListener?
        /// What new TLS connections start from; a reload replaces it, open connections keep theirs.
        var tlsContext: TLSContext?
        var connectionRate: TokenBucket?
        var connections: [ObjectIdentifier: HTTPServerConnection] = [:]
        /// Connections that speak another protocol now (WebSocket, event streams), by their TCP connection.
        var upgraded: [ObjectIdentifier: Upgraded] = [:]
        var lastRequestID: UInt64 = 0
        /// Set by `shutdown`: called once every connection is gone.
        var onDrained: (() -> Void)?
        /// During a shutdown, when the connections still open are closed whatever they are doing.
        var closeIdleBefore: UInt64?
        /// Refused TLS connections waiting for their handshakes to answer them (`RefusedTLSConnection`).
        var tlsRefusals = 0
        /// Connections the kernel could not hand over since the last line said so, and when it did.
        var acceptFailures = 0
        var acceptFailureLoggedAt: UInt64 = 0
    }

    /// A connection taken over by another protocol, and the TCP connection under it.
    struct Upgraded {
        let tcp: TCPConnection
        let connection: any UpgradedConnection
    }
    /// @exclusivity(unchecked): touched on the loop thread only, and no callback runs while one of
    /// its fields is being modified; a dynamic exclusivity check on each access would cost more than
    /// the work it guards.
    @exclusivity(unchecked) private var state: State
    /// Apart from `state`, as the response is written during `withLine` and writing may close a
    /// connection, which changes `state`: the two accesses must not overlap. @exclusivity(unchecked)
    /// as `state`.
    @exclusivity(unchecked) private var date = HTTPDate()
    /// Checks the connections' deadlines a few times per the shortest of them.
    private var sweepTimer: LoopTimer?
    private let encoder = HTTPResponseEncoder()

    let requestTimeoutMilliseconds: UInt64
    let idleTimeoutMilliseconds: UInt64
    /// The server's counters, for `/metrics`.
    public let metrics: ServerMetrics

    /// What new TLS connections start from; a reload replaces it, open connections keep theirs.
    public var tlsContext: TLSContext? { state.tlsContext }

    /// The port the server listens on (the one the system chose when configured with 0).
    public var port: Int { state.listener?.port ?? 0 }
    /// The port of the TLS listener beside the plain one, when there is one.
    public var tlsPort: Int? { state.tlsListener?.port }
    public var connectionCount: Int { state.connections.count + state.upgraded.count }

    /// Creates the server on `loop`'s thread; `start()` binds and listens.
    /// With `tls`, connections speak TLS: on `configuration.port`, or on `configuration.tlsPort`
    /// beside plain HTTP on `port` when that is set.
    public init(loop: EventLoop, configuration: ServerConfiguration, router: Router, middleware: [any HTTPMiddleware],
                metrics: ServerMetrics = ServerMetrics(), tls: TLSContext? = nil, logger: Logger) {
        precondition(loop.isCurrent)
        self.loop = loop
        state = State(
            tlsContext: tls,
            connectionRate: configuration.maxConnectionRate.map {
                TokenBucket(limit: RateLimit(perSecond: $0, burst: 2 * $0), now: MonotonicClock.nanoseconds())
            })
        self.metrics = metrics
        metrics.routes = router.paths
        self.configuration = configuration
        routes = router.table
        self.logger = logger
        requestTimeoutMilliseconds = milliseconds(seconds: configuration.requestTimeout)
        idleTimeoutMilliseconds = milliseconds(seconds: configuration.idleTimeout)
        headChecks = middleware.compactMap { $0 as? any HeadCheckingMiddleware }
        responder = middleware.chained { [routes] request, context, respond in
            routes.respond(to: request, context: context, respond: respond)
        }
        // Unowned: `/metrics`, the one reader, is a route of this server, so the server is alive when it is read.
        metrics.openConnections = { [unowned self] in connectionCount }
    }

    /// Binds and listens; throws if the address cannot be bound.
    public func start() throws(UVError) {
        let onlyTLS = state.tlsContext != nil && configuration.tlsPort == nil
        state.listener = try TCPListener(loop: loop, host: configuration.host, port: configuration.port) { [unowned self] tcp in
            accept(tcp, tls: onlyTLS)
        }
        state.listener?.onAcceptError = { [unowned self] status in acceptFailed(status) }
        if state.tlsContext != nil, let tlsPort = configuration.tlsPort {
            do {
                state.tlsListener = try TCPListener(loop: loop, host: configuration.host, port: tlsPort) { [unowned self] tcp in
                    accept(tcp, tls: true)
                }
                state.tlsListener?.onAcceptError = { [unowned self] status in acceptFailed(status) }
            } catch {
                state.listener?.close()
                state.listener = nil
                throw error
            }
        }
        // Deadlines (requests, idle connections, pings, heartbeats) are checked a few times per the
        // shortest of them: cheap, and no timer per connection.
        let shortest = [configuration.requestTimeout, configuration.idleTimeout, configuration.pingInterval,
                        configuration.pingTimeout, configuration.heartbeatInterval].min()!
        let period = max(10, milliseconds(seconds: shortest) / 4)
        let sweepTimer = LoopTimer(loop: loop) { [unowned self] in sweep() }
        sweepTimer.start(after: period, repeat: period)
        self.sweepTimer = sweepTimer
    }

    /// Stops accepting, closes idle connections, lets the others finish what they have started,
    /// then calls `completion` (or at `deadline` seconds, closes what is left first).
    public func shutdown(deadline seconds: Double = 10, completion: @escaping () -> Void) {
        state.listener?.close()
        state.listener = nil
        state.tlsListener?.close()
        state.tlsListener = nil
        state.onDrained = completion
        for connection in state.connections.values where !connection.isMidRequest && !connection.hasPendingResponses {
            connection.tcp.close()
        }
        for upgraded in state.upgraded.values { upgraded.connection.serverIsShuttingDown() }
        let forceAt = now + milliseconds(seconds: seconds)
        state.closeIdleBefore = forceAt
        checkDrained()
    }

    /// True once `shutdown` began: connections close as soon as they have answered what they read.
    var isShuttingDown: Bool { state.onDrained != nil }

    /// Loop time in milliseconds.
    var now: UInt64 { loop.now }

    /// Makes new TLS connections use `context`; connections already open keep the one they have.
    public func replaceTLSContext(_ context: TLSContext) {
        precondition(loop.isCurrent)
        state.tlsContext = context
    }

    /// The answer, in plaintext, to plain HTTP sent to a TLS port.
    private static let plainHTTPOnTLSAnswer: [UInt8] = {
        let problem = Problem.malformedRequest("a plain HTTP request arrived, but this port speaks TLS: use https:// (or wss://), not http://")
        let body = problem.json.jsonBytes
        return Array("HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
    }()

    private func accept(_ tcp: TCPConnection, tls: Bool) {
        if tls, let tlsContext = state.tlsContext { tcp.startTLS(TLSSession(context: tlsContext), plainHTTPAnswer: Self.plainHTTPOnTLSAnswer) }
        guard connectionCount < configuration.maxConnections else {
            logger.warning("connection refused: too many connections", metadata: ["limit": "\(configuration.maxConnections)"])
            metrics.recordRefusedConnection(reason: "max-connections")
            return refuse(tcp, Problem.tooManyConnections(limit: configuration.maxConnections), tls: tls)
        }
        if state.connectionRate != nil, let wait = state.connectionRate!.take(now: MonotonicClock.nanoseconds()) {
            metrics.recordRefusedConnection(reason: "connection-rate")
            return refuse(tcp, Problem.rateLimited("the server accepts \(PrometheusText.format(state.connectionRate!.limit.perSecond)) new connections per second", retryAfter: wait), tls: tls)
        }
        metrics.connectionsAccepted += 1
        let connection = HTTPServerConnection(tcp: tcp, server: self)
        // The handshake is part of the first request: a client that stalls in it is dropped at
        // the request timeout, not left for the idle one.
        if tls { connection.deadline = now + requestTimeoutMilliseconds }
        state.connections[ObjectIdentifier(connection)] = connection
    }

    /// A connection the kernel could not hand over (out of file descriptors, most often): libuv
    /// closed it unanswered. Counted, and said in the log at most every 10 s.
    private func acceptFailed(_ status: Int32) {
        metrics.recordRefusedConnection(reason: status == -EMFILE || status == -ENFILE ? "open-files" : "accept-failed")
        state.acceptFailures += 1
        let now = self.now
        guard now >= state.acceptFailureLoggedAt + 10_000 || state.acceptFailureLoggedAt == 0 else { return }
        state.acceptFailureLoggedAt = now
        logger.error("connections refused: the server cannot accept them", metadata: [
            "error": "\(UVError(code: status, operation: "accept"))", "refused": "\(state.acceptFailures)", "open": "\(connectionCount)",
            "hint": "raise the open files limit (LimitNOFILE) above --max-connections, or lower --max-connections",
        ])
        state.acceptFailures = 0
    }

    /// Answers a connection it will not serve, and closes it: at once in plain TCP, once the
    /// handshake is done over TLS. Past `maxTLSRefusals` waiting for their handshakes, a TLS
    /// connection is closed unanswered: each holds a TLS session until its handshake ends or times
    /// out, and refusals must not hold more than the connections they keep out.
    private func refuse(_ tcp: TCPConnection, _ problem: Problem, tls: Bool) {
        let answer = { [unowned self] (tcp: TCPConnection) in
            write(problem.response, isHead: false, closing: true, keepAliveHeader: false, to: tcp)
            tcp.closeAfterWriting()
        }
        guard tls, tcp.tls != nil else { return answer(tcp) }
        guard state.tlsRefusals < Self.maxTLSRefusals else { return tcp.close() }
        state.tlsRefusals += 1
        RefusedTLSConnection(tcp: tcp, loop: loop, timeoutMilliseconds: requestTimeoutMilliseconds, answer: answer,
                             closed: { [unowned self] in state.tlsRefusals -= 1 })
    }

    /// How many refused TLS connections may wait for their handshakes at a time, to be answered.
    static let maxTLSRefusals = 64

    func connectionClosed(_ connection: HTTPServerConnection) {
        state.connections[ObjectIdentifier(connection)] = nil
        checkDrained()
    }

    func connectionUpgraded(_ connection: HTTPServerConnection, to upgraded: any UpgradedConnection) {
        state.connections[ObjectIdentifier(connection)] = nil
        state.upgraded[ObjectIdentifier(connection.tcp)] = Upgraded(tcp: connection.tcp, connection: upgraded)
        if isShuttingDown { upgraded.serverIsShuttingDown() }
    }

    /// An upgraded connection's TCP connection closed.
    public func upgradedConnectionClosed(_ tcp: TCPConnection) {
        state.upgraded[ObjectIdentifier(tcp)] = nil
        checkDrained()
    }

    private func checkDrained() {
        if let onDrained = state.onDrained, state.connections.isEmpty, state.upgraded.isEmpty {
            state.onDrained = nil
            sweepTimer = nil
            onDrained()
        }
    }

    /// Passes request `sequence` of `connection` through the middleware to its route; the answer goes
    /// back to the connection.
    func handle(_ request: HTTPRequest, from connection: HTTPServerConnection, sequence: UInt64) {
        state.lastRequestID += 1
        let isHead = request.method == .head
        let keepAliveHeader = request.keepAlive && request.version == .http1_0
        let context: RequestContext
        // The connection's previous context, when its request is done with it and nothing kept it.
        if isKnownUniquelyReferenced(&connection.spareContext) {
            context = connection.spareContext!
            context.reuse(id: state.lastRequestID, receivedAt: MonotonicClock.nanoseconds(), sequence: sequence, isHead: isHead, keepAliveHeader: keepAliveHeader)
        } else {
            context = RequestContext(id: state.lastRequestID, receivedAt: MonotonicClock.nanoseconds(), connection: connection, sequence: sequence,
                                     isHead: isHead, keepAliveHeader: keepAliveHeader)
            connection.spareContext = context
        }
        routes.route(request, into: context)
        responder(request, context) { response in context.connection?.complete(context, response) }
    }

    /// Whether a connection's requests are shown to the server by their heads before their bodies
    /// are read (`refusal(ofHead:)`).
    var checksHeads: Bool { !headChecks.isEmpty }

    /// Why the request with `head`, whose body is still to come, is refused before it is read; nil
    /// to read it.
    func refusal(ofHead head: HTTPRequest) -> HeadRefusal? {
        guard !headChecks.isEmpty else { return nil }
        let scope = routes.scope(of: head)
        for check in headChecks {
            if let refusal = check.refusal(ofHead: head, scope: scope) { return refusal }
        }
        return nil
    }

    /// Answers what a connection could not take as a request (malformed, too large, too slow) through
    /// the middleware too, so the answer is logged and carries CORS headers like any other.
    /// `head` is the request's head when it was read whole, `principal` who sent it when known.
    func handleFailure(_ problem: Problem, head: HTTPRequest?, principal: Principal? = nil, from connection: HTTPServerConnection, sequence: UInt64) {
        state.lastRequestID += 1
        let context = RequestContext(id: state.lastRequestID, receivedAt: MonotonicClock.nanoseconds(), connection: connection, sequence: sequence,
                                     isHead: false, keepAliveHeader: false)
        context.principal = principal
        context.endpoint = Endpoint(respond: Router.answer(problem))
        responder(head ?? HTTPRequest(method: .other("-"), target: "-"), context) { response in context.connection?.complete(context, response) }
    }

    /// The path of the route numbered `index`.
    func routePath(_ index: Int) -> String { routes.path(at: index) }

    /// Counts an answer for `/metrics`, by route, status and duration.
    func record(_ response: HTTPResponse, to context: RequestContext) {
        metrics.recordRequest(routeIndex: context.routeIndex, status: response.status.code,
                              seconds: Double(MonotonicClock.nanoseconds() - context.receivedAt) / 1e9)
    }

    func write(_ response: HTTPResponse, isHead: Bool, closing: Bool, keepAliveHeader: Bool, to tcp: TCPConnection) {
        date.withLine(at: Int(time(nil))) { line in
            // Straight into the loop's write batch: no copy on the way.
            let maximum = HTTPResponseEncoder.maximumSize(of: response, isHead: isHead, date: line)
            let written = tcp.write(atMost: maximum) { destination in
                HTTPResponseEncoder.encode(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, date: line, into: destination)
            }
            if !written {
                // Larger than the whole batch (a large state, say): through the server's own buffer.
                encoder.encode(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, date: line)
                tcp.write(encoder.bytes)
            }
        }
    }

    private func sweep() {
        let now = self.now
        if let force = state.closeIdleBefore, now >= force {
            for connection in state.connections.values { connection.tcp.close() }
            for upgraded in state.upgraded.values { upgraded.connection.close() }
            return
        }
        for upgraded in state.upgraded.values { upgraded.connection.tick(now: now) }
        // A client that reads none of what waits for it for an idle timeout is gone or hostile: it
        // is dropped, not held for good (a subscriber too: pinging does not make it read).
        for connection in state.connections.values where connection.tcp.writeStalledMilliseconds(now: now) >= idleTimeoutMilliseconds {
            logger.notice("connection closed: its client read none of its answers for the idle timeout", metadata: ["unsent": "\(connection.tcp.queuedBytes)"])
            connection.tcp.close()
        }
        for upgraded in state.upgraded.values where upgraded.tcp.writeStalledMilliseconds(now: now) >= idleTimeoutMilliseconds {
            logger.notice("subscriber closed: its client read none of what was sent to it for the idle timeout", metadata: ["unsent": "\(upgraded.tcp.queuedBytes)"])
            upgraded.tcp.close()
        }
        for connection in state.connections.values where connection.deadline <= now && !connection.hasPendingResponses && !connection.isClosing {
            if state.onDrained != nil {
                connection.tcp.close()
            } else {
                connection.timeOut()
            }
        }
    }
}
