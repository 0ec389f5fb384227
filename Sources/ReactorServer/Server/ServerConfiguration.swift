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
    /// Origins allowed to call the API from a browser; `["*"]` allows any.
    public var corsOrigins: [String] = []
    /// How long an `Idempotency-Key` is remembered, and how many at most.
    public var idempotencyWindow = 300.0
    public var idempotencyCapacity = 10_000

    public init() {}
}
