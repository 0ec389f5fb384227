import Logging
import Reactor

/// The past of a hosted state, read back from its event log:
///
/// - `GET /history?since=N&limit=M`: the events applied after version N, as JSON lines.
/// - `GET /state?version=N` (through `StateService`): the state as it was at version N, rebuilt from
///   the newest snapshot at or before N and the journal after it, away from the loop thread.
final class HistoryService<StateType: HostedState> {
    static var defaultLimit: Int { 100 }
    static var maxLimit: Int { 10_000 }

    private let pipeline: CommitPipeline<StateType>
    private let loop: EventLoop
    private let logger: Logger
    /// A page ends before the event that would take it past this many bytes (it holds one event at
    /// least): `limit` counts events, which may be large.
    private let pageBytes: Int
    /// `GET /state?version=N` requests being answered now.
    private var rebuildsInFlight = 0
    static var maxRebuildsInFlight: Int { 2 }

    init(pipeline: CommitPipeline<StateType>, loop: EventLoop, pageBytes: Int, logger: Logger) {
        self.pipeline = pipeline
        self.loop = loop
        self.pageBytes = pageBytes
        self.logger = logger
    }

    func register(in router: inout Router) {
        router.add(.get, "/history", scope: .read) { [unowned self] request, _, respond in
            history(request, respond: respond)
        }
    }

    // MARK: GET /history

    private func history(_ request: HTTPRequest, respond: @escaping (HTTPResponse) -> Void) {
        guard let log = pipeline.log else { return respond(Problem.historyNotKept().response) }
        let since: UInt64
        let limit: Int
        switch (Self.integer(request, "since", default: 0, in: 0...UInt64(Int64.max)),
                Self.integer(request, "limit", default: UInt64(Self.defaultLimit), in: 1...UInt64(Self.maxLimit))) {
        case (.success(let a), .success(let b)): (since, limit) = (a, Int(b))
        case (.failure(let problem), _), (_, .failure(let problem)): return respond(problem.response)
        }
        let published = pipeline.publishedVersion
        log.read(after: since, limit: limit) { [pageBytes] result in
            switch result {
            case .success(let records):
                var body: [UInt8] = []
                var size = 0
                var included = 0
                for record in records where record.version <= published {
                    size += record.payload.count + 32
                    if included > 0 && size > pageBytes { break }
                    included += 1
                }
                body.reserveCapacity(size)
                for record in records.prefix(included) {
                    body.append(contentsOf: #"{"version":"#.utf8)
                    body.appendDecimal(record.version)
                    body.append(contentsOf: #","event":"#.utf8)
                    body.append(contentsOf: record.payload)
                    body.append(contentsOf: "}\n".utf8)
                }
                respond(HTTPResponse(status: .ok, contentType: .ndjson, headers: [
                    ("Reactor-Oldest-Version", "\(log.oldestVersion)"), ("Reactor-Version", "\(published)"),
                ], body: body))
            case .failure(let error) where error.kind == .gone:
                respond(Problem.historyGone("the events after version \(since) are no longer kept: \(error.message)", oldest: log.oldestVersion).response)
            case .failure(let error):
                respond(Self.unreadable("the journal cannot be read", error).response)
            }
        }
    }

    // MARK: GET /state?version=N

    /// Answers with the selected value of the state at `version` (an earlier one than published).
    func state(at version: UInt64, pointer: JSONPointer?, waited: Bool = false, respond: @escaping (HTTPResponse) -> Void) {
        let published = pipeline.publishedVersion
        // In a cluster, a version another node acknowledged comes here soon: waited for, once, briefly.
        if version > published, pipeline.shared != nil, !waited {
            return pipeline.whenPublished(catchingUpTo: version) { [self] in
                state(at: version, pointer: pointer, waited: true, respond: respond)
            }
        }
        guard version <= published else {
            return respond(Problem.versionNotFound(version, current: published).response)
        }
        guard let log = pipeline.log else { return respond(Problem.historyNotKept().response) }
        // Rebuilds run on libuv's thread pool, where the journal writes and syncs too: a few at a
        // time, so that readers of the past never hold up acknowledging the present.
        guard rebuildsInFlight < Self.maxRebuildsInFlight else {
            return respond(Problem.historyUnavailable("\(Self.maxRebuildsInFlight) past states are being rebuilt already; retry").response)
        }
        rebuildsInFlight += 1
        let respond = { [self] (response: HTTPResponse) in
            rebuildsInFlight -= 1
            respond(response)
        }
        let gone = { (detail: String) in
            respond(Problem.historyGone("the state at version \(version) can no longer be rebuilt: \(detail)", oldest: log.oldestVersion).response)
        }
        guard version >= log.oldestVersion else {
            return gone("the oldest kept is version \(log.oldestVersion)")
        }
        log.loadSnapshot(atOrBefore: version) { [loop] result in
            guard case .success(let loaded) = result, let snapshot = loaded else {
                if case .failure(let error) = result { return respond(Self.unreadable("the snapshot cannot be read", error).response) }
                return gone("no snapshot at or before it is kept")
            }
            let count = Int(version - snapshot.version)
            log.read(after: snapshot.version, limit: max(count, 1)) { result in
                let records: [LogRecord]
                switch result {
                case .success(let read) where count == 0 || read.last?.version == version: records = count == 0 ? [] : read
                case .success: return gone("the journal after the snapshot is incomplete")
                case .failure(let error) where error.kind == .gone: return gone(error.message)
                case .failure(let error): return respond(Self.unreadable("the journal cannot be read", error).response)
                }
                loop.runInThreadPool({ () -> Result<[UInt8], EventLogError> in
                    Result { () throws(EventLogError) in
                        var state = try StateType(snapshot: snapshot)
                        for record in records { try state.replay(record) }
                        let json: JSON
                        do { json = try state.jsonValue() } catch {
                            throw EventLogError(.other, "the state does not encode: \(error)")
                        }
                        guard let pointer, !pointer.isRoot else { return json.jsonBytes }
                        guard let value = json[pointer] else { throw EventLogError(.gone, pointer.string) }
                        return value.jsonBytes
                    }
                }) { result in
                    switch result {
                    case .success(let body):
                        var response = HTTPResponse.json(body)
                        response.addHeader("ETag", "\"\(version)\"")
                        respond(response)
                    case .failure(let error) where error.kind == .gone:
                        respond(Problem.pathNotFound(error.message).response)
                    case .failure(let error):
                        respond(Problem.internalError("the state at version \(version) cannot be rebuilt: \(error.message)").response)
                    }
                }
            }
        }
    }

    /// A log that could not be read: for now (503: a cluster's Redis is unreachable, or holds
    /// another history than this node's until the operator sets it right), or because something is
    /// wrong with it (500).
    private static func unreadable(_ what: String, _ error: EventLogError) -> Problem {
        switch error.kind {
        case .unavailable, .indeterminate: .historyUnavailable("\(what) now: \(error.message)")
        case .diverged: .historyUnavailable("\(what) from the cluster's log: \(error.message)")
        default: .internalError("\(what): \(error.message)")
        }
    }

    /// A non-negative integer query parameter within `range`.
    static func integer(_ request: HTTPRequest, _ name: String, default fallback: UInt64, in range: ClosedRange<UInt64>) -> Result<UInt64, Problem> {
        let text: String
        switch Problem.parameter(name, of: request) {
        case .success(let value?): text = value
        case .success(nil): return .success(fallback)
        case .failure(let problem): return .failure(problem)
        }
        guard let value = UInt64(text), range.contains(value) else {
            return .failure(.invalidParameter(name, "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), not \"\(text)\""))
        }
        return .success(value)
    }
}
