import OrderedCollections

/// An RFC 9457 problem: every error the server answers is one, as `application/problem+json`.
///
/// `type` is stable per kind of problem (clients may switch on it); `detail` says what went wrong
/// with this request in words a person can act on.
public struct Problem: Error, Sendable {
    public var status: HTTPStatus
    public var type: String
    public var title: String
    public var detail: String
    /// Members beyond the standard ones (line and column of a JSON error, the known event types...).
    public var extensions: JSON.Object
    /// Headers the status calls for (`Allow` with 405, `WWW-Authenticate` with 401...).
    public var headers: [(name: String, value: String)]

    public init(status: HTTPStatus, kind: String, title: String, detail: String, extensions: JSON.Object = [:], headers: [(name: String, value: String)] = []) {
        self.status = status
        self.type = "/problems/\(kind)"
        self.title = title
        self.detail = detail
        self.extensions = extensions
        self.headers = headers
    }

    /// The problem as a JSON object, for bodies and for embedding (WebSocket errors, batch reports).
    public var json: JSON {
        var members: JSON.Object = [
            "type": .string(type),
            "title": .string(title),
            "status": .integer(Int64(status.code)),
            "detail": .string(detail),
        ]
        for (key, value) in extensions { members[key] = value }
        return .object(members)
    }

    public var response: HTTPResponse {
        HTTPResponse(status: status, contentType: .problemJSON, headers: headers, body: json.jsonBytes)
    }
}

extension Problem {
    /// A body that is not JSON (400), or JSON beyond what the server keeps exactly (422): nested
    /// deeper than `JSON.maximumDepth`, or an integer outside 64 bits.
    public static func malformedJSON(_ error: JSONParseError) -> Problem {
        let position: JSON.Object = ["line": .integer(Int64(error.line)), "column": .integer(Int64(error.column))]
        switch error.kind {
        case .syntax:
            return Problem(status: .badRequest, kind: "malformed-json", title: "Malformed JSON",
                           detail: "the body is not valid JSON: \(error.description)", extensions: position)
        case .tooDeep:
            var extensions = position
            extensions["limit"] = .integer(Int64(JSON.maximumDepth))
            return Problem(status: .unprocessableContent, kind: "too-deep", title: "JSON nested too deep",
                           detail: "the body nests deeper than the server reads: a value may nest \(JSON.maximumDepth) levels, and what carries it \(JSON.envelopeDepth) more (\(error.description))", extensions: extensions)
        case .integerOutOfRange:
            return Problem(status: .unprocessableContent, kind: "integer-out-of-range", title: "Integer out of range",
                           detail: "the body holds an integer the server cannot keep exactly: \(error.description)", extensions: position)
        }
    }

    public static func malformedRequest(_ detail: String) -> Problem {
        Problem(status: .badRequest, kind: "malformed-request", title: "Malformed request", detail: detail)
    }

    /// The one value of query parameter `name`, nil when absent, or why it cannot be read: the query
    /// gives it more than once.
    static func parameter(_ name: String, of request: HTTPRequest) -> Result<String?, Problem> {
        if request.queryRepeats(name) { return .failure(.invalidParameter(name, "\(name) is given more than once; give it once")) }
        return .success(request.queryValue(name))
    }

    public static func invalidParameter(_ name: String, _ detail: String) -> Problem {
        Problem(status: .badRequest, kind: "invalid-parameter", title: "Invalid parameter",
                detail: detail, extensions: ["parameter": .string(name)])
    }

    public static func unknownEventType(_ type: String, known: [String], index: Int? = nil) -> Problem {
        var problem = Problem(status: .unprocessableContent, kind: "unknown-event-type", title: "Unknown event type",
                              detail: "unknown event type \"\(type)\"; known types: \(known.joined(separator: ", "))",
                              extensions: ["knownTypes": .array(known.map(JSON.string))])
        problem.setIndex(index)
        return problem
    }

    public static func invalidEvent(_ detail: String, index: Int? = nil) -> Problem {
        var problem = Problem(status: .unprocessableContent, kind: "invalid-event", title: "Invalid event", detail: detail)
        problem.setIndex(index)
        return problem
    }

