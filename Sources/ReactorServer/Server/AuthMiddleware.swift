import CUV

/// Authenticates bearer tokens and checks the route's scope: 401 without a valid token, 403 without
/// the scope. With no tokens configured every request passes.
struct AuthMiddleware: HeadCheckingMiddleware {
    /// One per configured token.
    let principals: [Principal]

    init(tokens: [AccessToken]) {
        principals = tokens.map(Principal.init)
    }

    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void) {
        guard !principals.isEmpty, let scope = context.scope else {
            return next(request, context, respond)
        }
        let (principal, problem) = check(request, scope: scope)
        // Named even when refused its scope, for the request's log line.
        if let principal { context.principal = principal }
        if let problem { return respond(problem.response) }
        next(request, context, respond)
    }

    func refusal(ofHead head: HTTPRequest, scope: Scope?) -> HeadRefusal? {
        guard !principals.isEmpty, let scope else { return nil }
        let (principal, problem) = check(head, scope: scope)
        return problem.map { HeadRefusal(problem: $0, principal: principal) }
    }

    /// Who presented the request's token, and why the request is refused `scope` (nil: it is not).
    private func check(_ request: HTTPRequest, scope: Scope) -> (principal: Principal?, problem: Problem?) {
        if request.queryRepeats("access_token") {
            return (nil, .invalidParameter("access_token", "given more than once: which one was meant cannot be known"))
        }
        guard let presented = Self.bearerToken(in: request) else {
            return (nil, .unauthorized("this endpoint needs a bearer token with the \(scope.rawValue) scope: send Authorization: Bearer <token>", invalidToken: false))
        }
        guard let principal = authenticate(presented) else {
            return (nil, .unauthorized("the bearer token is not valid", invalidToken: true))
        }
        guard principal.token.allows(scope) else {
            return (principal, .forbidden("token \(principal.name) lacks the \(scope.rawValue) scope this endpoint needs"))
        }
        return (principal, nil)
    }

    /// The token, compared in constant time against every configured one so that timing tells nothing.
    func authenticate(_ presented: ArraySlice<UInt8>) -> Principal? {
        var found: Principal?
        for principal in principals where Self.constantTimeEquals(principal.token.secret, presented) {
            found = principal
        }
        return found
    }

    /// From `Authorization: Bearer <token>`, or `?access_token=` for clients that cannot set headers
    /// (browsers opening a WebSocket or an EventSource).
    static func bearerToken(in request: HTTPRequest) -> ArraySlice<UInt8>? {
        if let header = request.headers.firstValueBytes("Authorization") {
            let scheme = Array("bearer ".utf8)
            guard header.count > scheme.count,
                  zip(header.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) else { return nil }
            return header.dropFirst(scheme.count)
        }
        // Given twice, neither is taken: which one the client meant cannot be known.
        if let query = request.queryValue("access_token"), !request.queryRepeats("access_token") { return ArraySlice(query.utf8) }
        return nil
    }

    static func constantTimeEquals(_ secret: [UInt8], _ presented: ArraySlice<UInt8>) -> Bool {
        guard secret.count == presented.count else { return false }
        return secret.withUnsafeBytes { a in
            presented.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}
