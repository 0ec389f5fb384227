import CUV
import Reactor

/// What a token lets its holder do.
public enum Scope: String, Sendable, CaseIterable, Comparable {
    /// Read the state, its history, and subscribe.
    case read
    /// Fire events (implies nothing else).
    case fire
    /// Everything, including operations on the server itself.
    case admin

    public static func < (lhs: Scope, rhs: Scope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// A bearer token the operator configured.
public struct AccessToken: Sendable {
    /// Shown in logs in place of the secret.
    public let name: String
    let secret: [UInt8]
    public let scopes: Set<Scope>
    /// When set, the only event types this token may fire.
    public let allowedEventTypes: Set<String>?
    /// How many events this token may fire per second; nil: the server's default for tokens.
    public var rateLimit: RateLimit?

    public init(name: String, secret: String, scopes: Set<Scope>, allowedEventTypes: Set<String>? = nil, rateLimit: RateLimit? = nil) {
        self.name = name
        self.secret = Array(secret.utf8)
        self.scopes = scopes
        self.allowedEventTypes = allowedEventTypes
        self.rateLimit = rateLimit
    }

    /// Parses `name:secret:scope+scope[:type+type]`, the form of `--token` and `REACTORD_TOKENS`.
    public init(parsing text: String) throws(ConfigurationError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 || parts.count == 4, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ConfigurationError("a token is name:secret:scopes[:event-types] (scopes and types joined by +), e.g. ci:s3cret:read+fire")
        }
        var scopes = Set<Scope>()
        for name in parts[2].split(separator: "+") {
            guard let scope = Scope(rawValue: String(name)) else {
                throw ConfigurationError("token \(parts[0]): unknown scope \"\(name)\"; scopes are read, fire, admin")
            }
            scopes.insert(scope)
        }
        guard !scopes.isEmpty else { throw ConfigurationError("token \(parts[0]) has no scope") }
        let types = parts.count == 4 ? Set(parts[3].split(separator: "+").map(String.init)) : nil
        self.init(name: parts[0], secret: parts[1], scopes: scopes, allowedEventTypes: types)
    }

    public func allows(_ scope: Scope) -> Bool {
        scopes.contains(.admin) || scopes.contains(scope)
    }
}

/// The client a request or an event comes from: the token it presented.
///
/// A class, made once per configured token: a request and its event carry one reference (an
/// optional word that costs nothing when no token is configured) instead of copying the token's
/// name, secret and sets along, and an event's `origin` holds it without boxing.
public final class Principal: Sendable {
    public let token: AccessToken
    public var name: String { token.name }

    public init(token: AccessToken) {
        self.token = token
    }
}

/// An error in the operator's configuration, said plainly.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Authenticates bearer tokens and checks the route's scope: 401 without a valid token, 403 without
/// the scope. With no tokens configured every request passes.
struct AuthMiddleware: HTTPMiddleware {
    /// One per configured token.
    let principals: [Principal]

    init(tokens: [AccessToken]) {
        principals = tokens.map(Principal.init)
    }

    func handle(_ request: HTTPRequest, context: RequestContext, next: HTTPResponder, respond: @escaping (HTTPResponse) -> Void) {
        guard !principals.isEmpty, let scope = context.scope else {
            return next(request, context, respond)
        }
        guard let presented = Self.bearerToken(in: request) else {
            return respond(Problem.unauthorized("this endpoint needs a bearer token with the \(scope.rawValue) scope: send Authorization: Bearer <token>", invalidToken: false).response)
        }
        guard let principal = authenticate(presented) else {
            return respond(Problem.unauthorized("the bearer token is not valid", invalidToken: true).response)
        }
        context.principal = principal
        guard principal.token.allows(scope) else {
            return respond(Problem.forbidden("token \(principal.name) lacks the \(scope.rawValue) scope this endpoint needs").response)
        }
        next(request, context, respond)
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
        if let query = request.queryValue("access_token") { return ArraySlice(query.utf8) }
        return nil
    }

    static func constantTimeEquals(_ secret: [UInt8], _ presented: ArraySlice<UInt8>) -> Bool {
        guard secret.count == presented.count else { return false }
        return secret.withUnsafeBytes { a in
            presented.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}

/// Enforces each token's event allow-list inside the core, so an event fired by any transport
/// (HTTP, WebSocket) obeys it.
struct EventPermissionInterceptor<StateType: HostedState>: Interceptor {
    func intercept(event: Event, state: StateType) throws {}

    func intercept(event: Event, state: StateType, origin: (any Sendable)?) throws {
        guard let principal = principal(of: origin), let allowed = principal.token.allowedEventTypes else { return }
        let type = StateType.eventType(of: event) ?? "\(Swift.type(of: event))"
        guard allowed.contains(type) else {
            throw Problem.forbidden("token \(principal.name) may not fire \"\(type)\" events; it may fire: \(allowed.sorted().joined(separator: ", "))")
        }
    }
}

/// Holds each token to its rate of events, whatever the transport: a core interceptor, like the
/// permission check. Events fired without a token (the server's own, or with no tokens configured)
/// are not limited.
/// @unchecked Sendable: the core runs interceptors on its executor, the loop thread, only.
final class EventRateInterceptor<StateType: HostedState>: Interceptor, @unchecked Sendable {
    private let defaultLimit: RateLimit?
    private let metrics: ServerMetrics
    private var buckets: [String: TokenBucket] = [:]

    init(defaultLimit: RateLimit?, metrics: ServerMetrics) {
        self.defaultLimit = defaultLimit
        self.metrics = metrics
    }

    func intercept(event: Event, state: StateType) throws {}

    func intercept(event: Event, state: StateType, origin: (any Sendable)?) throws {
        guard let principal = principal(of: origin), let limit = principal.token.rateLimit ?? defaultLimit else { return }
        let now = uv_hrtime()
        var bucket = buckets[principal.name].flatMap { $0.limit == limit ? $0 : nil } ?? TokenBucket(limit: limit, now: now)
        let wait = bucket.take(now: now)
        buckets[principal.name] = bucket
        if let wait {
            metrics.rateLimitedEvents += 1
            throw Problem.rateLimited("token \(principal.name) may fire \(PrometheusText.format(limit.perSecond)) events per second (bursts of \(PrometheusText.format(limit.burst)))", retryAfter: wait)
        }
    }
}
