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
    /// The answer to HEAD of a resource whose GET body has no length (an event stream): the head
    /// carries no Content-Length either (RFC 9110 §8.6: one there must be what GET would send).
    public var lengthIsUnknown = false

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

/// Encodes responses with plain copies: no array appends, no reference counting of the constant
/// parts. The server encodes straight into the loop's write batch (`encode(_:...into:)`), and into
/// this object's reusable buffer only a response too large for the batch.
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

    /// Encodes `response` into this encoder's buffer (see the static `encode`).
    func encode(_ response: HTTPResponse, isHead: Bool, closing: Bool, keepAliveHeader: Bool, date: UnsafeRawBufferPointer) {
        if capacity > Self.keptCapacity { resize(to: Self.initialCapacity) }
        let needed = Self.maximumSize(of: response, isHead: isHead, date: date)
        if needed > capacity { resize(to: needed) }
        count = Self.encode(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, date: date, into: storage)
    }

    func encode(_ response: HTTPResponse, isHead: Bool, closing: Bool, keepAliveHeader: Bool, date: [UInt8]) {
        date.withUnsafeBytes { encode(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, date: $0) }
    }

    /// At least as many bytes as `encode` writes for `response`: a bound computed without writing,
    /// so that the writing needs no check for room.
    static func maximumSize(of response: HTTPResponse, isHead: Bool, date: UnsafeRawBufferPointer) -> Int {
        var size = response.status.statusLine.count + date.count + (response.contentType?.headerLine.bytes.count ?? 0)
            + 40 + 24 + 2 + (isHead ? 0 : response.body.count)
        for (name, value) in response.headers { size += name.utf8.count + value.utf8.count + 4 }
        return size
    }

    /// Writes `response` as the answer to a request at `destination`, which has room for
    /// `maximumSize(of:...)` bytes, and returns how many it wrote. `isHead` leaves the body out but
    /// keeps its length; `keepAliveHeader` is for HTTP/1.0 clients, which close unless told otherwise.
    static func encode(_ response: HTTPResponse, isHead: Bool, closing: Bool, keepAliveHeader: Bool, date: UnsafeRawBufferPointer,
                       into destination: UnsafeMutableRawPointer) -> Int {
        var out = ByteCursor(destination)
        let status = response.status
        let hasLength = status.code >= 200 && status.code != 204 && status.code != 304 && response.takeover == nil && !response.lengthIsUnknown
        out.write(status.statusLine)
        out.write(date)
        // Read as its bytes: binding the optional class copies it through its type metadata.
        if let contentTypeLine = response.contentType?.headerLine.bytes { out.write(contentTypeLine) }
        // 1xx, 204 and 304 carry no body and no length; a stream's body lasts as long as the connection.
        if hasLength {
            out.write("Content-Length: ")
            DecimalDigits.withDigits(of: UInt64(response.body.count)) { out.write($0) }
            out.write("\r\n")
        }
        if response.takeover != nil {
            // The response's own headers say what the connection becomes.
        } else if closing {
            out.write("Connection: close\r\n")
        } else if keepAliveHeader {
            out.write("Connection: keep-alive\r\n")
        }
        for (name, value) in response.headers {
            var name = name
            var value = value
            name.withUTF8 { out.write(UnsafeRawBufferPointer($0)) }
            out.write(": ")
            value.withUTF8 { out.write(UnsafeRawBufferPointer($0)) }
            out.write("\r\n")
        }
        out.write("\r\n")
        if !isHead { response.body.withUnsafeBytes { out.write($0) } }
        return out.position - destination
    }

    private func resize(to newCapacity: Int) {
        storage.deallocate()
        capacity = newCapacity
        storage = .allocate(byteCount: capacity, alignment: 1)
    }
}

/// Where the next byte goes, in memory that the caller made large enough.
private struct ByteCursor {
    private(set) var position: UnsafeMutableRawPointer

    init(_ start: UnsafeMutableRawPointer) { position = start }

    @inline(__always)
    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        position.copyMemory(from: base, byteCount: bytes.count)
        position += bytes.count
    }

    @inline(__always)
    mutating func write(_ text: StaticString) {
        write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
