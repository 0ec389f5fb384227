import Reactor

extension Problem {
    /// What an event that was not applied is answered with: the problem it was refused with, a
    /// rejection by the state or an interceptor (422, or 409 for a conflict), or an event that did
    /// not decode; `index` is its position in a posted array.
    static func forEvent(_ error: any Error, index: Int?) -> Problem {
        switch error {
        case let problem as Problem:
            var problem = problem
            if let index { problem.extensions["index"] = .integer(Int64(index)) }
            return problem
        case let rejection as EventRejection:
            return .eventRejected(rejection, index: index)
        case EventDecodingError.unknownType(let type, let known):
            return .unknownEventType(type, known: known, index: index)
        case let decoding as EventDecodingError:
            return .invalidEvent(decoding.description, index: index)
        default:
            return .eventRejected(EventRejection("\(error)"), index: index)
        }
    }

    /// The journal could not store an event: it was undone and is not acknowledged.
    public static func journalUnavailable(_ error: EventLogError) -> Problem {
        let outcome = error.kind == .indeterminate
            ? "whether the shared log holds the event is not known: it was undone here, and if the log holds it every node applies it at its version (GET /history shows it). Look there, or retry with the Idempotency-Key the request carried, before firing it again."
            : "the event was not written to the journal and has been undone; nothing was applied. Retry later."
        return Problem(status: .serviceUnavailable, kind: "journal-unavailable", title: "Event not stored",
                       detail: "\(outcome) (\(error.message))", headers: [("Retry-After", "1")])
    }
}
