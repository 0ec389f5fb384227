import CUV

/// The request llhttp's callbacks are building, and the bookkeeping they need.
///
/// It lives in a heap block that the callbacks reach through `llhttp_t.data`, not in the parser
/// object: accessed through a pointer it costs no reference counting and no dynamic
/// exclusivity checks, which a class's stored properties would on every callback.
struct HTTPRequestAssembly {
    let limits: HTTPLimits

    var request = HTTPRequest()
    // Names and values arrive in pieces whenever the input is split, so they are accumulated
    // here and indexed by `fields`; both move into `request.headers` once the head is complete,
    // and are reused for trailers.
    var fieldBytes: [UInt8] = []
    var fields: [HTTPHeaders.Field] = []
    var fieldStart = 0
    var nameEnd = 0
    var sawExpectContinue = false
    // Facts `HTTPHeaders` keeps, noted while each field is at hand.
    var hostCount = 0
    var contentTypeField = -1

    var inBody = false
    // Bytes consumed from the wire for the current head and body. llhttp skips whitespace and
    // framing without callbacks, so limits on stored bytes alone would not bound the work.
    var headWireBytes = 0
    var bodyWireBytes = 0
    // Start of the input llhttp is executing, so callbacks can tell how far into it they are.
    var executeBase: UnsafeRawPointer?
    // Set by a callback that refuses to go on; llhttp then only reports a generic callback error.
    var callbackError: HTTPParseError?
    var pause = Pause.none

    // Sizes of the previous request's head, so the next one is usually stored without regrowing.
    private var fieldBytesHint = 256
    private var fieldsHint = 8

    enum Pause { case none, headersComplete, messageComplete }

    init(limits: HTTPLimits) {
        self.limits = limits
    }

    /// Moves the completed head into `request.headers`.
    mutating func finishHead() {
        // Capped so that one unusually large head does not make every later request reserve
        // as much.
        fieldBytesHint = min(max(fieldBytes.count, request.target.utf8.count, 64), 4096)
        fieldsHint = min(max(fields.count, 4), 32)
        // Swapped out rather than copied: the buffers change owner without reference counting.
        var bytes: [UInt8] = []
        var index: [HTTPHeaders.Field] = []
        swap(&bytes, &fieldBytes)
        swap(&index, &fields)
        request.headers = HTTPHeaders(bytes: bytes, fields: index, hostCount: hostCount, contentTypeField: contentTypeField)
        fieldStart = 0
        nameEnd = 0
        hostCount = 0
        contentTypeField = -1
        inBody = true
    }

    /// Hands the finished request out and forgets it, so no body buffer outlives its request here.
    mutating func takeRequest() -> HTTPRequest {
        if !fields.isEmpty { request.trailers = HTTPHeaders(bytes: fieldBytes, fields: fields) }
        var complete = HTTPRequest()
        swap(&complete, &request)
        fieldBytes = []
        fields = []
        fieldStart = 0
        nameEnd = 0
        hostCount = 0
        contentTypeField = -1
        sawExpectContinue = false
        inBody = false
        headWireBytes = 0
        bodyWireBytes = 0
        return complete
    }

    // What a connection may keep between requests, at most: small, since it is kept while idle.
    private static let recycledHeadBytes = 1024
    private static let recycledFields = 16
    private static let recycledBodyBytes = 1024

    /// Keeps `request`'s buffers, emptied, for the next request, unless one is under way or they are large.
    mutating func recycle(_ request: inout HTTPRequest) {
        guard fieldBytes.capacity == 0, fields.capacity == 0, self.request.body.capacity == 0, !inBody else { return }
        var (bytes, index) = request.headers.takeStorage()
        if bytes.capacity <= Self.recycledHeadBytes {
            bytes.removeAll(keepingCapacity: true)
            fieldBytes = bytes
        }
        if index.capacity <= Self.recycledFields {
            index.removeAll(keepingCapacity: true)
            fields = index
        }
        if request.body.capacity <= Self.recycledBodyBytes {
            request.body.removeAll(keepingCapacity: true)
            swap(&self.request.body, &request.body)
        }
    }

    mutating func releaseBuffers() {
        request = HTTPRequest()
        fieldBytes = []
        fields = []
    }

