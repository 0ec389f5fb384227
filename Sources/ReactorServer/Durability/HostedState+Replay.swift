import Reactor

extension HostedState {
    /// The state a snapshot record holds.
    init(snapshot: LogRecord) throws(EventLogError) {
        do {
            try self.init(json: JSON(parsing: snapshot.payload))
        } catch let error as JSONParseError where error.kind == .tooDeep {
            throw EventLogError(.beyondLimits, "the snapshot of version \(snapshot.version) nests deeper than \(JSON.maximumDepth) levels, the most a state may (it was written before that limit was enforced). \(EventLogError.repairAdvice)")
        } catch {
            throw EventLogError(.damaged, "the snapshot of version \(snapshot.version) does not load: \(error)")
        }
    }

    /// Applies a journal record's event again, as it was applied the first time.
    mutating func replay(_ record: LogRecord) throws(EventLogError) {
        do {
            try apply(try Self.event(in: record))
        } catch let rejection as EventRejection where rejection.kind == .tooDeep {
            throw EventLogError(.beyondLimits, "the event of version \(record.version) made the state nest deeper than \(JSON.maximumDepth) levels, the most it may (it was accepted before that limit was enforced). \(EventLogError.repairAdvice)")
        } catch {
            throw EventLogError(.damaged, "the event of version \(record.version) does not replay: \(error)")
        }
    }

    /// The event a journal record holds: read by the state's own reader first, as a request body
    /// is (most records were one), and by the registry otherwise.
    static func event(in record: LogRecord) throws -> any Event {
        try record.payload.withUnsafeBytes { decodeEvent(fromBody: $0) }
            ?? eventRegistry.decode(JSONParser.carrier.parse(record.payload))
    }
}

extension EventLogError {
    static let repairAdvice = "`reactord repair --data-dir DIR` (with the server stopped) keeps every value and folds what nests deeper into JSON text, after which the directory loads."
}
