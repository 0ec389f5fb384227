/// A response to encode: a status, a content type, a few extra headers and a body.
///
/// The common parts (status line, content type, length, connection, date) come from pre-encoded bytes;
/// only the rare extra headers (ETag, Allow, WWW-Authenticate...) are written from strings.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var contentType: HTTPContentType?
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Set when the connection changes hands after this response's head (WebSocket, event stream):
    /// the head then carries no length, and HTTP ends on this connection.
    public var takeover: ConnectionTakeover?

    public init(status: HTTPStatus, contentType: HTTPContentType? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = [], takeover: ConnectionTakeover? = nil) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
        self.takeover = takeover
    }

    public static func json(_ body: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: .json, body: body)
    }

    public mutating func addHeader(_ name: String, _ value: String) {
        headers.append((name, value))
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A content type with its header line encoded once.
/// A final class, so that a response carries one reference for it, not two.
public final class HTTPContentType: Sendable {
    public let value: String
    let headerLine: [UInt8]

    public init(_ value: String) {
        self.value = value
        headerLine = Array("Content-Type: \(value)\r\n".utf8)
    }

    public static let json = HTTPContentType("application/json")
    public static let problemJSON = HTTPContentType("application/problem+json")
    public static let eventStream = HTTPContentType("text/event-stream")
    public static let ndjson = HTTPContentType("application/x-ndjson")
    public static let prometheusText = HTTPContentType("text/plain; version=0.0.4; charset=utf-8")
}

/// Encodes responses into one reusable buffer.
struct HTTPResponseEncoder {
    private(set) var buffer: [UInt8] = []
    private static let contentLength = Array("Content-Length: ".utf8)
    private static let crlf: [UInt8] = [13, 10]
    private static let keepAlive = Array("Connection: keep-alive\r\n".utf8)
    private static let close = Array("Connection: close\r\n".utf8)

    /// Encodes `response` as the answer to a request; `isHead` leaves the body out but keeps its length.
    /// `keepAliveHeader` is for HTTP/1.0 clients, which close unless told otherwise.
    mutating func encode(_ response: HTTPResponse, isHead: Bool, closing: Bool, keepAliveHeader: Bool, date: [UInt8]) {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: response.status.statusLine)
        buffer.append(contentsOf: date)
        if let contentType = response.contentType {
            buffer.append(contentsOf: contentType.headerLine)
        }
        // 1xx, 204 and 304 carry no body and no length; a stream's body lasts as long as the connection.
        if response.status.code >= 200 && response.status.code != 204 && response.status.code != 304 && response.takeover == nil {
            buffer.append(contentsOf: Self.contentLength)
            buffer.appendDecimal(response.body.count)
            buffer.append(contentsOf: Self.crlf)
        }
        if response.takeover != nil {
            // The response's own headers say what the connection becomes.
        } else if closing {
            buffer.append(contentsOf: Self.close)
        } else if keepAliveHeader {
            buffer.append(contentsOf: Self.keepAlive)
        }
        for (name, value) in response.headers {
            buffer.append(contentsOf: name.utf8)
            buffer.append(58) // ':'
            buffer.append(32)
            buffer.append(contentsOf: value.utf8)
            buffer.append(contentsOf: Self.crlf)
        }
        buffer.append(contentsOf: Self.crlf)
        if !isHead {
            buffer.append(contentsOf: response.body)
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends the decimal digits of `value` (not negative), without making a String.
    mutating func appendDecimal<T: BinaryInteger>(_ value: T) {
        if value < 10 {
            append(48 + UInt8(value))
            return
        }
        // Digits come out last first: written backwards into a small buffer on the stack, then
        // appended at once (reversing a slice of the array in place would copy it first).
        var rest = UInt64(value)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            while rest > 0 {
                start -= 1
                digits[start] = 48 + UInt8(rest % 10)
                rest /= 10
            }
            append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
