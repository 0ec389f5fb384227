/// The patches of the most recent transitions, so that a subscriber that reconnects with
/// `since=N` gets what it missed instead of a whole new snapshot. It holds consecutive versions
/// only: a transition that does not follow the newest (a cluster node that started again from a
/// snapshot, skipping versions) starts the window anew.
struct TransitionWindow {
    struct Transition {
        let version: UInt64
        let operations: [JSONPatchOperation]
    }

    private var ring: [Transition] = []
    private var start = 0
    /// The version of the newest transition held.
    private var newest: UInt64?
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    /// Consuming: the caller's last use of the transition moves it in, with no retain of its operations.
    mutating func append(_ transition: consuming Transition) {
        guard capacity > 0 else { return }
        if let newest, transition.version != newest + 1 {
            ring.removeAll(keepingCapacity: true)
            start = 0
        }
        newest = transition.version
        if ring.count < capacity {
            ring.append(transition)
        } else {
            ring[start] = transition
            // Not `%`: a division costs more than the rest of this, for every event.
            start += 1
            if start == capacity { start = 0 }
        }
    }

    var isEmpty: Bool { ring.isEmpty }

    /// The transitions after `since` up to `current`, in order; nil when the window no longer holds
    /// them all (or `since` is ahead of `current`).
    func transitions(after since: UInt64, current: UInt64) -> [Transition]? {
        if since == current { return [] }
        guard since < current, newest == current, let oldest = ring.isEmpty ? nil : ring[start].version, since + 1 >= oldest else { return nil }
        // Within the ring: the versions held are consecutive, from `oldest` to `current`.
        let skip = Int(since + 1 - oldest)
        return (skip..<ring.count).map { ring[(start + $0) % ring.count] }
    }
}
