import CUV

/// The request llhttp's callbacks are building, and the bookkeeping they need.
///
/// It lives in a heap block that the callbacks reach through `llhttp_t.data`, not in the parser
/// object: accessed through a pointer it costs no reference counting and no dynamic
/// exclusivity checks, which a class's stored properties would on every callback.
///
/// A head is stored as the bytes it arrived as, from the target to the blank line that ends it, copied
/// once: llhttp reports where the target lies and pauses where the head ends, and the fields are then
/// found in the stored bytes (`HTTPHeadFields`). A trailer section, rare, comes through llhttp's
/// field callbacks instead, which note where each piece lies, as offsets into its stream. Bytes are
/// copied when the section ends, or when an input ends before it does (the next input continues the
/// stream), and only then are the fields checked and trimmed.
struct HTTPRequestAssembly {
    let limits: HTTPLimits

    var request = HTTPRequest()
    /// The section's bytes copied so far (from inputs before the current one); `fields` index them.
    /// Both move into `request.headers` once the head is complete, and are reused for trailers.
    var fieldBytes: [UInt8] = []
    var fields: [HTTPHeaders.Field] = []
    /// Where the section's stream continues in the current input (at offset `fieldBytes.count`);
    /// nil while no section is being stored.
    var streamStart: UnsafeRawPointer?
    var inSection = false
    /// Offsets in the section's stream: the target's end, the current field's pieces, and the end of
    /// the last piece seen (where the section's bytes end so far).
    var targetEnd = 0
    var fieldStart = 0
    var nameEnd = 0
    var valueStart = -1
    var sectionEnd = 0
    var inName = false

    var inBody = false
    /// Whether a body follows the head (a length above 0, or chunked), noted when the head completes.
    var bodyPending = false
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

    /// Llhttp is about to execute `base`: a section under way continues there.
    mutating func executionStarts(at base: UnsafeRawPointer) {
        executeBase = base
        if inSection { streamStart = base }
    }

    /// The execution that started at `executeBase` used its input up to `end` with the section still
    /// open: what it holds of the section is copied, as the input will not outlive the call.
    mutating func executionEnded(at end: UnsafeRawPointer) {
        if inSection, let streamStart { store(upTo: end - streamStart) }
        streamStart = nil
        executeBase = nil
    }

    /// Copies the current input's part of the section, `count` bytes from `streamStart`.
    private mutating func store(upTo count: Int) {
        guard count > 0, let streamStart else { return }
        if fieldBytes.capacity == 0 { fieldBytes.reserveCapacity(min(fieldBytesHint, limits.maxHeaderBytes)) }
        // As typed bytes: the array copies them in one go (a raw buffer is appended byte by byte).
        fieldBytes.append(contentsOf: UnsafeBufferPointer(start: streamStart.assumingMemoryBound(to: UInt8.self), count: count))
        self.streamStart = streamStart + count
    }

    /// Copies the rest of a trailer section and checks its fields; nil, or why the section is refused.
    private mutating func finishSection() -> HTTPParseError? {
        store(upTo: sectionEnd - fieldBytes.count)
        inSection = false
        streamStart = nil
        guard !fields.isEmpty else { return nil }
        // Through pointers: this runs over every byte of every name, where bounds and uniqueness
        // checks would cost more than the checking itself.
        let refused = fieldBytes.withUnsafeBufferPointer { bytes in
            fields.withUnsafeMutableBufferPointer { fields in Self.check(fields, in: bytes.baseAddress!) }
        }
        return refused ? Self.invalidName : nil
    }

    private static let invalidName = HTTPParseError.malformed(name: "HPE_INVALID_HEADER_TOKEN", reason: "Invalid header field char")