    /// Bytes of buffer capacity held for the request in progress.
    var bufferedCapacity: Int {
        request.body.capacity + fieldBytes.capacity + fields.capacity * MemoryLayout<HTTPHeaders.Field>.stride
    }

    // MARK: - Callbacks

    private mutating func refuse(_ error: HTTPParseError) -> Int32 {
        callbackError = error
        return -1
    }

    /// Target, header name and header value bytes, in as many pieces as the input was split.
    mutating func received(_ at: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard let at, count > 0 else { return 0 }
        if inBody {
            // Trailers: the wire count covers them together with the body framing, so only
            // what is stored needs a limit of its own.
            if fieldBytes.count + count > limits.maxHeaderBytes { return refuse(.headersTooLarge) }
        } else if let executeBase, headWireBytes + (UnsafeRawPointer(at) + count - executeBase) > limits.maxHeaderBytes {
            // Checked here too, not only between executions, so one huge read cannot make us
            // store more than the limit.
            return refuse(.headersTooLarge)
        }
        if fieldBytes.capacity == 0 { fieldBytes.reserveCapacity(min(fieldBytesHint, limits.maxHeaderBytes)) }
        // As typed bytes: the array copies them in one go (a raw buffer is appended byte by byte).
        fieldBytes.append(contentsOf: UnsafeBufferPointer(start: UnsafeRawPointer(at).assumingMemoryBound(to: UInt8.self), count: count))
        assert(fieldBytes.count <= limits.maxHeaderBytes, "stored more head bytes than the limit")
        return 0
    }

    mutating func targetComplete() -> Int32 {
        request.target = String(decoding: fieldBytes, as: UTF8.self)
        fieldBytes.removeAll(keepingCapacity: true)
        return 0
    }

    mutating func nameComplete() -> Int32 {
        guard fields.count < limits.maxHeaderCount else { return refuse(.tooManyHeaders) }
        // llhttp 8.1 lets spaces into names ("Transfer-Encoding x: ..."); a proxy in front of us
        // may read such a name differently, which is how requests get smuggled.
        let start = fieldStart
        let isToken = fieldBytes.withUnsafeBufferPointer { bytes in
            guard bytes.count > start else { return false }
            // A plain loop: `allSatisfy` on a slice costs several times as much per byte.
            var index = start
            while index < bytes.count {
                guard isTokenByte(bytes[index]) else { return false }
                index += 1
            }
            return true
        }
        guard isToken else {
            return refuse(.malformed(name: "HPE_INVALID_HEADER_TOKEN", reason: "Invalid header field char"))
        }
        nameEnd = fieldBytes.count
        return 0
    }

