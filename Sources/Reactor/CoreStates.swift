extension Core {
    /// Every state from now on, with its version, starting with the current one.
    ///
    /// The stream ends when its consumer stops iterating. By default it buffers every state for a
    /// slow consumer; `.bufferingNewest(1)` makes it skip to the latest instead.
    public func states(
        bufferingPolicy: AsyncStream<(version: UInt64, state: StateType)>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<(version: UInt64, state: StateType)> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: (version: UInt64, state: StateType).self,
            bufferingPolicy: bufferingPolicy
        )
        let registration = newRegistration()
        continuation.onTermination = { [weak self] _ in self?.remove(registration) }
        perform { [self] in
            addObserver(Observer(key: .registration(registration)) { state, version in
                if case .terminated = continuation.yield((version, state)) { return false }
                return true
            })
        }
        return stream
    }
}
