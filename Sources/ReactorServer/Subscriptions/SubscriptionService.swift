import Logging
import Reactor

/// The live endpoints of a hosted state: `GET /subscribe` (WebSocket), `GET /stream` (Server-Sent
/// Events), and, when enabled, `GET /echo` (a WebSocket echo for conformance suites).
final class SubscriptionService<StateType: HostedState> {
    let hub: SubscriptionHub<StateType>
    /// Where events fired over a subscriber's WebSocket go.
    private let fire: FireEvent
    private let loop: EventLoop
    private let configuration: ServerConfiguration
    private let logger: Logger
    /// permessage-deflate's compressor for messages on their own, shared by every WebSocket of this
    /// server (made at the first).
    private lazy var compressor = MessageCompressor()
    /// Each selection's shared deflate stream, while a subscriber holds it.
    private var sharedStreams: [SubscriptionSelection: Weak<SharedDeflateStream>] = [:]

    static var subprotocol: String { "reactor.v1" }

    /// `hub` is the one the commit pipeline publishes to: subscribers see published states only
    /// (with a journal, states already on disk).
    /// Waits for a version another node of a cluster acknowledged (nil outside a cluster).
    private let catchUp: ((UInt64, @escaping () -> Void) -> Void)?

    init(hub: SubscriptionHub<StateType>, fire: @escaping FireEvent, loop: EventLoop,
         configuration: ServerConfiguration, catchUp: ((UInt64, @escaping () -> Void) -> Void)? = nil, logger: Logger) {
        self.fire = fire
        self.catchUp = catchUp
        self.hub = hub
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
    }

    func register(in router: inout Router) {
        router.add(.get, "/subscribe", scope: .read) { [unowned self] request, context, respond in
            whenCaughtUp(with: request, lastEventID: nil) { [unowned self] in respond(subscribe(request, context: context)) }
        }
        router.add(.get, "/stream", scope: .read) { [unowned self] request, _, respond in
            whenCaughtUp(with: request, lastEventID: request.headers["Last-Event-ID"]) { [unowned self] in respond(stream(request)) }
        }
        if configuration.webSocketEcho {
            router.add(.get, "/echo", scope: nil) { [unowned self] request, _, respond in
                respond(echo(request))
            }
        }
    }

    /// In a cluster, a subscriber resuming from a version this node has not applied yet (one it had
    /// from another node) is answered once this node has it, or after a short wait: rather than a
    /// snapshot of an older version, it gets what it missed.
    private func whenCaughtUp(with request: HTTPRequest, lastEventID: String?, _ proceed: @escaping () -> Void) {
        guard let catchUp, case .success(let parsed) = SubscriptionSelection.parse(request, lastEventID: lastEventID),
              let since = parsed.since, parsed.history == nil || parsed.history == hub.history else { return proceed() }
        catchUp(since, proceed)
    }

    /// See `ServerConfiguration.webSocketOrigins`.
    private var webSocketOrigins: Set<String>? {
        if let origins = configuration.webSocketOrigins { return origins }
        guard configuration.tokens.isEmpty, !configuration.corsOrigins.contains("*") else { return nil }
        return Set(configuration.corsOrigins)
    }

    private var webSocketLimits: WebSocketLimits {
        WebSocketLimits(maxFramePayload: configuration.maxMessageBytes, maxMessageSize: configuration.maxMessageBytes)
    }

    private var timing: WebSocketServerConnection.Timing {
        WebSocketServerConnection.Timing(pingAfter: milliseconds(seconds: configuration.pingInterval), pongWithin: milliseconds(seconds: configuration.pingTimeout))
    }

    private func subscribe(_ request: HTTPRequest, context: RequestContext) -> HTTPResponse {
        let asked: SubscriptionSelection.Request
        switch SubscriptionSelection.parse(request) {
        case .success(let parsed): asked = parsed
        case .failure(let problem): return problem.response
        }
        let selection = asked.selection
        let principal = context.principal
        let mayFire = configuration.tokens.isEmpty || principal?.token.allows(.fire) == true
        return handshake(request, subprotocols: [Self.subprotocol], selection: selection) { [unowned self] tcp, leftover, deflate, closed in
            let connection = WebSocketServerConnection(tcp: tcp, loop: loop, closed: closed, limits: webSocketLimits, timing: timing, deflate: deflate)
            let subscriber = WebSocketSubscriber(connection: connection, hub: hub, fire: fire, selection: selection,
                                                 principal: principal, mayFire: mayFire, configuration: configuration, logger: logger)
            subscriber.start(since: asked.since, history: asked.history, leftover: leftover)
            return connection
        }
    }

    private func echo(_ request: HTTPRequest) -> HTTPResponse {
        handshake(request, subprotocols: [], selection: nil) { [unowned self] tcp, leftover, deflate, closed in
            let connection = WebSocketServerConnection(tcp: tcp, loop: loop, closed: closed, limits: webSocketLimits, timing: timing, deflate: deflate)
            connection.handler = WebSocketEcho()
            connection.start(leftover: leftover)
            return connection
        }
    }

