/// An event fired at a remote core, waiting for a connection to send it over, or for its answer.
struct PendingFire {
    /// Unique within the remote core: answers are matched to fires by it.
    let id: String
    /// `{"type": ..., ...}`, as it goes on the wire.
    let event: JSON
    let completion: (@Sendable (Result<UInt64, any Error>) -> Void)?
}
