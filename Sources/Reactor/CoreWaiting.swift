import Dispatch

/// Why a wait on a core's state ended without the state it waited for.
public enum CoreWaitError: Error, Sendable, Equatable {
    /// The condition did not hold before the expiry.
    case timedOut
}

extension Core {
    /// Calls `completion` on the executor with the first state, from this job's turn on, for which
    /// `condition` holds, or with `.timedOut` if none does within `timeout`.
    ///
    /// A command uses this to wait for the state it needs (a login to complete, a resource to load)
    /// without blocking the executor.
    public func wait(
        until condition: @escaping @Sendable (StateType) -> Bool,
        timeout: Duration,
        then completion: @escaping @Sendable (Result<StateType, CoreWaitError>) -> Void
    ) {
        let registration = newRegistration()
        perform { [self] in
            addObserver(Observer(key: .registration(registration)) { state, _ in
                guard condition(state) else { return true }
                completion(.success(state))
                return false
            })
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatchInterval) { [self] in
            perform { [self] in
                // Still waiting means the condition never held: end the wait with its expiry.
                if removeObserver(.registration(registration)) { completion(.failure(.timedOut)) }
            }
        }
    }

    /// The first state, from now on, for which `condition` holds; throws `CoreWaitError.timedOut`
    /// if none does within `timeout`.
    public func state(where condition: @escaping @Sendable (StateType) -> Bool, timeout: Duration) async throws -> StateType {
        try await withCheckedThrowingContinuation { continuation in
            wait(until: condition, timeout: timeout) { continuation.resume(with: $0) }
        }
    }
}

extension Duration {
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(clamping: seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000))
    }
}