    mutating func valueComplete() -> Int32 {
        let (start, nameEnd) = (fieldStart, nameEnd)
        let (end, isExpectContinue, fact) = fieldBytes.withUnsafeBufferPointer { bytes in
            // llhttp drops leading whitespace but keeps trailing whitespace, which is not part
            // of the value (RFC 9110 §5.5).
            var end = bytes.count
            while end > nameEnd, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") {
                end -= 1
            }
            // Noticed here, while the field is at hand, rather than by a lookup per request.
            // (A trailer cannot set it in time to matter: it is read when the head completes.)
            let isExpectContinue = nameEnd - start == 6
                && equalsIgnoringCase(bytes[start..<nameEnd], lowercase: expectName)
                && equalsIgnoringCase(bytes[nameEnd..<end], lowercase: continueExpectation)
            // Only the head's fields: trailers are not headers.
            let fact = inBody ? nil : HTTPHeaders.fact(ofFieldNamed: UnsafeBufferPointer(rebasing: bytes[start..<nameEnd]))
            return (end, isExpectContinue, fact)
        }
        if end < fieldBytes.count { fieldBytes.removeSubrange(end...) }
        if isExpectContinue { sawExpectContinue = true }
        switch fact {
        case .host?: hostCount += 1
        case .contentType? where contentTypeField < 0: contentTypeField = fields.count
        default: break
        }
        if fields.capacity == 0 { fields.reserveCapacity(min(fieldsHint, limits.maxHeaderCount)) }
        fields.append(HTTPHeaders.Field(start: UInt32(start), nameEnd: UInt32(nameEnd), end: UInt32(end)))
        fieldStart = end
        self.nameEnd = end
        return 0
    }

    mutating func headersComplete() -> Int32 {
        // Pausing tells the parser exactly where the head ends, and lets it report
        // `.expectsContinue` before any body is parsed.
        pause = .headersComplete
        return Int32(HPE_PAUSED.rawValue)
    }

    mutating func chunkHeader(_ llhttp: UnsafeMutablePointer<llhttp_t>) -> Int32 {
        // The chunk size is known before its data arrives; refuse then rather than after.
        if UInt64(request.body.count) + llhttp.pointee.content_length > UInt64(limits.maxBodyBytes) {
            return refuse(.bodyTooLarge)
        }
        return 0
    }

    mutating func bodyReceived(_ at: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard let at, count > 0 else { return 0 }
        if request.body.count + count > limits.maxBodyBytes { return refuse(.bodyTooLarge) }
        request.body.append(contentsOf: UnsafeBufferPointer(start: UnsafeRawPointer(at).assumingMemoryBound(to: UInt8.self), count: count))
        return 0
    }

    mutating func messageComplete(_ llhttp: UnsafeMutablePointer<llhttp_t>) -> Int32 {
        request.keepAlive = llhttp_should_keep_alive(llhttp) == 1
        // For an upgrade llhttp stops by itself with HPE_PAUSED_UPGRADE; pausing here as well
        // would hide that.
        if llhttp.pointee.upgrade == 1 { return 0 }
        pause = .messageComplete
        return Int32(HPE_PAUSED.rawValue)
    }
}

private let expectName: StaticString = "expect"
private let continueExpectation: StaticString = "100-continue"

private func equalsIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, lowercase: StaticString) -> Bool {
    let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
    guard bytes.count == expected.count else { return false }
    for (byte, wanted) in zip(bytes, expected) where HTTPASCII.lowercased(byte) != wanted { return false }
    return true
}

/// tchar from RFC 9110 §5.6.2, as a bitmap over the 128 ASCII bytes.
@inline(__always)
private func isTokenByte(_ byte: UInt8) -> Bool {
    let low: UInt64 = 0x03FF_6CFA_0000_0000
    let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
    return byte < 64 ? (low >> byte) & 1 == 1 : byte < 128 && (high >> (byte - 64)) & 1 == 1
}

// MARK: - llhttp settings

@inline(__always)
private func assembly(_ llhttp: UnsafeMutablePointer<llhttp_t>?) -> UnsafeMutablePointer<HTTPRequestAssembly> {
    llhttp!.pointee.data.assumingMemoryBound(to: HTTPRequestAssembly.self)
}

extension HTTPRequestAssembly {
    /// One settings table for all parsers: C function pointers cannot capture, so each callback
    /// finds its assembly through `llhttp_t.data`. Callbacks we do not need stay nil, which
    /// llhttp treats as "continue".
    /// nonisolated(unsafe): filled in once, on first use (a lazy static is initialised once), then only read.
    nonisolated(unsafe) static let llhttpSettings: UnsafeMutablePointer<llhttp_settings_t> = {
        let settings = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        llhttp_settings_init(settings)
        settings.pointee.on_url = { assembly($0).pointee.received($1, $2) }
        settings.pointee.on_url_complete = { assembly($0).pointee.targetComplete() }
        settings.pointee.on_header_field = { assembly($0).pointee.received($1, $2) }
        settings.pointee.on_header_field_complete = { assembly($0).pointee.nameComplete() }
        settings.pointee.on_header_value = { assembly($0).pointee.received($1, $2) }
        settings.pointee.on_header_value_complete = { assembly($0).pointee.valueComplete() }
        settings.pointee.on_headers_complete = { assembly($0).pointee.headersComplete() }
        settings.pointee.on_chunk_header = { assembly($0).pointee.chunkHeader($0!) }
        settings.pointee.on_body = { assembly($0).pointee.bodyReceived($1, $2) }
        settings.pointee.on_message_complete = { assembly($0).pointee.messageComplete($0!) }
        return settings
    }()
}
