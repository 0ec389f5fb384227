/// How `Core.fire(events:mode:origin:completion:)` treats a rejected event.
public enum BatchMode: Sendable {
    /// Apply every event or none.
    case allOrNothing
    /// Apply the accepted events and report the rejected ones.
    case prune
}

/// What a batch did: the version after it, and the events it left out (`.prune` only).
public struct BatchOutcome: Sendable {
    public let version: UInt64
    public let applied: Int
    public let rejected: [BatchRejection]

    @usableFromInline
    init(version: UInt64, applied: Int, rejected: [BatchRejection]) {
        self.version = version
        self.applied = applied
        self.rejected = rejected
    }
}

/// An event of a batch that was rejected: its index in the batch and the error it was rejected with.
public struct BatchRejection: Error, Sendable {
    public let index: Int
    public let error: any Error

    @usableFromInline
    init(index: Int, error: any Error) {
        self.index = index
        self.error = error
    }
}
