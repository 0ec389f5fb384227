import Reactor

/// `POST /events` as HTTP: the body's media type, the batch `mode`, and `Idempotency-Key` (each key
/// answered once, across the cluster when there is one); the events themselves take the
/// `EventPath`.
final class EventService<StateType: HostedState> {
    private let path: EventPath<StateType>
    private let idempotency: IdempotencyCache
    private let idempotencyWindowMilliseconds: UInt64
    private let loop: EventLoop

    init(path: EventPath<StateType>, loop: EventLoop, configuration: ServerConfiguration) {
        self.path = path
        self.loop = loop
        idempotency = IdempotencyCache(windowSeconds: configuration.idempotencyWindow, capacity: configuration.idempotencyCapacity)
        idempotencyWindowMilliseconds = milliseconds(seconds: configuration.idempotencyWindow)
        if let journal = path.pipeline.log as? FileEventLog {
            // The keys answered before a restart: a retry of a request whose event went in (a
            // crash before the client heard) gets that event's answer.
            // One per key (the latest, should a key have been answered twice), in order of expiry,
            // the order the cache expires them in.
            let now = JournaledAnswer.now()
            var latest: [String: JournaledAnswer] = [:]
            for answer in journal.answers where answer.expiresAt > now && answer.expiresAt > latest[answer.key]?.expiresAt ?? 0 {
                latest[answer.key] = answer
            }
            for answer in latest.values.sorted(by: { $0.expiresAt < $1.expiresAt }) {
                let body = answer.body ?? EventPath<StateType>.withVersionBody(answer.version) { Array($0) }
                let response = HTTPResponse(status: .ok, contentType: .json, body: body)
                idempotency.restore(answer.key, fingerprint: answer.fingerprint, response: response,
                                    expiresIn: answer.expiresAt - now, now: loop.now)
            }
        }
    }

    func register(in router: inout Router) {
        // Captured strongly: nothing here holds the HTTP server that holds these routes, so there is no
        // cycle, and an unowned capture is retained around every call made through it.
        router.add(.post, "/events", scope: .fire) { [self] request, context, respond in
            postEvents(request, context: context, respond: respond)
        }
    }

    /// A key this server has not seen, in a cluster: claimed in Redis, so that a retry sent to
    /// another node gets the first answer too (and one sent at the same time, a 409). The claim
    /// goes out and the events are applied at once, without waiting for its answer: the append that
    /// carries them follows it on the same connection and goes in only while the key holds this
    /// request's claim (the script's fence), so a request costs one turn of Redis, not two. The
    /// request is answered once both are known: by the key's entry when the claim found one (the
    /// events, fenced off, were dropped), else as its events were.
    private func claimAcrossCluster(_ shared: any SharedEventLog, key: String, scopedKey: String, fingerprint: String,
                                    request: HTTPRequest, context: RequestContext, respond: @escaping (HTTPResponse) -> Void) {
        let sharedKey = RedisStreamLog.sha1Hex(Array(scopedKey.utf8))
        let window = idempotencyWindowMilliseconds
        // Claimed for as long as a request can take, and kept for the window once answered: a key
        // whose first request died with its node is free again soon, not after the whole window.
        let ownClaim = SharedIdempotencyEntry.newClaim(fingerprint: fingerprint)
        let answeredKey = CommitPipeline<StateType>.AnsweredKey(key: sharedKey, fingerprint: fingerprint, milliseconds: window,
                                                               claim: ownClaim, carried: CommitPipeline<StateType>.AnswerCarried())
        let pending = ClaimedRequest()
        let finish = { [self, idempotency] in
            guard let claim = pending.claim, let response = pending.response else { return }
            switch claim {
            case .success(nil):
                idempotency.finish(scopedKey, fingerprint: fingerprint, response: response)
                // A 2xx's answer went in with its events. A server error may hide events that
                // went in (an append Redis ran but did not answer, replicas that did not confirm
                // it): the key is left as it is, answered by the append itself or claimed until
                // its claim runs out, never freed for a retry that would apply the events again.
                let written = response.status.code < 300 && answeredKey.carried?.value == true
                if response.status.code < 500 && !written {
                    let answered = SharedIdempotencyEntry.answered(fingerprint: fingerprint, status: response.status.code, body: response.body)
                    shared.settleIdempotencyKey(sharedKey, claim: ownClaim, entry: IdempotencyCache.remembers(response.status.code) ? answered : nil, milliseconds: window)
                }
                respond(response)
            case .success(let entry?):
                respond(answer(key, scopedKey: scopedKey, fingerprint: fingerprint, takenBy: entry))
            case .failure(let error):
                // Events that went in had the key's claim (the fence): it was taken after all.
                guard response.status.code < 300 && answeredKey.carried?.value == true else {
                    idempotency.forget(scopedKey)
                    return respond(Problem.journalUnavailable(error).response)
                }
                idempotency.finish(scopedKey, fingerprint: fingerprint, response: response)
                respond(response)
            }
        }
        let apply = { [self] in
            applyEvents(request, context: context, answeredKey: answeredKey) { response in
                pending.response = response
                finish()
            }
        }
        // Right after a fence (see `CommitPipeline.wasFencedRecently`), applied only once the key is
        // known to be this request's, as a retry storm would otherwise fence off every next group.
        let applyOnceClaimed = path.pipeline.wasFencedRecently
        shared.claimIdempotencyKey(sharedKey, claim: ownClaim, milliseconds: min(window, IdempotencyCache.sharedClaimMilliseconds)) { claim in
            pending.claim = claim
            guard applyOnceClaimed else { return finish() }
            if case .success(nil) = claim { return apply() }
            // Not applied: the claim's answer is the request's.
            pending.response = Problem.journalUnavailable(EventLogError(.other, "not applied")).response
            finish()
        }
        if applyOnceClaimed { return }
        // Not sent (Redis is not reachable): nothing to apply.
        if case .failure(let error)? = pending.claim {
            idempotency.forget(scopedKey)
            return respond(Problem.journalUnavailable(error).response)
        }
        apply()
    }

