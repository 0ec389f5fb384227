/// What the server knows about a request beyond its bytes; middleware fills it in as the request
/// passes (the auth middleware sets `principal`, say).
public final class RequestContext {
    // @exclusivity(unchecked) on the stored properties below: a context lives on the loop thread, and
    // its fields are set by the middleware and router between calls, never during one;
    // a dynamic exclusivity check on each access costs more than the work it guards here.
    /// Unique per server run, for logs and the `X-Request-Id` header.
    @exclusivity(unchecked) public private(set) var id: UInt64
    /// Loop time (ns, monotonic) when the request was complete.
    @exclusivity(unchecked) public private(set) var receivedAt: UInt64
    /// The authenticated client, if any.
    @exclusivity(unchecked) public var principal: Principal?
    /// The path of the route the request matched, if any (for logs and metrics). Looked up when
    /// asked: most requests never are, and storing it would retain and release it for each.
    public var route: String? { routeIndex < 0 ? nil : connection?.routePath(routeIndex) }
    /// The route's number in its router; -1 when the request matched none.
    @exclusivity(unchecked) var routeIndex = -1
    /// What the matched route needs of the client; nil when anyone may use it.
    @exclusivity(unchecked) public internal(set) var scope: Scope?
    /// Where the request goes after the middleware: the number of its route's entry in the route
    /// table, or (when -1) `endpoint`, an answer of the router's own or of the server's.
    @exclusivity(unchecked) var routeEntry = -1
    @exclusivity(unchecked) var endpoint: Endpoint?

    /// Where the answer goes: the connection that read the request, the request's place in its
    /// order, and how the answer is to be framed. Kept here so that the closure that carries the
    /// answer back captures this one object, which needs no allocation of its own. Nil only for a
    /// context made without a server, to test routing and middleware on their own.
    let connection: HTTPServerConnection?
    @exclusivity(unchecked) private(set) var sequence: UInt64
    @exclusivity(unchecked) private(set) var isHead: Bool
    /// An HTTP/1.0 client that asked to keep the connection: its answer says `Connection: keep-alive`.
    @exclusivity(unchecked) private(set) var keepAliveHeader: Bool

    init(id: UInt64, receivedAt: UInt64, connection: HTTPServerConnection?, sequence: UInt64, isHead: Bool, keepAliveHeader: Bool) {
        self.id = id
        self.receivedAt = receivedAt
        self.connection = connection
        self.sequence = sequence
        self.isHead = isHead
        self.keepAliveHeader = keepAliveHeader
    }

    /// Makes this context, which nobody holds any more, the one of the next request on its connection:
    /// a keep-alive client's requests then cost no allocation for it.
    func reuse(id: UInt64, receivedAt: UInt64, sequence: UInt64, isHead: Bool, keepAliveHeader: Bool) {
        self.id = id
        self.receivedAt = receivedAt
        self.sequence = sequence
        self.isHead = isHead
        self.keepAliveHeader = keepAliveHeader
        principal = nil
        routeIndex = -1
        scope = nil
        routeEntry = -1
        endpoint = nil
    }
}

/// Answers requests. Called on the loop thread; `respond` must be called exactly once, now or later
/// (on the loop thread too).
public typealias HTTPResponder = (_ request: HTTPRequest, _ context: RequestContext, _ respond: @escaping (HTTPResponse) -> Void) -> Void

/// A stage every request passes through on its way to the router, in the shape
/// `handle(request, context, next)`: it may answer itself, or call `next` and look at, or change,
/// what comes back.
public protocol HTTPMiddleware {
    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void)
}

/// A responder in an object. Function values kept in generic storage (an Optional, an Array, a
/// `reduce`) are stored in their most general form, and every call through them wraps the `respond`
/// argument in a new thunk: an allocation per request per layer. A field keeps them concrete; and
/// as a constant of an object the route table holds, it is called without being retained.
final class Endpoint {
    let respond: HTTPResponder

    init(respond: @escaping HTTPResponder) {
        self.respond = respond
    }
}

extension Array where Element == any HTTPMiddleware {
    /// The responder that runs these middlewares, first to last, in front of `endpoint`.
    func chained(to endpoint: @escaping HTTPResponder) -> HTTPResponder {
        var responder = endpoint
        for middleware in reversed() {
            let next = responder
            responder = { request, context, respond in middleware.handle(request, context: context, next: next, respond: respond) }
        }
        return responder
    }
}
