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

/// The client an event was fired for, when its origin is one (interceptors ask for every event).
@inline(__always)
func principal(of origin: (any Sendable)?) -> Principal? {
    guard let origin else { return nil }
    return exactCast(origin, to: Principal.self)
}