    public static func eventRejected(_ rejection: EventRejection, index: Int? = nil) -> Problem {
        var problem = switch rejection.kind {
        case .invalid:
            Problem(status: .unprocessableContent, kind: "event-rejected", title: "Event rejected by the state",
                    detail: rejection.reason)
        case .conflict:
            Problem(status: .conflict, kind: "precondition-failed", title: "Precondition failed",
                    detail: rejection.reason)
        case .tooDeep:
            Problem(status: .unprocessableContent, kind: "too-deep", title: "State would nest too deep",
                    detail: rejection.reason, extensions: ["limit": .integer(Int64(JSON.maximumDepth))])
        case .tooMuchGrowth:
            Problem(status: .unprocessableContent, kind: "too-much-growth", title: "Event would grow the state too much",
                    detail: rejection.reason)
        }
        problem.setIndex(index)
        return problem
    }

    public static func bodyTooLarge(limit: Int) -> Problem {
        Problem(status: .contentTooLarge, kind: "body-too-large", title: "Body too large",
                detail: "the request body is larger than the limit of \(limit) bytes",
                extensions: ["limit": .integer(Int64(limit))])
    }

    public static func headersTooLarge(limit: Int) -> Problem {
        Problem(status: .requestHeaderFieldsTooLarge, kind: "headers-too-large", title: "Request header fields too large",
                detail: "the request line and headers are larger than the limit of \(limit) bytes, or too many",
                extensions: ["limit": .integer(Int64(limit))])
    }

    public static func unsupportedMediaType(_ found: String?, expected: String) -> Problem {
        Problem(status: .unsupportedMediaType, kind: "unsupported-media-type", title: "Unsupported media type",
                detail: found.map { "the body is \($0); send \(expected)" } ?? "the request has no Content-Type; send \(expected)",
                headers: [("Accept-Post", expected)])
    }

    public static func notFound(_ path: some StringProtocol) -> Problem {
        Problem(status: .notFound, kind: "not-found", title: "Not found", detail: "there is nothing at \(path)")
    }

    public static func methodNotAllowed(_ method: HTTPMethod, path: some StringProtocol, allowed: [HTTPMethod]) -> Problem {
        let names = allowed.map(\.name).joined(separator: ", ")
        return Problem(status: .methodNotAllowed, kind: "method-not-allowed", title: "Method not allowed",
                       detail: "\(path) does not accept \(method.name); it accepts \(names)",
                       headers: [("Allow", names)])
    }

    public static func requestTimeout(seconds: Double) -> Problem {
        Problem(status: .requestTimeout, kind: "request-timeout", title: "Request timeout",
                detail: "no complete request arrived within \(seconds) seconds; the connection is closed")
    }

    /// An event fired over a WebSocket while the server shuts down: not applied.
    public static func shuttingDown() -> Problem {
        Problem(status: .serviceUnavailable, kind: "shutting-down", title: "Shutting down",
                detail: "the server is shutting down: the event was not applied; fire it again once reconnected",
                headers: [("Retry-After", "1")])
    }

    public static func tooManyConnections(limit: Int) -> Problem {
        Problem(status: .serviceUnavailable, kind: "too-many-connections", title: "Too many connections",
                detail: "the server already has \(limit) open connections; try again later",
                headers: [("Retry-After", "1")])
    }

    public static func unauthorized(_ detail: String, invalidToken: Bool) -> Problem {
        Problem(status: .unauthorized, kind: "unauthorized", title: "Unauthorized", detail: detail,
                headers: [("WWW-Authenticate", invalidToken ? "Bearer realm=\"reactord\", error=\"invalid_token\"" : "Bearer realm=\"reactord\"")])
    }

    public static func hostNotAllowed(_ host: String) -> Problem {
        Problem(status: .forbidden, kind: "host-not-allowed", title: "Host not allowed",
                detail: "this server has no tokens, so it answers only requests addressed to it by a loopback name (localhost, 127.0.0.1, [::1]), which a web page elsewhere cannot re-point at it; this one was addressed to \(host). Configure tokens, or pass --insecure to answer any Host")
    }

    public static func forbidden(_ detail: String, index: Int? = nil) -> Problem {
        var problem = Problem(status: .forbidden, kind: "forbidden", title: "Forbidden", detail: detail)
        problem.setIndex(index)
        return problem
    }

