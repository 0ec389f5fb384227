extension HostedState {
    /// The state a snapshot record holds.
    init(snapshot: LogRecord) throws(EventLogError) {
        do {
            try self.init(json: JSON(parsing: snapshot.payload))
        } catch {
            throw EventLogError(.damaged, "the snapshot of version \(snapshot.version) does not load: \(error)")
        }
    }

    /// Applies a journal record's event again, as it was applied the first time.
    mutating func replay(_ record: LogRecord) throws(EventLogError) {
        do {
            // The state's own reader first, as for a request body (most records were one); the
            // registry decodes the rest.
            let event = try record.payload.withUnsafeBytes { Self.decodeEvent(fromBody: $0) }
                ?? Self.eventRegistry.decode(JSON(parsing: record.payload))
            try apply(event)
        } catch {
            throw EventLogError(.damaged, "the event of version \(record.version) does not replay: \(error)")
        }
    }
}
