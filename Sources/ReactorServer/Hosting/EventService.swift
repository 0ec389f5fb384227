import Logging
import Reactor

/// `POST /events`: one event (a JSON object with a `"type"`) or an array of them; an array is
/// all-or-nothing unless `?mode=prune`. Answers `{"version": N}` once the event is published (with a
/// journal, once it is written down), with an `Idempotency-Key` once per key.
///
/// Runs on the loop thread, where its core is confined: an event is applied inline, with no hop.
final class EventService<StateType: HostedState> {
    let core: Core<StateType>
    private let pipeline: CommitPipeline<StateType>
    private let logger: Logger
    private let idempotency: IdempotencyCache
    private let idempotencyWindowMilliseconds: UInt64
    private let loop: EventLoop
    /// See `reusedVersionBody`. @exclusivity(unchecked): touched on the loop thread only, by that
    /// method alone, which calls nothing that could reach it meanwhile.
    @exclusivity(unchecked) private var spareVersionBody: [UInt8] = []

    init(core: Core<StateType>, pipeline: CommitPipeline<StateType>, loop: EventLoop, configuration: ServerConfiguration, logger: Logger) {
        self.core = core
        self.pipeline = pipeline
        self.loop = loop
        self.logger = logger
        idempotency = IdempotencyCache(windowSeconds: configuration.idempotencyWindow, capacity: configuration.idempotencyCapacity)
        idempotencyWindowMilliseconds = UInt64(configuration.idempotencyWindow * 1_000)
    }

    func register(in router: inout Router) {
        // Captured strongly: nothing here holds the HTTP server that holds these routes, so there is no
        // cycle, and an unowned capture is retained around every call made through it.
        router.add(.post, "/events", scope: .fire) { [self] request, context, respond in
            postEvents(request, context: context, respond: respond)
        }
    }

    /// A key this server has not seen, in a cluster: claimed in Redis first, so that a retry sent
    /// to another node gets the first answer too (and one sent at the same time, a 409).
    private func claimAcrossCluster(_ shared: any SharedEventLog, key: String, scopedKey: String, fingerprint: Int,
                                    request: HTTPRequest, context: RequestContext, respond: @escaping (HTTPResponse) -> Void) {
        let sharedKey = RedisStreamLog.sha1Hex(Array(scopedKey.utf8))
        let sharedFingerprint = IdempotencyCache.sharedFingerprint(of: request)
        let window = idempotencyWindowMilliseconds
        // Claimed for as long as a request can take, and kept for the window once answered: a key
        // whose first request died with its node is free again soon, not after the whole window.
        shared.claimIdempotencyKey(sharedKey, fingerprint: sharedFingerprint, milliseconds: min(window, IdempotencyCache.sharedClaimMilliseconds)) { [self] claim in
            switch claim {
            case .success(nil):
                applyEvents(request, context: context) { [idempotency] response in
                    idempotency.finish(scopedKey, fingerprint: fingerprint, response: response)
                    let answered = SharedIdempotencyEntry.answered(fingerprint: sharedFingerprint, status: response.status.code, body: response.body)
                    shared.settleIdempotencyKey(sharedKey, entry: IdempotencyCache.remembers(response.status.code) ? answered : nil, milliseconds: window)
                    respond(response)
                }
            case .success(let entry?) where entry.fingerprint != sharedFingerprint:
                idempotency.forget(scopedKey)
                respond(Problem.idempotencyKeyReused(key).response)
            case .success(.inFlight?):
                idempotency.forget(scopedKey)
                respond(Problem.idempotentRequestInProgress(key).response)
            case .success(.answered(_, let code, let body)?):
                let status = IdempotencyCache.rememberedStatuses.first { $0.code == code } ?? HTTPStatus(code, "Replayed")
                var response = HTTPResponse(status: status, contentType: code < 300 ? .json : .problemJSON, body: body)
                idempotency.finish(scopedKey, fingerprint: fingerprint, response: response)
                response.addHeader("Idempotent-Replayed", "true")
                respond(response)
            case .failure(let error):
                idempotency.forget(scopedKey)
                respond(Problem.journalUnavailable(error).response)
            }
        }
    }

    // MARK: POST /events

