import CUV

/// Assembles HTTP/1.0 and HTTP/1.1 requests from the bytes of one connection, on llhttp.
///
/// Sans-I/O: give it bytes as they are read, take events out. One parser per connection, used
/// from the connection's thread only (hence not Sendable).
///
///     var input = UnsafeRawBufferPointer(readBuffer)
///     while let event = parser.next(from: &input) { ... }
///
/// `next(from:)` consumes input only up to the next event, so the caller decides when to go on
/// (e.g. after answering `100 Continue`). Nothing is copied out of `input` except the bytes
/// that end up in a request, so the read buffer can be reused as soon as the loop ends.
///
/// llhttp runs without any lenient flag. On top of it the parser rejects what llhttp 8.1
/// tolerates but we do not want: header names that are not tokens, a CR standing for a CRLF in the
/// head (see `HTTPHeadFields`), a chunked body framed without its CRLFs (`ChunkedFraming`), and
/// versions other than 1.0/1.1.
public final class HTTPRequestParser {
    public enum Output: Equatable, Sendable {
        /// The head of an HTTP/1.1 request that sent `Expect: 100-continue` and announced a body.
        /// Answer `100 Continue` (or a final status) before the client sends the body; the
        /// complete request follows as `.request`.
        case expectsContinue(HTTPRequest)
        /// The head of a request whose body did not arrive with it (only when the parser was made
        /// with `announcesBodies`): the caller may refuse the request before its body is read
        /// (`stop()`, then answer and close). The complete request follows as `.request`.
        case bodyFollows(HTTPRequest)
        case request(HTTPRequest)
        /// An upgrade (e.g. WebSocket) or CONNECT request. `leftover` holds the input that
        /// followed it; it and everything read later belong to the new protocol. The parser stops
        /// here unless `declineUpgrade()` is called.
        case upgrade(HTTPRequest, leftover: [UInt8])
        /// The parser is dead from now on: answer `error.status` and close.
        case error(HTTPParseError)
    }

    public enum Phase: Equatable, Sendable {
        case parsing
        /// After `.upgrade`: the connection speaks another protocol now.
        case upgraded
        /// After a request without keep-alive (RFC 9112 §9.6: no further requests may be
        /// processed), after `finish()` or `stop()`. Further input is ignored.
        case closed
        case failed(HTTPParseError)
    }

    public let limits: HTTPLimits

    /// Where the parser stands between calls.
    private struct Progress {
        var phase: Phase = .parsing
        /// After resuming from a pause llhttp may have work left that needs no input (completing a
        /// bodiless message, or noting that one ended cleanly), so it runs once more even when the
        /// input is used up.
        var hasWorkWithoutInput = false
        /// What is left after a complete message (resetting for the next one) waits for the next
        /// input, or for `finish()`: running llhttp once more for it alone would cost an execution
        /// per request.
        var workWithoutInputDeferred = false
        var upgradeKeepsAlive = false
        /// The method, target and headers of the request that made the parser fail, when its head was
        /// complete (a body too large, say): the server logs the error answer and adds CORS headers with it.
        var failedRequestHead: HTTPRequest?
        /// While a chunked body is read: its framing, checked on the bytes llhttp reads.
        var chunkedFraming: ChunkedFraming?
    }
    /// @exclusivity(unchecked): touched on the loop thread only, and no callback runs while one of
    /// its fields is being modified; a dynamic exclusivity check on each access would cost more
    /// than the work it guards.
    @exclusivity(unchecked) private var progress = Progress()

    public var phase: Phase { progress.phase }
    /// The method, target and headers of the request that made the parser fail, when its head was
    /// complete (a body too large, say): the server logs the error answer and adds CORS headers with it.
    public var failedRequestHead: HTTPRequest? { progress.failedRequestHead }

    // Heap-allocated: llhttp keeps pointers to both between calls, and a class's stored
    // properties have no stable address. (Why the callbacks' state is not in this object at
    // all is explained on HTTPRequestAssembly.)
    private let llhttp: UnsafeMutablePointer<llhttp_t>
    private let assembly: UnsafeMutablePointer<HTTPRequestAssembly>

    private let maxBodyWireBytes: Int
    private let announcesBodies: Bool

    /// With `announcesBodies`, a request whose body is still to come is announced by its head
    /// first (`.bodyFollows`).
    public init(limits: HTTPLimits = HTTPLimits(), announcesBodies: Bool = false) {
        self.limits = limits
        self.announcesBodies = announcesBodies
        // Chunked framing may cost as much again as the content, plus a head's worth for
        // trailers and extensions; beyond that a client is only making us spin.
        let (doubled, overflow1) = limits.maxBodyBytes.multipliedReportingOverflow(by: 2)
        let (sum, overflow2) = doubled.addingReportingOverflow(limits.maxHeaderBytes)
        maxBodyWireBytes = overflow1 || overflow2 ? .max : sum
        assembly = .allocate(capacity: 1)
        assembly.initialize(to: HTTPRequestAssembly(limits: limits))
        llhttp = .allocate(capacity: 1)
        llhttp_init(llhttp, HTTP_REQUEST, HTTPRequestAssembly.llhttpSettings)
        llhttp.pointee.data = UnsafeMutableRawPointer(assembly)
    }

