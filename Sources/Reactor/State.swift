/// Something that happened. The only way to change a `State` is to fire an `Event` at its `Core`.
public protocol Event: Sendable {}

/// The one value a `Core` holds. It changes only by reacting to events, one at a time.
public protocol State: Sendable {
    /// Folds `event` into the state.
    mutating func react(to event: Event)

    /// Folds `event` into the state, or throws to reject it and leaves the state exactly as it was.
    ///
    /// The `Core` always applies events through this method. The default accepts every event by
    /// calling `react(to:)`; a state with rules of its own (a JSON document that cannot increment a
    /// string, say) implements this and lets `react(to:)` ignore what it would reject.
    mutating func apply(_ event: Event) throws
}

extension State {
    public mutating func apply(_ event: Event) throws {
        react(to: event)
    }
}
