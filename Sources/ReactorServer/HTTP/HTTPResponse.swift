import Synchronization

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
///
/// The value and the line are made once per distinct type and kept for the life of the process
/// (`Text.interned`): a response is copied through several stages, and a counted reference would
/// cost a retain and a release at each. (A server has a handful.)
public struct HTTPContentType: Sendable {
    private final class Text: Sendable {
        let value: String
        /// "Content-Type: ...\r\n", kept outside any array so that writing it costs no reference counting.
        let headerLine: ByteLine

        private init(_ value: String) {
            self.value = value
            headerLine = ByteLine("Content-Type: \(value)\r\n")
        }

        private static let all = Mutex<[String: Text]>([:])

        /// The one text of this type, made on first use and never released.
        static func interned(_ value: String) -> Text {
            all.withLock { all in
                if let text = all[value] { return text }
                let text = Text(value)
                all[value] = text
                return text
            }
        }
    }

    private unowned(unsafe) let text: Text

    public var value: String { text.value }
    var headerLine: ByteLine { text.headerLine }

    public init(_ value: String) {
        text = Text.interned(value)
    }

    public static let json = HTTPContentType("application/json")
    public static let problemJSON = HTTPContentType("application/problem+json")
    public static let eventStream = HTTPContentType("text/event-stream")
    public static let ndjson = HTTPContentType("application/x-ndjson")
    public static let prometheusText = HTTPContentType("text/plain; version=0.0.4; charset=utf-8")
}

/// Bytes made once and written often (a status line, a header line), owned by the object that holds
/// them: read through a pointer, they cost no retain and release per response.
/// @unchecked Sendable: immutable after init; freed only by its owner's deinit.
struct ByteLine: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer

    init(_ text: String) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: text.utf8.count, alignment: 1)
        _ = storage.initializeMemory(as: UInt8.self, from: text.utf8)
        bytes = UnsafeRawBufferPointer(storage)
    }

    /// For the owner's deinit.
    func deallocate() { bytes.deallocate() }
}

/// Encodes responses into one reusable buffer, written with plain copies: no array appends, no
/// reference counting of the constant parts.
final class HTTPResponseEncoder {
    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    private var count = 0

    /// Large enough for every head and a small body; a larger response grows it for a while.
    private static let initialCapacity = 4096
    /// Above this, the buffer goes back to its initial size after the response that needed it.
    private static let keptCapacity = 256 * 1024

    init() {
        capacity = Self.initialCapacity
        storage = .allocate(byteCount: capacity, alignment: 1)
    }

    deinit { storage.deallocate() }

    /// The last response encoded; valid until the next `encode`.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }
    /// A copy of `bytes`, for tests.
    var buffer: [UInt8] { Array(bytes) }

    /// Encodes `response` as the answer to a request; `isHead` leaves the body out but keeps its length.
    /// `keepAliveHeader` is for HTTP/1.0 clients, which close unless told otherwise.
    func encode(_ response: HTTPResponse, isHead: Bool, closing: Bool, keepAliveHeader: Bool, date: UnsafeRawBufferPointer) {
        count = 0
        if capacity > Self.keptCapacity { resize(to: Self.initialCapacity) }
        let status = response.status
        let hasLength = status.code >= 200 && status.code != 204 && status.code != 304 && response.takeover == nil
        let body = response.body
        // Read as its bytes: binding the optional class copies it through its type metadata.
        let contentTypeLine = response.contentType?.headerLine.bytes
        // An upper bound, so that everything below writes without checking for room.
        var needed = status.statusLine.count + date.count + (contentTypeLine?.count ?? 0)
            + 40 + 24 + 2 + (isHead ? 0 : body.count)
        for (name, value) in response.headers { needed += name.utf8.count + value.utf8.count + 4 }
        if needed > capacity { resize(to: needed) }

        write(status.statusLine)
        write(date)
        if let contentTypeLine { write(contentTypeLine) }
        // 1xx, 204 and 304 carry no body and no length; a stream's body lasts as long as the connection.
        if hasLength {
            write("Content-Length: ")
            writeDecimal(body.count)
            write("\r\n")
        }
        if response.takeover != nil {
            // The response's own headers say what the connection becomes.
        } else if closing {
            write("Connection: close\r\n")
        } else if keepAliveHeader {
            write("Connection: keep-alive\r\n")
        }
        for (name, value) in response.headers {
            var name = name
            var value = value
            name.withUTF8 { write(UnsafeRawBufferPointer($0)) }
            write(": ")
            value.withUTF8 { write(UnsafeRawBufferPointer($0)) }
            write("\r\n")
        }
        write("\r\n")
        if !isHead { body.withUnsafeBytes { write($0) } }
    }

    func encode(_ response: HTTPResponse, isHead: Bool, closing: Bool, keepAliveHeader: Bool, date: [UInt8]) {
        date.withUnsafeBytes { encode(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, date: $0) }
    }

    @inline(__always)
    private func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        (storage + count).copyMemory(from: base, byteCount: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    private func write(_ text: StaticString) {
        write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private func writeDecimal(_ value: Int) {
        DecimalDigits.withDigits(of: UInt64(value)) { write($0) }
    }

    private func resize(to newCapacity: Int) {
        storage.deallocate()
        capacity = newCapacity
        storage = .allocate(byteCount: capacity, alignment: 1)
    }
}