    deinit {
        llhttp.deallocate()
        assembly.deinitialize(count: 1)
        assembly.deallocate()
    }

    // MARK: - Driving

    /// Parses `input` up to the next event and advances `input` past the bytes used. Returns nil
    /// when `input` is used up without completing anything (the parser keeps the partial
    /// request). After `.error`, `.upgrade` or a request without keep-alive, the rest of `input`
    /// is consumed and nil is returned from then on.
    public func next(from input: inout UnsafeRawBufferPointer) -> Output? {
        guard case .parsing = progress.phase else {
            input = UnsafeRawBufferPointer(rebasing: input[input.endIndex...])
            return nil
        }
        while !input.isEmpty || progress.hasWorkWithoutInput {
            progress.hasWorkWithoutInput = false
            progress.workWithoutInputDeferred = false
            let base = UnsafeRawPointer(input.baseAddress) ?? UnsafeRawPointer(emptyInputAddress)
            assembly.pointee.pause = .none
            assembly.pointee.executionStarts(at: base)
            let code = llhttp_execute(llhttp, base.assumingMemoryBound(to: CChar.self), input.count)
            let consumed = code == HPE_OK ? input.count : bytesConsumed(from: base, limit: input.count)
            // Where llhttp stopped reading a method, the byte it stopped at tells why.
            let methodStop = code == HPE_INVALID_METHOD && consumed < input.count ? base.load(fromByteOffset: consumed, as: UInt8.self) : nil
            assembly.pointee.executionEnded(at: base + consumed)
            if progress.chunkedFraming != nil, let reason = progress.chunkedFraming!.consume(UnsafeRawBufferPointer(start: base, count: consumed)) {
                input = UnsafeRawBufferPointer(rebasing: input[consumed...])
                return fail(.malformed(name: "CHUNKED_FRAMING", reason: reason), &input)
            }
            input = UnsafeRawBufferPointer(rebasing: input[consumed...])

            // Wire limits first, so the same input gives the same error however it is split.
            if let error = countWireBytes(consumed) ?? assembly.pointee.callbackError {
                return fail(error, &input)
            }
            switch code {
            case HPE_OK:
                continue
            case HPE_PAUSED where assembly.pointee.pause == .headersComplete:
                if let error = assembly.pointee.finishHead(llhttp.pointee) { return fail(error, &input) }
                if UInt32(llhttp.pointee.flags) & F_CHUNKED.rawValue != 0 { progress.chunkedFraming = ChunkedFraming() }
                llhttp_resume(llhttp)
                // llhttp may have work left that needs no input (completing a bodiless message).
                progress.hasWorkWithoutInput = true
                if assembly.pointee.bodyPending {
                    if assembly.pointee.request.expectsContinue { return .expectsContinue(assembly.pointee.request) }
                    if announcesBodies && (progress.chunkedFraming != nil || llhttp.pointee.content_length > UInt64(input.count)) {
                        return .bodyFollows(assembly.pointee.request)
                    }
                }
            case HPE_PAUSED:
                llhttp_resume(llhttp)
                progress.chunkedFraming = nil
                progress.workWithoutInputDeferred = true
                let complete = assembly.pointee.takeRequest()
                if !complete.keepAlive { close(&input) }
                return .request(complete)
            case HPE_PAUSED_UPGRADE:
                let leftover = [UInt8](input)
                input = UnsafeRawBufferPointer(rebasing: input[input.endIndex...])
                progress.phase = .upgraded
                let complete = assembly.pointee.takeRequest()
                progress.upgradeKeepsAlive = complete.keepAlive
                return .upgrade(complete, leftover: leftover)
            default:
                let afterMethodBytes = assembly.pointee.headWireBytes > 0
                return fail(methodStop.map { Self.methodError(stoppedAt: $0, afterMethodBytes: afterMethodBytes) } ?? translate(code), &input)
            }
        }
        return nil
    }

    /// A method llhttp refused: 501 for a well-formed token it does not know (`FOO`, `GE ` ended
    /// early), 400 for bytes that are no token at all (`GE(T`), and a TLS handshake record (0x16)
    /// called what it is.
    private static func methodError(stoppedAt byte: UInt8, afterMethodBytes: Bool) -> HTTPParseError {
        if byte == 0x16 && !afterMethodBytes { return .tlsOnPlainPort }
        if HTTPASCII.isTokenByte(byte) || (byte == UInt8(ascii: " ") && afterMethodBytes) { return .unsupportedMethod }
        return .malformed(name: "HPE_INVALID_METHOD", reason: "The request line does not start with a method token")
    }