    /// The 101 that hands the connection to `attach` (with permessage-deflate, if agreed, and the
    /// shared stream of `selection` when the client lets the server keep its context), or the
    /// problem with the handshake.
    private func handshake(_ request: HTTPRequest, subprotocols: [String], selection: SubscriptionSelection?,
                           attach: @escaping (TCPConnection, [UInt8], WebSocketServerConnection.Deflate?, @escaping () -> Void) -> any UpgradedConnection) -> HTTPResponse {
        guard request.headers.contains("Upgrade") else {
            return Problem(status: .upgradeRequired, kind: "websocket-required", title: "WebSocket required",
                           detail: "\(request.path) speaks WebSocket: open it with a WebSocket client (Upgrade: websocket)",
                           headers: [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", WebSocketHandshake.version)]).response
        }
        let policy = WebSocketHandshakePolicy(subprotocols: subprotocols, allowedOrigins: webSocketOrigins, allowsMissingOrigin: true)
        let version = request.version == .http1_1 ? "HTTP/1.1" : "HTTP/1.0"
        switch WebSocketHandshake.validate(method: request.method.name, httpVersion: version, header: { name in
            let values = request.headers.values(for: name)
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }, policy: policy) {
        case .failure(let failure):
            let status = failure.status == 426 ? HTTPStatus.upgradeRequired : failure.status == 403 ? .forbidden : .badRequest
            return Problem(status: status, kind: "websocket-handshake", title: "WebSocket handshake refused",
                           detail: failure.reason, headers: failure.responseHeaders).response
        case .success(let acceptance):
            var headers: [(name: String, value: String)] = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", acceptance.acceptKey)]
            if let subprotocol = acceptance.subprotocol { headers.append(("Sec-WebSocket-Protocol", subprotocol)) }
            var deflate: WebSocketServerConnection.Deflate?
            let offers = request.headers.values(for: "Sec-WebSocket-Extensions")
            if configuration.webSocketCompression, !offers.isEmpty, let negotiated = PerMessageDeflate.negotiate(offers: offers.joined(separator: ", ")) {
                let shared = negotiated.serverNoContextTakeover || negotiated.serverMaxWindowBits < 15 ? nil : selection.flatMap(sharedStream(for:))
                deflate = WebSocketServerConnection.Deflate(negotiated: negotiated, compressor: compressor, minimumBytes: configuration.compressionMinBytes,
                                                      shared: shared)
                headers.append(("Sec-WebSocket-Extensions", negotiated.responseHeaderValue))
            }
            return HTTPResponse(status: .switchingProtocols, headers: headers, takeover: ConnectionTakeover { tcp, leftover, closed in attach(tcp, leftover, deflate, closed) })
        }
    }

    /// At most this many selections get a shared deflate stream at once: each holds some 260 KiB,
    /// and a client picks the selection (`?path=`). Subscribers of others get messages compressed
    /// on their own.
    static var maximumSharedStreams: Int { 256 }

    /// The selection's shared deflate stream: the one its subscribers hold, or a new one (about
    /// 260 KiB of zlib state, per selection, not per subscriber); nil when `maximumSharedStreams`
    /// other selections hold one.
    private func sharedStream(for selection: SubscriptionSelection) -> SharedDeflateStream? {
        if let held = sharedStreams[selection]?.value { return held }
        sharedStreams = sharedStreams.filter { $0.value.value != nil }
        guard sharedStreams.count < Self.maximumSharedStreams else { return nil }
        let stream = SharedDeflateStream()
        sharedStreams[selection] = Weak(stream)
        return stream
    }

    private func stream(_ request: HTTPRequest) -> HTTPResponse {
        // HEAD gets the head a GET would, and no stream (RFC 9110 §9.3.2).
        if request.method == .head {
            if case .failure(let problem) = SubscriptionSelection.parse(request, lastEventID: request.headers["Last-Event-ID"]) { return problem.response }
            var head = HTTPResponse(status: .ok, contentType: .eventStream, headers: [("Cache-Control", "no-cache")])
            head.lengthIsUnknown = true
            return head
        }
        let asked: SubscriptionSelection.Request
        switch SubscriptionSelection.parse(request, lastEventID: request.headers["Last-Event-ID"]) {
        case .success(let parsed): asked = parsed
        case .failure(let problem): return problem.response
        }
        let takeover = ConnectionTakeover { [unowned self] tcp, _, closed in
            let subscriber = EventStreamSubscriber(tcp: tcp, loop: loop, closed: closed, hub: hub, selection: asked.selection,
                                                   configuration: configuration, logger: logger)
            subscriber.start(since: asked.since, history: asked.history)
            return subscriber
        }
        return HTTPResponse(status: .ok, contentType: .eventStream, headers: [("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")], takeover: takeover)
    }
}
