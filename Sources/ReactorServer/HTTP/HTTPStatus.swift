import Synchronization

/// A response status with its status line encoded once, at first use.
public struct HTTPStatus: Sendable, Hashable {
    public let code: Int
    /// The reason and the encoded line, made once per distinct status and kept for the life of the
    /// process (`Text.interned`): every response carries a status through several stages, and a
    /// counted reference would cost a retain and a release at each. (A server has a few dozen.)
    private unowned(unsafe) let text: Text

    private final class Text: Sendable {
        let reason: String
        let statusLine: ByteLine

        private init(code: Int, reason: String) {
            self.reason = reason
            statusLine = ByteLine("HTTP/1.1 \(code) \(reason)\r\n")
        }

        private static let all = Mutex<[String: Text]>([:])

        /// The one text of this status, made on first use and never released.
        static func interned(code: Int, reason: String) -> Text {
            all.withLock { all in
                let key = "\(code) \(reason)"
                if let text = all[key] { return text }
                let text = Text(code: code, reason: reason)
                all[key] = text
                return text
            }
        }
    }

    public var reason: String { text.reason }
    /// "HTTP/1.1 200 OK\r\n"
    var statusLine: UnsafeRawBufferPointer { text.statusLine.bytes }

    public init(_ code: Int, _ reason: String) {
        self.code = code
        text = Text.interned(code: code, reason: reason)
    }

    public static func == (lhs: HTTPStatus, rhs: HTTPStatus) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public static let `continue` = HTTPStatus(100, "Continue")
    public static let switchingProtocols = HTTPStatus(101, "Switching Protocols")
    public static let ok = HTTPStatus(200, "OK")
    public static let noContent = HTTPStatus(204, "No Content")
    public static let notModified = HTTPStatus(304, "Not Modified")
    public static let badRequest = HTTPStatus(400, "Bad Request")
    public static let unauthorized = HTTPStatus(401, "Unauthorized")
    public static let forbidden = HTTPStatus(403, "Forbidden")
    public static let notFound = HTTPStatus(404, "Not Found")
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    public static let conflict = HTTPStatus(409, "Conflict")
    public static let gone = HTTPStatus(410, "Gone")
    public static let contentTooLarge = HTTPStatus(413, "Content Too Large")
    public static let unsupportedMediaType = HTTPStatus(415, "Unsupported Media Type")
    public static let unprocessableContent = HTTPStatus(422, "Unprocessable Content")
    public static let upgradeRequired = HTTPStatus(426, "Upgrade Required")
    public static let tooManyRequests = HTTPStatus(429, "Too Many Requests")
    public static let requestHeaderFieldsTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")
}