    /// Parses all of `input`, handing each event to `onEvent` as it comes.
    public func feed(_ input: UnsafeRawBufferPointer, _ onEvent: (Output) -> Void) {
        var input = input
        while let event = next(from: &input) { onEvent(event) }
    }

    /// The peer will send no more (EOF on the read side). Returns `.error` if a request was cut
    /// short, so the server can still answer 400 on a half-closed connection; nil otherwise.
    public func finish() -> Output? {
        guard case .parsing = progress.phase else { return nil }
        var nothing = UnsafeRawBufferPointer(start: nil, count: 0)
        if progress.hasWorkWithoutInput || progress.workWithoutInputDeferred {
            progress.hasWorkWithoutInput = true
            if let event = next(from: &nothing) { return event }
        }
        let code = llhttp_finish(llhttp)
        guard code == HPE_OK else { return fail(translate(code), &nothing) }
        close(&nothing)
        return nil
    }

    /// Reads nothing more: the caller refused the request being read (on its head) and closes.
    public func stop() {
        if case .parsing = progress.phase { progress.phase = .closed }
    }

    /// Keeps speaking HTTP/1.1 after an `.upgrade` the server will not perform (e.g. an
    /// `Upgrade: h2c` it ignores, RFC 9110 §7.8). Feed the event's `leftover` next.
    public func declineUpgrade() {
        precondition(progress.phase == .upgraded, "declineUpgrade() without a pending upgrade")
        llhttp_resume_after_upgrade(llhttp)
        progress.phase = .parsing
        if !progress.upgradeKeepsAlive {
            var nothing = UnsafeRawBufferPointer(start: nil, count: 0)
            close(&nothing)
        }
    }

    /// Takes a handled request's buffers back for the next request, when they are small: a keep-alive
    /// client's requests then cost no allocation for their head and body. (A buffer something else
    /// still holds is not reused: the next request gets a fresh one, as without recycling.)
    public func recycle(_ request: consuming HTTPRequest) {
        guard case .parsing = progress.phase else { return }
        var request = request
        assembly.pointee.recycle(&request)
    }

    /// Bytes of buffer capacity held for the request in progress (for tests of memory use).
    var bufferedCapacity: Int { assembly.pointee.bufferedCapacity }

    // MARK: - Between executions

    private func bytesConsumed(from base: UnsafeRawPointer, limit: Int) -> Int {
        guard let position = llhttp_get_error_pos(llhttp) else { return limit }
        return min(max(UnsafeRawPointer(position) - base, 0), limit)
    }

    /// Counts the `consumed` bytes as the head's or the body's: llhttp pauses where a head ends, so
    /// an execution's bytes are all one or all the other.
    private func countWireBytes(_ consumed: Int) -> HTTPParseError? {
        let headBytes = assembly.pointee.inBody ? 0 : consumed
        assembly.pointee.headWireBytes += headBytes
        assembly.pointee.bodyWireBytes += consumed - headBytes
        if assembly.pointee.headWireBytes > limits.maxHeaderBytes { return .headersTooLarge }
        return assembly.pointee.bodyWireBytes > maxBodyWireBytes ? .bodyTooLarge : nil
    }

    private func fail(_ error: HTTPParseError, _ input: inout UnsafeRawBufferPointer) -> Output {
        progress.phase = .failed(error)
        if assembly.pointee.inBody {
            let request = assembly.pointee.request
            progress.failedRequestHead = HTTPRequest(method: request.method, target: request.target, version: request.version, headers: request.headers)
        }
        release(&input)
        return .error(error)
    }

    private func close(_ input: inout UnsafeRawBufferPointer) {
        progress.phase = .closed
        release(&input)
    }

    private func release(_ input: inout UnsafeRawBufferPointer) {
        input = UnsafeRawBufferPointer(rebasing: input[input.endIndex...])
        assembly.pointee.releaseBuffers()
    }

    private func translate(_ code: llhttp_errno_t) -> HTTPParseError {
        switch code {
        case HPE_INVALID_METHOD:
            return .unsupportedMethod
        case HPE_PAUSED_H2_UPGRADE:
            return .unsupportedVersion
        // llhttp uses this code for junk after a good version too; that is a syntax error.
        case HPE_INVALID_VERSION where !(llhttp.pointee.http_major == 1 && llhttp.pointee.http_minor <= 1):
            return .unsupportedVersion
        default:
            return .malformed(
                name: String(cString: llhttp_errno_name(code)),
                reason: llhttp_get_error_reason(llhttp).map { String(cString: $0) } ?? ""
            )
        }
    }
}

/// A valid address for executing llhttp on no input (it never reads it then).
/// nonisolated(unsafe): nothing ever reads or writes the byte; only its address is used.
nonisolated(unsafe) private let emptyInputAddress = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
