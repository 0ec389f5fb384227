/// What the server knows about a request beyond its bytes; middleware fills it in as the request
/// passes (the auth middleware sets `principal`, say).
public final class RequestContext {
    /// Everything the context holds about its request, set anew for each request it serves.
    private struct Fields {
        var id: UInt64
        var receivedAt: UInt64
        var sequence: UInt64
        var isHead: Bool
        var keepAliveHeader: Bool
        var principal: Principal?
        var routeIndex = -1
        var scope: Scope?
        var routeEntry = -1
        var endpoint: Endpoint?
    }
    /// @exclusivity(unchecked): a context lives on the loop thread, and its fields are set by the
    /// middleware and the router between calls, never during one; a dynamic exclusivity check on
    /// each access would cost more than the work it guards.
    @exclusivity(unchecked) private var fields: Fields

    /// Unique per server run, for logs and the `X-Request-Id` header.
    public var id: UInt64 { fields.id }
    /// Loop time (ns, monotonic) when the request was complete.
    public var receivedAt: UInt64 { fields.receivedAt }
    /// The authenticated client, if any.
    public var principal: Principal? {
        get { fields.principal }
        set { fields.principal = newValue }
    }
    /// The path of the route the request matched, if any (for logs and metrics). Looked up when
    /// asked: most requests never are, and storing it would retain and release it for each.
    public var route: String? { routeIndex < 0 ? nil : connection?.routePath(routeIndex) }
    /// The route's number in its router; -1 when the request matched none.
    var routeIndex: Int {
        get { fields.routeIndex }
        set { fields.routeIndex = newValue }
    }
    /// What the matched route needs of the client; nil when anyone may use it.
    public internal(set) var scope: Scope? {
        get { fields.scope }
        set { fields.scope = newValue }
    }
    /// Where the request goes after the middleware: the number of its route's entry in the route
    /// table, or (when -1) `endpoint`, an answer of the router's own or of the server's.
    var routeEntry: Int {
        get { fields.routeEntry }
        set { fields.routeEntry = newValue }
    }
    var endpoint: Endpoint? {
        get { fields.endpoint }
        set { fields.endpoint = newValue }
    }

    /// Where the answer goes: the connection that read the request, the request's place in its
    /// order, and how the answer is to be framed. Kept here so that the closure that carries the
    /// answer back captures this one object, which needs no allocation of its own. Nil only for a
    /// context made without a server, to test routing and middleware on their own.
    let connection: HTTPServerConnection?
    var sequence: UInt64 { fields.sequence }
    var isHead: Bool { fields.isHead }
    /// An HTTP/1.0 client that asked to keep the connection: its answer says `Connection: keep-alive`.
    var keepAliveHeader: Bool { fields.keepAliveHeader }

    init(id: UInt64, receivedAt: UInt64, connection: HTTPServerConnection?, sequence: UInt64, isHead: Bool, keepAliveHeader: Bool) {
        self.connection = connection
        fields = Fields(id: id, receivedAt: receivedAt, sequence: sequence, isHead: isHead, keepAliveHeader: keepAliveHeader)
    }

    /// Makes this context, which nobody holds any more, the one of the next request on its connection:
    /// a keep-alive client's requests then cost no allocation for it.
    func reuse(id: UInt64, receivedAt: UInt64, sequence: UInt64, isHead: Bool, keepAliveHeader: Bool) {
        // Field by field: a whole new `Fields` would be destroyed and copied through the value's
        // witnesses, not in a few stores.
        (fields.id, fields.receivedAt, fields.sequence) = (id, receivedAt, sequence)
        (fields.isHead, fields.keepAliveHeader) = (isHead, keepAliveHeader)
        (fields.principal, fields.routeIndex, fields.scope) = (nil, -1, nil)
        (fields.routeEntry, fields.endpoint) = (-1, nil)
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

/// A middleware that can refuse a request on its head alone, before its body is read: the server
/// asks it when a body is still to come, so that a client it would refuse (without a token, say)
/// cannot make the server hold a body's worth of memory, nor be told `100 Continue`. It still sees
/// the whole request through `handle` when it lets the head pass.
protocol HeadCheckingMiddleware: HTTPMiddleware {
    /// Why a request with this head and a route needing `scope` is refused; nil to read its body.
    func refusal(ofHead head: HTTPRequest, scope: Scope?) -> HeadRefusal?
}

/// Why a request is refused on its head, and who sent it when that is known (a token refused its
/// scope), to name in the request's log line as if the whole request had been refused.
struct HeadRefusal {
    let problem: Problem
    let principal: Principal?
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