    /// Checks each trailer's name and trims its value's end, as `HTTPHeadFields` does a head's; true
    /// when a name is not a token.
    private static func check(_ fields: UnsafeMutableBufferPointer<HTTPHeaders.Field>, in bytes: UnsafePointer<UInt8>) -> Bool {
        for index in 0..<fields.count {
            let field = fields[index]
            let name = bytes + Int(field.start)
            let nameCount = Int(field.nameEnd - field.start)
            // Spaces in names: see `HTTPHeadFields.Refusal.spaceInName`.
            guard nameCount > 0, !containsSpace(name, count: nameCount) else { return true }
            var end = Int(field.end)
            let valueStart = Int(field.valueStart)
            while end > valueStart, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") {
                end -= 1
            }
            if end != Int(field.end) { fields[index].end = UInt32(end) }
        }
        return false
    }

    /// The head is complete, all of it stored (llhttp paused where it ends): finds and checks its
    /// fields, moves it into `request`, and notes what llhttp made of it; nil, or why it is refused.
    mutating func finishHead(_ llhttp: llhttp_t) -> HTTPParseError? {
        inSection = false
        streamStart = nil
        if fields.capacity == 0 { fields.reserveCapacity(min(fieldsHint, limits.maxHeaderCount)) }
        // Swapped out rather than copied: the buffers change owner without reference counting.
        var bytes: [UInt8] = []
        var index: [HTTPHeaders.Field] = []
        swap(&bytes, &fieldBytes)
        swap(&index, &fields)
        var facts = HTTPHeadFields.Facts()
        do {
            try HTTPHeadFields.locate(in: &bytes, targetEnd: targetEnd, into: &index, facts: &facts, maxFields: limits.maxHeaderCount)
        } catch {
            switch error {
            case .tooManyFields: return .tooManyHeaders
            case .spaceInName, .notAField: return Self.invalidName
            case .emptyName: return .malformed(name: "HPE_INVALID_HEADER_TOKEN", reason: "Empty header field name")
            case .bareCarriageReturn: return .malformed(name: "HPE_LF_EXPECTED", reason: "Expected LF after CR")
            }
        }
        if facts.unsupportedTransferCoding { return .unsupportedTransferCoding }
        let escapesWellFormed = bytes.withUnsafeBufferPointer { HTTPPercentDecoding.escapesAreWellFormed(UnsafeBufferPointer(rebasing: $0.prefix(targetEnd))) }
        if !escapesWellFormed { return .malformed(name: "target", reason: "A percent sign in the target is not followed by two hex digits") }
        let spellsUTF8 = bytes.withUnsafeBufferPointer { HTTPPercentDecoding.decodesToUTF8(UnsafeBufferPointer(rebasing: $0.prefix(targetEnd))) }
        if !spellsUTF8 { return .malformed(name: "target", reason: "The target's percent escapes decode to bytes that are not UTF-8") }
        if facts.invalidHost { return .malformed(name: "Host", reason: "The Host header is not a host with an optional port") }
        if let repeated = facts.repeatedField { return .malformed(name: "\(repeated)", reason: "More than one \(repeated) header") }
        // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request is faulty framing.
        if facts.hasTransferEncoding && llhttp.http_major == 1 && llhttp.http_minor == 0 {
            return .malformed(name: "Transfer-Encoding", reason: "An HTTP/1.0 request with Transfer-Encoding")
        }
        // Capped so that one unusually large head does not make every later request reserve
        // as much.
        fieldBytesHint = min(max(bytes.count, 64), 4096)
        fieldsHint = min(max(index.count, 4), 32)
        // The head's bytes begin with the target: the request reads it from there.
        let targetCount = min(targetEnd, bytes.count)
        request.setHead(HTTPHeaders(bytes: consume bytes, fields: consume index, hostCount: facts.hostCount, contentTypeField: facts.contentTypeField),
                        targetCount: targetCount)
        resetSection()
        // From here on, sections are trailers, and a failure still has the head to report.
        inBody = true
        return noteHead(llhttp, expectsContinue: facts.sawExpectContinue)
    }

    /// Capacity reserved up front for a body of known length; larger bodies grow as they
    /// arrive, so a client cannot make us hold a megabyte by merely announcing it.
    private static let initialBodyCapacity = 16 * 1024

    /// What llhttp knows once the head is parsed, before any of the body: the version (1.0 and 1.1
    /// only), method, framing, and whether the body may be refused before it arrives.
    private mutating func noteHead(_ parser: llhttp_t, expectsContinue: Bool) -> HTTPParseError? {
        guard parser.http_major == 1, parser.http_minor <= 1 else { return .unsupportedVersion }
        let version = parser.http_minor == 0 ? HTTPVersion.http1_0 : .http1_1
        request.version = version
        request.method = HTTPMethod(llhttpCode: parser.method)
        let flags = UInt32(parser.flags)
        let hasLength = flags & F_CONTENT_LENGTH.rawValue != 0
        // Refuse before the body arrives, so a 413 needs no reading of it.
        if hasLength && parser.content_length > UInt64(limits.maxBodyBytes) { return .bodyTooLarge }
        bodyPending = flags & F_CHUNKED.rawValue != 0 || (hasLength && parser.content_length > 0)
        request.isUpgrade = parser.upgrade == 1
        // HTTP/1.0 clients do not know 100-continue; RFC 9110 §10.1.1 says to ignore it then.
        request.expectsContinue = version == .http1_1 && expectsContinue
        if hasLength && parser.content_length > 0 {
            request.body.reserveCapacity(Int(min(parser.content_length, UInt64(Self.initialBodyCapacity))))
        }
        return nil
    }

    private mutating func resetSection() {
        inSection = false
        streamStart = nil
        targetEnd = 0
        sectionEnd = 0
        inName = false
        valueStart = -1
    }

    /// Hands the finished request out and forgets it, so no body buffer outlives its request here.
    mutating func takeRequest() -> HTTPRequest {
        if !fields.isEmpty { request.trailers = HTTPHeaders(bytes: fieldBytes, fields: fields) }
        var complete = HTTPRequest()
        swap(&complete, &request)
        fieldBytes = []
        fields = []
        resetSection()
        inBody = false
        bodyPending = false
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
        guard fieldBytes.capacity == 0, fields.capacity == 0, self.request.body.capacity == 0, !inBody, !inSection else { return }
        request.moveHeadStorage(into: &fieldBytes, &fields, maxBytes: Self.recycledHeadBytes, maxFields: Self.recycledFields)
        if request.body.capacity <= Self.recycledBodyBytes {
            request.body.removeAll(keepingCapacity: true)
            swap(&self.request.body, &request.body)
        }
    }

    mutating func releaseBuffers() {
        request = HTTPRequest()
        fieldBytes = []
        fields = []
        resetSection()
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

    enum Piece { case target, name, value }

    /// Target, and trailer name and value bytes, in as many pieces as the input was split: only
    /// where they lie is noted.
    mutating func received(_ piece: Piece, _ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard let bytes, count > 0 else { return 0 }
        let at = UnsafeRawPointer(bytes)
        if !inBody, let executeBase, headWireBytes + (at + count - executeBase) > limits.maxHeaderBytes {
            // Checked here too, not only between executions, so one huge read cannot make us
            // store more than the limit.
            return refuse(.headersTooLarge)
        }
        if !inSection {
            inSection = true
            streamStart = at
        }
        var start = fieldBytes.count + (at - streamStart!)
        if start != sectionEnd && (inName || valueStart >= 0) {
            // A piece that continues a name or value after a gap (obsolete line folding: llhttp
            // leaves the line break out): the gap is dropped, so the value stays one range.
            store(upTo: at - streamStart!)
            fieldBytes.removeSubrange(sectionEnd...)
            start = sectionEnd
        }
        let end = start + count
        // Trailers: the wire count covers them together with the body framing, so only what is
        // stored needs a limit of its own.
        if inBody, end > limits.maxHeaderBytes { return refuse(.headersTooLarge) }
        switch piece {
        case .target:
            targetEnd = end
        case .name:
            if !inName {
                inName = true
                fieldStart = start
            }
            nameEnd = end
        case .value:
            if valueStart < 0 { valueStart = start }
        }
        sectionEnd = end
        return 0
    }

    mutating func nameComplete() -> Int32 {
        guard fields.count < limits.maxHeaderCount else { return refuse(.tooManyHeaders) }
        inName = false
        return 0
    }

    mutating func valueComplete() -> Int32 {
        // An empty value has no pieces: it lies at the end of its name.
        let valueStart = valueStart < 0 ? nameEnd : valueStart
        let end = max(sectionEnd, valueStart)
        if fields.capacity == 0 { fields.reserveCapacity(min(fieldsHint, limits.maxHeaderCount)) }
        fields.append(HTTPHeaders.Field(start: UInt32(fieldStart), nameEnd: UInt32(nameEnd), valueStart: UInt32(valueStart), end: UInt32(end)))
        self.valueStart = -1
        return 0
    }

    /// Pauses llhttp where the head ends, for the parser to finish it there (`finishHead`): the
    /// position is known only then, and the pause also lets it report `.expectsContinue` before any
    /// body is parsed.
    mutating func headersComplete(_ llhttp: UnsafeMutablePointer<llhttp_t>) -> Int32 {
        // Only a chunked body can end in trailers; they come through the field callbacks.
        if UInt32(llhttp.pointee.flags) & F_CHUNKED.rawValue != 0 {
            llhttp.pointee.settings = UnsafeMutableRawPointer(Self.trailerSettings)
        }
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
        // Trailers, if any, end here; the next head comes without field callbacks again.
        if UInt32(llhttp.pointee.flags) & F_CHUNKED.rawValue != 0 {
            llhttp.pointee.settings = UnsafeMutableRawPointer(Self.llhttpSettings)
        }
        if inSection, let error = finishSection() { return refuse(error) }
        request.keepAlive = llhttp_should_keep_alive(llhttp) == 1
        // For an upgrade llhttp stops by itself with HPE_PAUSED_UPGRADE; pausing here as well
        // would hide that.
        if llhttp.pointee.upgrade == 1 { return 0 }
        pause = .messageComplete
        return Int32(HPE_PAUSED.rawValue)
    }
}

