import CUV

/// What the server accepts in an opening handshake beyond what RFC 6455 requires.
public struct WebSocketHandshakePolicy: Hashable, Sendable {
    /// Subprotocols the server speaks. The client's first listed one that is here wins.
    public var subprotocols: [String]
    /// Origins allowed to connect, as browsers serialize them (`https://example.com:8443`),
    /// compared case-insensitively. nil allows any origin.
    public var allowedOrigins: Set<String>?
    /// Whether a request without `Origin` passes an allow-list. Browsers always send it, so a
    /// missing Origin means a non-browser client, which could send any Origin it liked anyway.
    public var allowsMissingOrigin: Bool

    public init(subprotocols: [String] = [], allowedOrigins: Set<String>? = nil, allowsMissingOrigin: Bool = true) {
        self.subprotocols = subprotocols
        self.allowedOrigins = allowedOrigins
        self.allowsMissingOrigin = allowsMissingOrigin
    }
}

/// A valid opening handshake: answer with `responseHead`, then speak WebSocket.
public struct WebSocketHandshakeAcceptance: Hashable, Sendable {
    /// The `Sec-WebSocket-Accept` value.
    public let acceptKey: String
    /// The subprotocol to announce, if one was negotiated.
    public let subprotocol: String?

    public init(acceptKey: String, subprotocol: String?) {
        self.acceptKey = acceptKey
        self.subprotocol = subprotocol
    }

    /// The complete `101 Switching Protocols` response head, blank line included.
    public var responseHead: [UInt8] {
        var head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        head += "Sec-WebSocket-Accept: \(acceptKey)\r\n"
        if let subprotocol { head += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }
}

/// Why an opening handshake was refused, and how to answer it (RFC 6455 §4.2.1, §4.2.2).
public enum WebSocketHandshakeFailure: Error, Hashable, Sendable {
    /// 400: the request is not a well-formed WebSocket opening handshake.
    case badRequest(reason: String)
    /// 426: the client asked for a protocol version other than 13 (carried here as sent). The
    /// answer must name the version the server speaks so the client can retry (§4.4).
    case unsupportedVersion(String)
    /// 403: the Origin is not on the allow-list (§10.2).
    case forbiddenOrigin(String?)

    public var status: Int {
        switch self {
        case .badRequest: 400
        case .unsupportedVersion: 426
        case .forbiddenOrigin: 403
        }
    }

    public var reason: String {
        switch self {
        case .badRequest(let reason): reason
        case .unsupportedVersion(let version): "unsupported Sec-WebSocket-Version \(version); this server speaks 13"
        case .forbiddenOrigin(let origin?): "origin \(origin) is not allowed"
        case .forbiddenOrigin(nil): "requests without an Origin are not allowed"
        }
    }

