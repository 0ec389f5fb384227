/// One complete request as assembled by `HTTPRequestParser`.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    public var version: HTTPVersion
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

    /// The target's length at the start of the headers' storage, where a parsed head keeps it, or
    /// -1 when `targetText` holds it. Most requests are answered without the target as a String:
    /// routing reads its bytes, and decoding them would cost more than the routing.
    private var headTargetCount: Int32 = -1
    /// The target as set, or as first asked for (read only when `headTargetCount` is -1).
    private var targetText: String
    /// The head's fields; when parsed, their storage begins with the target's bytes.
    private var storedHeaders: HTTPHeaders

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
        self.targetText = target
        self.version = version
        self.storedHeaders = headers
        self.trailers = trailers
        self.body = body
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
        self.isUpgrade = isUpgrade
    }

    /// The request-target exactly as sent (origin-form `/a/b?q`, absolute-form, `*`, or
    /// authority-form for CONNECT). See `path` and `queryItems` for the parsed parts.
    public var target: String {
        get { headTargetCount < 0 ? targetText : withTargetBytes { String(decoding: $0, as: UTF8.self) } }
        set {
            targetText = newValue
            headTargetCount = -1
        }
    }

    public var headers: HTTPHeaders {
        get { storedHeaders }
        set {
            keepTarget()
            storedHeaders = newValue
        }
        _modify {
            keepTarget()
            yield &storedHeaders
        }
    }

    /// Runs `body` on the target's bytes, in place.
    func withTargetBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        let count = Int(headTargetCount)
        guard count < 0 else { return storedHeaders.withBytes { body(UnsafeBufferPointer(rebasing: $0.prefix(count))) } }
        var text = targetText
        return text.withUTF8(body)
    }

    /// The parsed head: `headers`, whose storage begins with the target's `targetCount` bytes.
    mutating func setHead(_ headers: HTTPHeaders, targetCount: Int) {
        storedHeaders = headers
        headTargetCount = Int32(targetCount)
    }

    /// Empties the head's storage into reusable buffers (see `HTTPHeaders.moveStorage`); the target
    /// goes with it.
    mutating func moveHeadStorage(into bytes: inout [UInt8], _ fields: inout [HTTPHeaders.Field], maxBytes: Int, maxFields: Int) {
        storedHeaders.moveStorage(into: &bytes, &fields, maxBytes: maxBytes, maxFields: maxFields)
        target = ""
    }

    /// Decodes the target before the storage it lies in is replaced.
    private mutating func keepTarget() {
        if headTargetCount >= 0 { target = target }
    }
}

extension HTTPRequest: Equatable {
    /// Equal as requests, however each keeps its target.
    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.version == rhs.version
            && lhs.storedHeaders == rhs.storedHeaders && lhs.trailers == rhs.trailers && lhs.body == rhs.body
            && lhs.keepAlive == rhs.keepAlive && lhs.expectsContinue == rhs.expectsContinue
            && lhs.isUpgrade == rhs.isUpgrade
    }
}