/// Whether any of the `count` bytes at `bytes` is a space.
@inline(__always)
private func containsSpace(_ bytes: UnsafePointer<UInt8>, count: Int) -> Bool {
    for index in 0..<count where bytes[index] == UInt8(ascii: " ") { return true }
    return false
}

// MARK: - llhttp settings

@inline(__always)
private func assembly(_ llhttp: UnsafeMutablePointer<llhttp_t>?) -> UnsafeMutablePointer<HTTPRequestAssembly> {
    llhttp!.pointee.data.assumingMemoryBound(to: HTTPRequestAssembly.self)
}

extension HTTPRequestAssembly {
    /// The settings table for all parsers: C function pointers cannot capture, so each callback finds
    /// its assembly through `llhttp_t.data`. Callbacks we do not need stay nil, which llhttp treats as
    /// "continue"; the field callbacks among them (a head's fields are read from its bytes).
    /// nonisolated(unsafe): filled in once, on first use (a lazy static is initialised once), then only read.
    nonisolated(unsafe) static let llhttpSettings = makeSettings(withFieldCallbacks: false)

    /// The table while a chunked body is read: with the field callbacks, for its trailers.
    /// nonisolated(unsafe): as `llhttpSettings`.
    nonisolated(unsafe) static let trailerSettings = makeSettings(withFieldCallbacks: true)

    private static func makeSettings(withFieldCallbacks: Bool) -> UnsafeMutablePointer<llhttp_settings_t> {
        let settings = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        llhttp_settings_init(settings)
        settings.pointee.on_url = { assembly($0).pointee.received(.target, $1, $2) }
        if withFieldCallbacks {
            settings.pointee.on_header_field = { assembly($0).pointee.received(.name, $1, $2) }
            settings.pointee.on_header_field_complete = { assembly($0).pointee.nameComplete() }
            settings.pointee.on_header_value = { assembly($0).pointee.received(.value, $1, $2) }
            settings.pointee.on_header_value_complete = { assembly($0).pointee.valueComplete() }
        }
        settings.pointee.on_headers_complete = { assembly($0).pointee.headersComplete($0!) }
        settings.pointee.on_chunk_header = { assembly($0).pointee.chunkHeader($0!) }
        settings.pointee.on_body = { assembly($0).pointee.bodyReceived($1, $2) }
        settings.pointee.on_message_complete = { assembly($0).pointee.messageComplete($0!) }
        return settings
    }
}
