/// One complete request as assembled by `HTTPRequestParser`.
public struct HTTPRequest: Equatable, Sendable {
    public var method: HTTPMethod
    /// The request-target exactly as sent (origin-form `/a/b?q`, absolute-form, `*`, or
    /// authority-form for CONNECT). See `path` and `queryItems` for the parsed parts.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// Trailer fields of a chunked body. Kept apart from `headers` because a trailer must not be
    /// trusted like a header (RFC 9110 §6.5.1).
    public var trailers: HTTPHeaders
    public var body: [UInt8]
    /// Whether the connection may carry another request after this one (llhttp's verdict from
    /// the version and `Connection`). When false the server closes after responding.
    public var keepAlive: Bool
    /// `Expect: 100-continue` on an HTTP/1.1 request (HTTP/1.0 clients must have it ignored).
    public var expectsContinue: Bool
    /// An `Upgrade` + `Connection: upgrade` request, or CONNECT.
    public var isUpgrade: Bool

    public init(
        method: HTTPMethod = .get,
        target: String = "/",
        version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders(),
        trailers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        keepAlive: Bool = true,
        expectsContinue: Bool = false,
        isUpgrade: Bool = false
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.trailers = trailers
        self.body = body
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
        self.isUpgrade = isUpgrade
    }
}
