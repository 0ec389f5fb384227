import Reactor

/// What happens to an event a client sends, top to bottom: its bytes are read into the event (the
/// JSON it arrived as kept as its journal record), the core applies it, the commit pipeline writes
/// it down and publishes it, and the client is answered with the version it was published at or
/// the problem it was refused with. `POST /events` and a WebSocket's `fire` both come this way.
///
/// Runs on the loop thread, where the core is confined: an event is applied inline, with no hop.
final class EventPath<StateType: HostedState> {
    typealias Outcome = CommitPipeline<StateType>.Outcome

    /// Who waits for an event: an HTTP client, answered `{"version":N}` or the problem, or a caller
    /// that takes the outcome as it is (a WebSocket's acknowledgement). An enum rather than one
    /// closure that wraps the other: an event published at once then costs no allocation.
    enum Answer {
        case http((HTTPResponse) -> Void)
        case outcome((Outcome) -> Void)
    }

    let core: Core<StateType>
    let pipeline: CommitPipeline<StateType>
    private let loop: EventLoop
    /// See `reusedVersionBody`. @exclusivity(unchecked): touched on the loop thread only, by that
    /// method alone, which calls nothing that could reach it meanwhile.
    @exclusivity(unchecked) private var spareVersionBody: [UInt8] = []

    init(core: Core<StateType>, pipeline: CommitPipeline<StateType>, loop: EventLoop) {
        self.core = core
        self.pipeline = pipeline
        self.loop = loop
    }

    /// `POST /events`' body: one event (a JSON object with a `"type"`) or an array of them, applied
    /// together (`mode`). `answer` gets `{"version": N}` once the event is published (for an array,
    /// with `"applied"`, and with `"rejected"` when pruned), or the problem. An idempotency key
    /// (`answeredKey`) is answered by the append that carries the event (a request's last), into a
    /// cluster's Redis or the journal.
    func post(_ body: [UInt8], mode: BatchMode, origin: Principal?, answeredKey: CommitPipeline<StateType>.AnsweredKey? = nil,
              answer: @escaping (HTTPResponse) -> Void) {
        // The state's own reader, straight from the bytes: the body is then the event's own JSON,
        // and the journal keeps it as it is.
        if let event = body.withUnsafeBytes({ StateType.decodeEvent(fromBody: $0) }) {
            return fire(event, arrivedAs: body, origin: origin, answeredKey: answeredKey, answer: .http(answer))
        }
        let json: JSON
        do {
            json = try JSONParser.carrier.parse(body)
        } catch {
            return answer(Problem.malformedJSON(error).response)
        }
        if case .array(let items) = json {
            return fireBatch(items, mode: mode, origin: origin, answeredKey: answeredKey, answer: answer)
        }
        fire(json, origin: origin, answeredKey: answeredKey, answer: .http(answer))
    }

    /// One event given as JSON (a WebSocket's `fire` message): `answer` gets the version it was
    /// published at, or the problem.
    func fire(_ json: JSON, origin: Principal?, answer: @escaping (Outcome) -> Void) {
        fire(json, origin: origin, answer: .outcome(answer))
    }

    private func fire(_ json: JSON, origin: Principal?, answeredKey: CommitPipeline<StateType>.AnsweredKey? = nil, answer: Answer) {
        let event: any Event
        do {
            event = try StateType.eventRegistry.decode(json)
        } catch {
            return deliver(.failure(Problem.forEvent(error, index: nil)), to: answer)
        }
        fire(event, arrivedAs: nil, origin: origin, answeredKey: answeredKey, answer: answer)
    }

    /// Applies `event` (at once when the core is idle, as it nearly always is) and answers once the
    /// pipeline has published it. `wireForm`, the JSON the event was decoded from, becomes its record.
    private func fire(_ event: any Event, arrivedAs wireForm: [UInt8]?, origin: Principal?,
                      answeredKey: CommitPipeline<StateType>.AnsweredKey? = nil, answer: Answer) {
        if let applied = core.fireIfIdle(event: event, origin: origin) {
            return settle(applied, arrivedAs: wireForm, answeredKey: answeredKey, answer: answer)
        }
        // Behind a job already queued on this thread: applied in its turn, still on the loop.
        let waiting = LoopBound((path: self, answer: answer, answeredKey: answeredKey), loop: loop)
        core.fire(event: event, origin: origin) { applied in
            let (path, answer, answeredKey) = waiting.value
            path.settle(applied, arrivedAs: wireForm, answeredKey: answeredKey, answer: answer)
        }
    }

