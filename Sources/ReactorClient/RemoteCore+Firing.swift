import Dispatch

// Firing: events go out over the open connection, and answers come back to their completions.
extension RemoteCore {
    /// Fires `event` at the server. With a completion, it gets the version the event was applied at,
    /// the server's `RemoteProblem` when it refused it, or a `RemoteCoreError` when no answer came.
    ///
    /// Events fired while no connection is open wait for one, up to `options.fireTimeout`. Over a
    /// WebSocket the event's own change reaches subscribers on the notification queue before its
    /// completion runs there; over Server-Sent Events the change comes down the stream independently
    /// of the answer to `POST /events`, so it may arrive later.
    public func fire(event: some RemoteEvent, completion: (@Sendable (Result<UInt64, any Error>) -> Void)? = nil) {
        do {
            submit(try event.wireJSON(encoder: options.encoder), completion: completion)
        } catch {
            deliver(.failure(error), to: completion)
        }
    }

    /// Fires an event given as JSON, `{"type": ..., ...}`; otherwise as `fire(event:completion:)`.
    public func fire(json event: JSON, completion: (@Sendable (Result<UInt64, any Error>) -> Void)? = nil) {
        guard event["type"]?.stringValue != nil else {
            return deliver(.failure(RemoteCoreError.invalidEvent("an event must be a JSON object with a string \"type\"")), to: completion)
        }
        submit(event, completion: completion)
    }

    /// Fires `event` and returns the version it was applied at, or throws the server's `RemoteProblem`
    /// (with its type, title, status and detail) or a `RemoteCoreError`.
    /// (Not an `async` overload of `fire(event:)`, which would capture every fire-and-forget call
    /// made from async code.)
    public func fireAndWait(event: some RemoteEvent) async throws -> UInt64 {
        let json = try event.wireJSON(encoder: options.encoder)
        return try await withCheckedThrowingContinuation { continuation in
            submit(json, completion: { continuation.resume(with: $0) })
        }
    }

    /// `fireAndWait(event:)` for an event given as JSON.
    public func fireAndWait(json event: JSON) async throws -> UInt64 {
        try await withCheckedThrowingContinuation { continuation in
            fire(json: event, completion: { continuation.resume(with: $0) })
        }
    }

    func submit(_ event: JSON, completion: (@Sendable (Result<UInt64, any Error>) -> Void)?) {
        queue.async { [self] in
            if let failure = finalFailure { return deliver(.failure(failure), to: completion) }
            lastFireID += 1
            let fire = PendingFire(id: "f-\(lastFireID)", event: event, completion: completion)
            queue.asyncAfter(deadline: .now() + options.fireTimeout.dispatchInterval) { [weak self] in
                self?.expire(fire.id)
            }
            if let connection, currentStatus.isOpen {
                send(fire, over: connection)
            } else {
                outbox.append(fire)
            }
        }
    }

    func send(_ fire: PendingFire, over connection: any RemoteConnection) {
        awaitingAnswer[fire.id] = fire
        connection.send(fire: fire.event, id: fire.id)
    }

    /// Sends the fires that waited for a connection. On `queue` only.
    func sendOutbox(over connection: any RemoteConnection) {
        let waiting = outbox
        outbox.removeAll()
        for fire in waiting { send(fire, over: connection) }
    }

    /// Completes the fire with this id, unless it already was (it timed out, say).
    func answer(_ id: String, _ result: Result<UInt64, any Error>) {
        guard let fire = awaitingAnswer.removeValue(forKey: id) else { return }
        deliver(result, to: fire.completion)
    }

    /// Fails the fire with this id if its timeout came first.
    func expire(_ id: String) {
        if let index = outbox.firstIndex(where: { $0.id == id }) {
            deliver(.failure(RemoteCoreError.notConnected), to: outbox.remove(at: index).completion)
        } else if let fire = awaitingAnswer.removeValue(forKey: id) {
            deliver(.failure(RemoteCoreError.noAnswer), to: fire.completion)
        }
    }

    /// Fails the fires sent and not yet answered, as when their WebSocket dropped.
    func failAwaitingAnswers(with error: any Error) {
        let unanswered = awaitingAnswer.values
        awaitingAnswer.removeAll()
        for fire in unanswered { deliver(.failure(error), to: fire.completion) }
    }

    /// Fails every fire still waiting, sent or not, as when the remote core stops.
    func failFires(with error: any Error) {
        failAwaitingAnswers(with: error)
        let waiting = outbox
        outbox.removeAll()
        for fire in waiting { deliver(.failure(error), to: fire.completion) }
    }

    /// Why a fire cannot go out, once the remote core has stopped for good.
    var finalFailure: (any Error)? {
        switch currentStatus {
        case .refused(let problem): problem
        case .unsupported(let transport): RemoteCoreError.unsupported(transport)
        case .closed: RemoteCoreError.closed
        case .connecting, .open, .reconnecting: nil
        }
    }

    /// Completions run on the notification queue, after the states delivered there before them.
    func deliver(_ result: Result<UInt64, any Error>, to completion: (@Sendable (Result<UInt64, any Error>) -> Void)?) {
        guard let completion else { return }
        notificationQueue.async { completion(result) }
    }
}