    /// A keyed request and its key's claim, until both are answered (on the loop thread).
    private final class ClaimedRequest {
        var claim: Result<SharedIdempotencyEntry?, EventLogError>?
        var response: HTTPResponse?
    }

    /// The answer to a request whose key another request holds in Redis (`entry`).
    private func answer(_ key: String, scopedKey: String, fingerprint: String, takenBy entry: SharedIdempotencyEntry) -> HTTPResponse {
        switch entry {
        case _ where entry.fingerprint != fingerprint:
            idempotency.forget(scopedKey)
            return Problem.idempotencyKeyReused(key).response
        case .inFlight:
            idempotency.forget(scopedKey)
            return Problem.idempotentRequestInProgress(key).response
        case .answered(_, let code, let body):
            let status = IdempotencyCache.rememberedStatuses.first { $0.code == code } ?? HTTPStatus(code, "Replayed")
            var response = HTTPResponse(status: status, contentType: code < 300 ? .json : .problemJSON, body: body)
            idempotency.finish(scopedKey, fingerprint: fingerprint, response: response)
            response.addHeader("Idempotent-Replayed", "true")
            return response
        }
    }

    // MARK: POST /events

    private func postEvents(_ request: HTTPRequest, context: RequestContext, respond: @escaping (HTTPResponse) -> Void) {
        guard let key = request.headers["Idempotency-Key"] else {
            return applyEvents(request, context: context, respond: respond)
        }
        guard (1...IdempotencyCache.maximumKeyBytes).contains(key.utf8.count) else {
            return respond(Problem.invalidParameter("Idempotency-Key", "an Idempotency-Key is 1 to \(IdempotencyCache.maximumKeyBytes) bytes long, not \(key.utf8.count)").response)
        }
        let scopedKey = IdempotencyCache.scopedKey(key, client: context.principal?.name)
        let fingerprint = IdempotencyCache.fingerprint(of: request)
        switch idempotency.admit(scopedKey, displayKey: key, fingerprint: fingerprint, now: loop.now) {
        case .proceed:
            if let shared = path.pipeline.shared {
                return claimAcrossCluster(shared, key: key, scopedKey: scopedKey, fingerprint: fingerprint, request: request, context: context, respond: respond)
            }
            // With a journal, the key is kept in the record of the request's (last) event.
            let journaled = path.pipeline.log == nil ? nil
                : CommitPipeline<StateType>.AnsweredKey(key: scopedKey, fingerprint: fingerprint, milliseconds: idempotencyWindowMilliseconds)
            applyEvents(request, context: context, answeredKey: journaled) { [idempotency] response in
                idempotency.finish(scopedKey, fingerprint: fingerprint, response: response)
                respond(response)
            }
        case .replay(var response):
            response.addHeader("Idempotent-Replayed", "true")
            respond(response)
        case .reject(let problem):
            respond(problem.response)
        }
    }