    public static func pathNotFound(_ pointer: String) -> Problem {
        Problem(status: .notFound, kind: "path-not-found", title: "Path not found",
                detail: "the state has no value at \(pointer)", extensions: ["path": .string(pointer)])
    }

    public static func idempotencyKeyReused(_ key: String) -> Problem {
        Problem(status: .unprocessableContent, kind: "idempotency-key-reused", title: "Idempotency key reused",
                detail: "the Idempotency-Key \"\(key)\" was already used for a different request")
    }

    public static func idempotentRequestInProgress(_ key: String) -> Problem {
        Problem(status: .conflict, kind: "idempotent-request-in-progress", title: "Request in progress",
                detail: "a request with the Idempotency-Key \"\(key)\" is still being processed; retry later")
    }

    public static func notImplemented(_ detail: String) -> Problem {
        Problem(status: .notImplemented, kind: "not-implemented", title: "Not implemented", detail: detail)
    }

    public static func versionNotSupported() -> Problem {
        Problem(status: .httpVersionNotSupported, kind: "http-version-not-supported", title: "HTTP version not supported",
                detail: "reactord speaks HTTP/1.0 and HTTP/1.1")
    }

    public static func internalError(_ detail: String) -> Problem {
        Problem(status: .internalServerError, kind: "internal-error", title: "Internal server error", detail: detail)
    }

    /// Over a rate limit: `Retry-After` says when to try again (whole seconds, at least 1).
    public static func rateLimited(_ detail: String, retryAfter seconds: Double) -> Problem {
        let wait = max(1, Int(seconds.rounded(.up)))
        return Problem(status: .tooManyRequests, kind: "rate-limited", title: "Too many requests",
                       detail: "\(detail); retry in \(wait) s", extensions: ["retryAfter": .integer(Int64(wait))],
                       headers: [("Retry-After", String(wait))])
    }

    /// History or a past state that the data directory no longer holds.
    public static func historyGone(_ detail: String, oldest: UInt64) -> Problem {
        Problem(status: .gone, kind: "history-gone", title: "No longer kept", detail: detail,
                extensions: ["oldestVersion": .integer(Int64(oldest))])
    }

    /// The history asked for is kept, but cannot be read now (a cluster's Redis is unreachable).
    public static func historyUnavailable(_ detail: String) -> Problem {
        Problem(status: .serviceUnavailable, kind: "history-unavailable", title: "History unavailable", detail: detail,
                headers: [("Retry-After", "1")])
    }

    /// A version the state has not reached.
    public static func versionNotFound(_ version: UInt64, current: UInt64) -> Problem {
        Problem(status: .notFound, kind: "version-not-found", title: "Version not reached",
                detail: "version \(version) does not exist yet; the current version is \(current)",
                extensions: ["currentVersion": .integer(Int64(current))])
    }

    /// History asked of a server that keeps none (no data directory).
    public static func historyNotKept() -> Problem {
        Problem(status: .notFound, kind: "history-not-kept", title: "No history",
                detail: "this server keeps no history: start reactord with --data-dir to keep a journal of events")
    }

    /// The problem for a request the parser refused.
    static func parseError(_ error: HTTPParseError, limits: HTTPLimits) -> Problem {
        switch error {
        case .headersTooLarge, .tooManyHeaders: .headersTooLarge(limit: limits.maxHeaderBytes)
        case .bodyTooLarge: .bodyTooLarge(limit: limits.maxBodyBytes)
        case .unsupportedMethod: .notImplemented("the request method is not one reactord knows")
        case .unsupportedTransferCoding: .notImplemented("the request's Transfer-Encoding is not one reactord implements; send the body with Content-Length, or with Transfer-Encoding: chunked alone")
        case .tlsOnPlainPort: .malformedRequest("a TLS handshake arrived, but this port speaks plain HTTP: use http://, not https://")
        case .unsupportedVersion: .versionNotSupported()
        case .malformed(let name, let reason): .malformedRequest("the request is not valid HTTP/1.1: \(reason) (\(name))")
        }
    }

    private mutating func setIndex(_ index: Int?) {
        if let index { extensions["index"] = .integer(Int64(index)) }
    }
}
