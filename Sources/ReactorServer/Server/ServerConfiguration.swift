/// How an `HTTPServer` listens and what it tolerates.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 asks the system for a free port (the server reports the one it got).
    public var port = 7070
    public var limits = HTTPLimits()
    /// Connections beyond this are answered 503 and closed.
    public var maxConnections = 10_000
    /// A request must arrive whole within this many seconds of its first byte (slow clients get 408).
    public var requestTimeout = 10.0
    /// A keep-alive connection with no request for this long is answered 408 and closed.
    public var idleTimeout = 60.0
    /// Requests a client may pipeline ahead of the responses before the server stops reading from it.
    public var maxPipelinedRequests = 64
    public var tokens: [AccessToken] = []
    /// Events per second (and burst) each token may fire, unless the token has a limit of its own.
    public var eventRateLimit: RateLimit?
    /// New connections per second the server accepts (bursts up to twice that); beyond, 429 and close.
    public var maxConnectionRate: Double?
    /// Origins allowed to call the API from a browser; `["*"]` allows any.
    public var corsOrigins: [String] = []
    /// How long an `Idempotency-Key` is remembered, and how many at most.
    public var idempotencyWindow = 300.0
    public var idempotencyCapacity = 10_000

    // Subscriptions (WebSocket and Server-Sent Events).
    /// How many recent transitions are kept for subscribers that reconnect with `since`.
    public var resumeWindow = 1024
    /// Bytes a subscriber may leave unsent before the slow-consumer policy applies.
    public var maxUnsentBytes = 1 << 20
    public var slowConsumerPolicy = SlowConsumerPolicy.snapshot
    /// Seconds of silence before a WebSocket peer is pinged, and for its pong.
    public var pingInterval = 30.0
    public var pingTimeout = 10.0
    /// Seconds between heartbeat comments on an event stream.
    public var heartbeatInterval = 15.0
    /// Largest WebSocket message (and frame) a client may send.
    public var maxMessageBytes = 1 << 20
    /// Origins allowed to open a WebSocket (browsers send one; other clients need not); nil allows
    /// any when the server has tokens, and without tokens the server's own origin and
    /// `corsOrigins`: a page elsewhere must not read and fire in the local browser's name.
    public var webSocketOrigins: Set<String>?
    /// Answers only requests whose Host is a loopback name (`LoopbackHostMiddleware`): reactord's
    /// setting for a server with no tokens, unless `--insecure`.
    public var loopbackHostsOnly = false
    /// Serves `/echo`, a WebSocket echo endpoint for conformance testing (Autobahn). Off by default.
    public var webSocketEcho = false
    /// TLS: the certificate chain and key (PEM). With both, the server speaks TLS on `port`, or on
    /// `tlsPort` beside plain HTTP on `port` when that is set too.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    public var tlsPort: Int?
    /// Agrees to permessage-deflate (RFC 7692) when a WebSocket client offers it (browsers do).
    public var webSocketCompression = true
    /// Messages shorter than this go out plain where they would be compressed on their own (a
    /// selection's shared stream compresses every push: there they shrink to a few bytes).
    public var compressionMinBytes = 256
    /// Where the line logged for each request and each event goes (see `RoutineLogLines`).
    public var routineLogLines = RoutineLogLines.logger

    public init() {}
}

/// What happens to a subscriber that does not read fast enough.
public enum SlowConsumerPolicy: String, Sendable, CaseIterable {
    /// Drop its queued patches; once its socket drains it gets one fresh snapshot.
    case snapshot
    /// Close it with code 4008.
    case close
}