    /// What the core said of an event, passed on once it is published. Runs in the turn the core
    /// applied the event, which `CommitPipeline.record(_:asEventOf:)` relies on.
    private func settle(_ applied: Result<UInt64, any Error>, arrivedAs wireForm: [UInt8]?,
                        answeredKey: CommitPipeline<StateType>.AnsweredKey?, answer: Answer) {
        switch applied {
        case .success(let version):
            if let wireForm { pipeline.record(wireForm, asEventOf: version) }
            if let answeredKey { pipeline.answer(answeredKey, withEventOf: version) }
            if pipeline.isPublished(version) { return deliver(.success(version), to: answer) }
            pipeline.whenPublished(version) { [self] outcome in deliver(outcome, to: answer) }
        case .failure(let error):
            deliver(.failure(Problem.forEvent(error, index: nil)), to: answer)
        }
    }

    /// The one place an event's outcome reaches whoever waits for it.
    private func deliver(_ outcome: Outcome, to answer: Answer) {
        switch answer {
        case .http(let respond):
            switch outcome {
            case .success(let version): respond(.json(reusedVersionBody(version)))
            case .failure(let problem): respond(problem.response)
            }
        case .outcome(let resume):
            resume(outcome)
        }
    }

    /// Several events in one job: all or nothing, or pruned of those refused. Each undecodable or
    /// refused event is named by its position in the posted array.
    private func fireBatch(_ items: [JSON], mode: BatchMode, origin: Principal?, answeredKey: CommitPipeline<StateType>.AnsweredKey?,
                           answer: @escaping (HTTPResponse) -> Void) {
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
                if mode == .allOrNothing { return answer(problem.response) }
                undecodable.append((index, problem))
            }
        }
        if let problem = StateType.admissionProblem(ofRequestWith: events) {
            return answer(Problem.forEvent(problem, index: nil).response)
        }
        // At once when the core is idle, as it nearly always is; behind a job already queued otherwise.
        if let applied = core.fireIfIdle(events: events, mode: mode, origin: origin) {
            return settleBatch(applied, mode: mode, positions: positions, undecodable: undecodable, answeredKey: answeredKey, answer: answer)
        }
        let waiting = LoopBound((path: self, answer: answer, answeredKey: answeredKey), loop: loop)
        core.fire(events: events, mode: mode, origin: origin) { [undecodable, positions] applied in
            let (path, answer, answeredKey) = waiting.value
            path.settleBatch(applied, mode: mode, positions: positions, undecodable: undecodable, answeredKey: answeredKey, answer: answer)
        }
    }

    /// What the core said of a batch, passed on once its last event is published. `positions` are
    /// the decoded events' places in the posted array; `undecodable`, the others' problems.
    private func settleBatch(_ result: Result<BatchOutcome, BatchRejection>, mode: BatchMode, positions: [Int], undecodable: [(index: Int, problem: Problem)],
                             answeredKey: CommitPipeline<StateType>.AnsweredKey?, answer: @escaping (HTTPResponse) -> Void) {
        switch result {
        case .success(let outcome):
            if outcome.applied > 0 {
                let refused = Set(outcome.rejected.map(\.index))
                let applied = positions.indices.filter { !refused.contains($0) }.map { positions[$0] }
                pipeline.markBatch(versions: (outcome.version - UInt64(outcome.applied) + 1)...outcome.version, postedIndices: applied)
            }
            var rejected = undecodable
            // Positions in the posted array: `outcome` counts only the events that decoded.
            rejected += outcome.rejected.map { (positions[$0.index], Problem.forEvent($0.error, index: positions[$0.index])) }
            rejected.sort { $0.index < $1.index }
            var members: JSON.Object = ["version": .integer(Int64(outcome.version)), "applied": .integer(Int64(outcome.applied))]
            if mode == .prune {
                members["rejected"] = .array(rejected.map { JSON.object(["index": .integer(Int64($0.index)), "problem": $0.problem.json]) })
            }
            // The key goes with the last event; its answer takes the version that event is
            // appended at (in a cluster, perhaps another, after others appended first).
            guard outcome.applied > 0 else {
                // Nothing of this request's to wait for: the state as clients may see it now.
                // (The core's version may be another request's event, which a shared log may
                // yet apply again at another version, or drop.)
                members["version"] = .integer(Int64(pipeline.publishedVersion))
                return answer(.json(JSON.object(members).jsonBytes))
            }
            if let answeredKey {
                pipeline.answer(answeredKey, withEventOf: outcome.version, members: members)
            }
            pipeline.whenPublished(outcome.version) { published in
                switch published {
                case .success(let version):
                    members["version"] = .integer(Int64(version))
                    answer(.json(JSON.object(members).jsonBytes))
                case .failure(let problem):
                    answer(problem.response)
                }
            }
        case .failure(let rejection):
            answer(Problem.forEvent(rejection.error, index: positions[rejection.index]).response)
        }
    }

    // MARK: The answer's body

    /// `{"version":N}` in `spareVersionBody`, written over in place: the answer before has mostly
    /// been written and dropped by now (if not, the array is copied, as any shared array would be),
    /// so an answer costs no allocation.
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
    static func withVersionBody<Result>(_ version: UInt64, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
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
