/// One party a remote core shows every decoded state to: a subscriber's link, or a `states()` stream.
struct StateObserver<StateType> {
    enum Key: Equatable, Sendable {
        case subscriber(ObjectIdentifier)
        case stream(UInt64)
    }

    let key: Key
    /// False once a subscriber has gone away: its entry is dropped.
    let isLive: () -> Bool
    let deliver: (_ state: StateType, _ version: UInt64) -> Void
    /// Stops deliveries, the ones already on their way included.
    let cancel: () -> Void
}