    /// Header fields the response must carry besides the usual ones. A 426 must name the
    /// protocol to upgrade to (RFC 9110 §15.5.22); the HTTP layer must then also list
    /// `upgrade` in `Connection` (RFC 9110 §7.8).
    public var responseHeaders: [(name: String, value: String)] {
        switch self {
        case .unsupportedVersion: [("Sec-WebSocket-Version", WebSocketHandshake.version), ("Upgrade", "websocket"), ("Connection", "Upgrade")]
        case .badRequest, .forbiddenOrigin: []
        }
    }
}

/// The server side of the opening handshake (RFC 6455 §4.2), on plain inputs so it does not
/// depend on the HTTP types.
public enum WebSocketHandshake {
    public static let version = "13"
    /// Appended to the client's key before hashing (§1.3), proving the server read the request
    /// as a WebSocket handshake rather than echoing it.
    public static let keyGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Checks a client's opening handshake.
    ///
    /// - Parameters:
    ///   - method: the request method as sent (`GET`; methods are case-sensitive).
    ///   - httpVersion: `HTTP/1.1` (or `HTTP/1.0`, which fails).
    ///   - header: the value of a header field by case-insensitive name, with repeated fields
    ///     joined by ", " (RFC 9110 §5.3), or nil when absent.
    public static func validate(
        method: String,
        httpVersion: String,
        header: (String) -> String?,
        policy: WebSocketHandshakePolicy = WebSocketHandshakePolicy()
    ) -> Result<WebSocketHandshakeAcceptance, WebSocketHandshakeFailure> {
        func reject(_ reason: String) -> Result<WebSocketHandshakeAcceptance, WebSocketHandshakeFailure> {
            .failure(.badRequest(reason: reason))
        }
        guard method == "GET" else { return reject("a WebSocket handshake must use GET, not \(method)") }
        guard httpVersion == "HTTP/1.1" else { return reject("a WebSocket handshake needs HTTP/1.1, not \(httpVersion)") }
        guard header("Host") != nil else { return reject("missing Host header") }
        guard let upgrade = header("Upgrade"), containsToken("websocket", in: upgrade) else {
            return reject("missing \"Upgrade: websocket\"")
        }
        guard let connection = header("Connection"), containsToken("upgrade", in: connection) else {
            return reject("Connection header does not contain \"Upgrade\"")
        }
        guard let requestedVersion = header("Sec-WebSocket-Version").map(trimmed) else {
            return reject("missing Sec-WebSocket-Version header")
        }
        guard requestedVersion == version else { return .failure(.unsupportedVersion(requestedVersion)) }
        guard let key = header("Sec-WebSocket-Key").map(trimmed) else {
            return reject("missing Sec-WebSocket-Key header")
        }
        guard isValidKey(key) else { return reject("Sec-WebSocket-Key is not a base64-encoded 16-byte value") }
        if let allowedOrigins = policy.allowedOrigins {
            if let origin = header("Origin").map(trimmed) {
                // The server's own pages (the dashboard) may always connect: their origin is its host.
                let isSameOrigin = header("Host").map { ["http://" + trimmed($0).lowercased(), "https://" + trimmed($0).lowercased()].contains(origin.lowercased()) } ?? false
                guard isSameOrigin || allowedOrigins.contains(where: { $0.lowercased() == origin.lowercased() }) else { return .failure(.forbiddenOrigin(origin)) }
            } else if !policy.allowsMissingOrigin {
                return .failure(.forbiddenOrigin(nil))
            }
        }
        let subprotocol = negotiateSubprotocol(offered: header("Sec-WebSocket-Protocol"), supported: policy.subprotocols)
        return .success(WebSocketHandshakeAcceptance(acceptKey: acceptKey(for: key), subprotocol: subprotocol))
    }

    /// The client's first listed subprotocol that the server supports, or nil (then the
    /// response names none, and a client that insists on one closes the connection, §4.1).
    /// Subprotocol names are compared exactly.
    public static func negotiateSubprotocol(offered: String?, supported: [String]) -> String? {
        guard let offered else { return nil }
        return tokens(offered).first { supported.contains($0) }
    }

    /// base64(SHA-1(key + GUID)), the `Sec-WebSocket-Accept` value for a `Sec-WebSocket-Key`.
    public static func acceptKey(for key: String) -> String {
        let input = Array((key + keyGUID).utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        input.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { digest in
                _ = SHA1(input.baseAddress, input.count, digest.baseAddress)
            }
        }
        return base64(digest)
    }

    // §4.1: the key is 16 random bytes in base64, which is always 22 characters and "==".
    // Non-zero padding bits in the last character are tolerated: decoding still gives 16 bytes.
    static func isValidKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes[..<22].allSatisfy { base64Value($0) != nil }
    }

    static func tokens(_ list: String) -> [String] {
        list.split(separator: ",").map { trimmed(String($0)) }.filter { !$0.isEmpty }
    }

    private static func containsToken(_ token: String, in list: String) -> Bool {
        tokens(list).contains { $0.lowercased() == token }
    }

    private static func trimmed(_ value: String) -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = value.firstIndex(where: { !isOWS($0) }) else { return "" }
        let last = value.lastIndex(where: { !isOWS($0) })!
        return String(value[first...last])
    }

    private static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static func base64Value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    static func base64(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let group = b0 << 16 | b1 << 8 | b2
            out.append(base64Alphabet[Int(group >> 18 & 63)])
            out.append(base64Alphabet[Int(group >> 12 & 63)])
            out.append(i + 1 < bytes.count ? base64Alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? base64Alphabet[Int(group & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