    private func postEvents(_ request: HTTPRequest, context: RequestContext, respond: @escaping (HTTPResponse) -> Void) {
        guard let key = request.headers["Idempotency-Key"] else {
            return applyEvents(request, context: context, respond: respond)
        }
        let scopedKey = IdempotencyCache.scopedKey(key, client: context.principal?.name)
        let fingerprint = IdempotencyCache.fingerprint(of: request)
        switch idempotency.admit(scopedKey, displayKey: key, fingerprint: fingerprint, now: loop.now) {
        case .proceed:
            if let shared = pipeline.shared {
                return claimAcrossCluster(shared, key: key, scopedKey: scopedKey, fingerprint: fingerprint, request: request, context: context, respond: respond)
            }
            applyEvents(request, context: context) { [idempotency] response in
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

    private func applyEvents(_ request: HTTPRequest, context: RequestContext, respond: @escaping (HTTPResponse) -> Void) {
        guard request.headers.withContentType({ Self.isJSON(bytes: $0) }) else {
            return respond(Problem.unsupportedMediaType(request.headers["Content-Type"], expected: "application/json").response)
        }
        let mode: BatchMode
        switch request.queryValue("mode") {
        case nil, "strict": mode = .allOrNothing
        case "prune": mode = .prune
        case let other?: return respond(Problem.invalidParameter("mode", "mode must be strict or prune, not \"\(other)\"").response)
        }
        let origin = context.principal
        let event: any Event
        // The body, when it is the event's own JSON: the journal can keep it as it is.
        var wireForm: [UInt8]?
        if let read = request.body.withUnsafeBytes({ StateType.decodeEvent(fromBody: $0) }) {
            event = read
            wireForm = request.body
        } else {
            let body: JSON
            do {
                body = try JSONParser.carrier.parse(request.body)
            } catch {
                return respond(Problem.malformedJSON(error).response)
            }
            if case .array(let items) = body {
                return fireBatch(items, mode: mode, origin: origin, respond: respond)
            }
            do {
                event = try StateType.eventRegistry.decode(body)
            } catch {
                return respond(Problem.forEvent(error, index: nil).response)
            }
        }
        if let result = pipeline.offering(wireForm: wireForm, { core.fireIfIdle(event: event, origin: origin) }) {
            if case .success(let version) = result, pipeline.isPublished(version) {
                return respond(.json(reusedVersionBody(version)))
            }
            return Self.answer(result, pipeline: pipeline, respond: respond)
        }
        let responder = LoopBoundResponder(respond, loop: loop)
        core.fire(event: event, origin: origin) { [pipeline] result in
            Self.answer(result, pipeline: pipeline, respond: responder.respond)
        }
    }

    /// Answers a fired event once its version is published (at once without a journal).
    private static func answer(_ result: Result<UInt64, any Error>, pipeline: CommitPipeline<StateType>, respond: @escaping (HTTPResponse) -> Void) {
        switch result {
        case .success(let version) where pipeline.isPublished(version):
            respond(.json(versionBody(version)))
        case .success(let version):
            pipeline.whenPublished(version) { outcome in
                switch outcome {
                case .success(let published): respond(.json(versionBody(published)))
                case .failure(let problem): respond(problem.response)
                }
            }
        case .failure(let error):
            respond(Problem.forEvent(error, index: nil).response)
        }
    }

    private func fireBatch(_ items: [JSON], mode: BatchMode, origin: Principal?, respond: @escaping (HTTPResponse) -> Void) {
        let registry = StateType.eventRegistry
        var events: [any Event] = []
        var positions: [Int] = []
        var undecodable: [(index: Int, problem: Problem)] = []
        for (index, item) in items.enumerated() {
            do {
                events.append(try registry.decode(item))
                positions.append(index)
            } catch {
                let problem = Problem.forEvent(error, index: index)
                if mode == .allOrNothing { return respond(problem.response) }
                undecodable.append((index, problem))
            }
        }
        let responder = LoopBoundResponder(respond, loop: loop)
        core.fire(events: events, mode: mode, origin: origin) { [undecodable, positions, pipeline] result in
            let respond = responder.respond
            switch result {
            case .success(let outcome):
                var rejected = undecodable
                // Positions in the posted array: `outcome` counts only the events that decoded.
                rejected += outcome.rejected.map { (positions[$0.index], Problem.forEvent($0.error, index: positions[$0.index])) }
                rejected.sort { $0.index < $1.index }
                var members: JSON.Object = ["version": .integer(Int64(outcome.version)), "applied": .integer(Int64(outcome.applied))]
                if mode == .prune {
                    members["rejected"] = .array(rejected.map { JSON.object(["index": .integer(Int64($0.index)), "problem": $0.problem.json]) })
                }
                pipeline.whenPublished(outcome.version) { published in
                    switch published {
                    case .success(let version):
                        members["version"] = .integer(Int64(version))
                        respond(.json(JSON.object(members).jsonBytes))
                    case .failure(let problem):
                        respond(problem.response)
                    }
                }
            case .failure(let rejection):
                respond(Problem.forEvent(rejection.error, index: positions[rejection.index]).response)
            }
        }
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
        if mediaType.count == 16 { return matches("application/json", at: 0) }
        return mediaType.count > 17 && matches("application/", at: 0) && matches("+json", at: mediaType.count - 5)
    }

    static func versionBody(_ version: UInt64) -> [UInt8] {
        // Copied into an array made for it in one go. (Growing an array, or
        // `Array(unsafeUninitializedCapacity:)`, which is not specialised and looks its storage type
        // up at run time, costs several times as much.)
        withVersionBody(version) { [UInt8]($0) }
    }

    /// `{"version":N}` in `spareVersionBody`, written over in place: the answer before has been
    /// written and dropped by now (unless it waits behind a pipelined request, and then the array is
    /// copied), so an answer costs no allocation.
    private func reusedVersionBody(_ version: UInt64) -> [UInt8] {
        Self.withVersionBody(version) { body in
            // Versions mostly keep their number of digits from one answer to the next: then the
            // bytes are overwritten where they are (emptying and refilling costs several times as much).
            if spareVersionBody.count == body.count {
                spareVersionBody.withUnsafeMutableBufferPointer { spare in
                    UnsafeMutableRawBufferPointer(spare).copyMemory(from: UnsafeRawBufferPointer(body))
                }
            } else {
                spareVersionBody.removeAll(keepingCapacity: true)
                spareVersionBody.append(contentsOf: body)
            }
        }
        return spareVersionBody
    }

    /// The body of an answer to `POST /events`, written on the stack.
    private static func withVersionBody<Result>(_ version: UInt64, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            let prefix: StaticString = #"{"version":"#
            var count = prefix.utf8CodeUnitCount
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(start: prefix.utf8Start, count: count))
            DecimalDigits.withDigits(of: version) { digits in
                UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[count...]).copyMemory(from: digits)
                count += digits.count
            }
            buffer[count] = UInt8(ascii: "}")
            return body(UnsafeBufferPointer(rebasing: buffer[...count]))
        }
    }
}