    private func applyEvents(_ request: HTTPRequest, context: RequestContext, answeredKey: CommitPipeline<StateType>.AnsweredKey? = nil,
                             respond: @escaping (HTTPResponse) -> Void) {
        guard request.headers.withContentType({ Self.isJSON(bytes: $0) }) else {
            return respond(Problem.unsupportedMediaType(request.headers["Content-Type"], expected: "application/json").response)
        }
        let mode: BatchMode
        switch Problem.parameter("mode", of: request) {
        case .success(nil), .success("strict"): mode = .allOrNothing
        case .success("prune"): mode = .prune
        case .success(let other?): return respond(Problem.invalidParameter("mode", "mode must be strict or prune, not \"\(other)\"").response)
        case .failure(let problem): return respond(problem.response)
        }
        path.post(request.body, mode: mode, origin: context.principal, answeredKey: answeredKey, answer: respond)
    }

    /// `application/json`, or any `application/…+json` type, with or without parameters; compared as
    /// bytes, ignoring ASCII case (this runs for every event posted).
    static func isJSON(bytes value: UnsafeBufferPointer<UInt8>?) -> Bool {
        guard let value else { return false }
        // What nearly every client sends, before the general case.
        if RawBytes.equal(UnsafeRawBufferPointer(value), "application/json") { return true }
        // The media type: up to any parameters, without the whitespace before them.
        var end = value.firstIndex(of: UInt8(ascii: ";")) ?? value.count
        while end > 0, value[end - 1] == 32 || value[end - 1] == 9 { end -= 1 }
        let mediaType = UnsafeBufferPointer(rebasing: value[..<end])
        func matches(_ text: StaticString, at offset: Int) -> Bool {
            let count = text.utf8CodeUnitCount
            guard offset >= 0, offset + count <= mediaType.count else { return false }
            for index in 0..<count where HTTPASCII.lowercased(mediaType[offset + index]) != text.utf8Start[index] { return false }
            return true
        }
        let isJSONType = mediaType.count == 16 ? matches("application/json", at: 0)
            : mediaType.count > 17 && matches("application/", at: 0) && matches("+json", at: mediaType.count - 5)
        return isJSONType && charsetIsUTF8(UnsafeBufferPointer(rebasing: value[end...]))
    }

    /// No `charset` among `parameters`, or UTF-8: the body is read as UTF-8, and one announced in
    /// another encoding (`charset=UTF-16`) is refused rather than misread.
    private static func charsetIsUTF8(_ parameters: UnsafeBufferPointer<UInt8>) -> Bool {
        func trimmed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> UnsafeBufferPointer<UInt8> {
            var bytes = bytes
            while let first = bytes.first, first == 32 || first == 9 || first == 34 { bytes.removeFirst() }
            while let last = bytes.last, last == 32 || last == 9 || last == 34 { bytes.removeLast() }
            return UnsafeBufferPointer(rebasing: bytes)
        }
        for parameter in parameters.split(separator: UInt8(ascii: ";")) {
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")),
                  HTTPASCII.caseInsensitiveEqual(trimmed(parameter[..<equals]), lowercase: "charset") else { continue }
            let charset = trimmed(parameter[(equals + 1)...])
            if !HTTPASCII.caseInsensitiveEqual(charset, lowercase: "utf-8") && !HTTPASCII.caseInsensitiveEqual(charset, lowercase: "utf8") { return false }
        }
        return true
    }
}
