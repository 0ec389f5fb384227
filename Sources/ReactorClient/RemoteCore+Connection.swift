import Dispatch

// The connection's life: opening one over the chosen transport, applying what it brings, and
// reconnecting (with backoff, resuming from the local version) or stopping when it ends.
extension RemoteCore {
    /// Opens a connection, unless one is open or the remote core has stopped. On `queue` only.
    func connect() {
        guard connection == nil, !currentStatus.isFinal else { return }
        let transport = chosenTransport ?? options.transport.first
        let since = needsSnapshot ? nil : documentVersion.map { ResumePoint(version: $0, history: documentHistory) }
        generation += 1
        let generation = generation
        let report: @Sendable (ConnectionEvent) -> Void = { [weak self] event in
            guard let self else { return }
            queue.async { self.handle(event, generation: generation) }
        }
        let connection: any RemoteConnection = switch transport {
        case .webSocket:
            WebSocketConnection(endpoints: endpoints, since: since, configuration: options.sessionConfiguration,
                                maximumMessageBytes: options.maximumMessageBytes, report: report)
        case .serverSentEvents:
            EventStreamConnection(endpoints: endpoints, since: since, configuration: options.sessionConfiguration,
                                  idleTimeout: options.streamIdleTimeout, maximumMessageBytes: options.maximumMessageBytes, report: report)
        }
        self.connection = connection
        connection.start()
    }

    func handle(_ event: ConnectionEvent, generation: UInt64) {
        // A fire's answer counts whenever it comes: its id is unique.
        if case .fireAnswered(let id, let result) = event { return answer(id, result) }
        guard generation == self.generation, let connection else { return }
        switch event {
        case .opened:
            failedAttempts = 0
            currentCounts.connections += 1
            // A transport that opened once works here: the automatic choice is made.
            chosenTransport = connection.transport
            setStatus(.open(connection.transport))
            sendOutbox(over: connection)
        case .message(let text):
            do {
                try apply(ServerMessage(text: text))
            } catch {
                // The local copy and the server's disagree (or the message is unreadable): resuming would
                // replay the same message onto the same copy, so start over from a snapshot. A patch
                // applies all or nothing, so the copy subscribers got is intact meanwhile.
                needsSnapshot = true
                disconnect(connection)
                scheduleReconnect()
            }
        case .ended(let ending):
            disconnect(connection)
            switch ending {
            case .unsupported where options.transport == .automatic && connection.transport == .webSocket:
                chosenTransport = .serverSentEvents
                connect()  // at once: nothing is wrong with the server
            case .unsupported:
                stop(.unsupported(connection.transport))
            case .answered(let problem) where !problem.isWorthRetrying:
                stop(.refused(problem))
            case .answered, .dropped:
                scheduleReconnect()
            }
        case .fireAnswered:
            break  // handled above
        }
    }

    func apply(_ message: ServerMessage) throws(ServerMessage.Unreadable) {
        switch message {
        case .snapshot(let version, let state, let history):
            // Taken even at a lower version: the server may have restarted without the versions we saw.
            currentCounts.snapshots += 1
            needsSnapshot = false
            documentHistory = history
            // The same copy again (a resync that found nothing changed) is no news to subscribers.
            guard version != documentVersion || state != document else { return }
            replaceDocument(state, version: version)
        case .patch(let version, let operations):
            guard let document, let documentVersion else {
                throw ServerMessage.Unreadable(description: "a patch before any snapshot")
            }
            guard version > documentVersion else { return }  // already applied
            do {
                replaceDocument(try JSONPatch.applying(operations, to: document), version: version)
            } catch {
                throw ServerMessage.Unreadable(description: "the patch to version \(version) does not apply to version \(documentVersion): \(error)")
            }
        case .state(let version, let state):
            guard documentVersion.map({ version > $0 }) ?? true else { return }
            replaceDocument(state, version: version)
        case .ack(let id, let version):
            if let id = id.stringValue { answer(id, .success(version)) }
        case .error(let id, let problem):
            // An id that is not ours (null, for a message the server could not read) answers nothing.
            if let id = id.stringValue { answer(id, .failure(problem)) }
        case .unknown:
            break  // a message type from a newer server
        }
    }

    /// Closes `connection` for good; fires sent over a WebSocket get no answer any more.
    func disconnect(_ connection: any RemoteConnection) {
        connection.cancel()
        self.connection = nil
        if connection.transport == .webSocket { failAwaitingAnswers(with: RemoteCoreError.connectionLost) }
    }

    func scheduleReconnect() {
        setStatus(.reconnecting)
        let delay = options.backoff.delay(afterFailures: failedAttempts)
        failedAttempts += 1
        let scheduled = generation
        queue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [weak self] in
            // Stopped, or reconnected some other way, since: this timer is stale.
            guard let self, generation == scheduled else { return }
            connect()
        }
    }

    /// Stops for good with a final status.
    func stop(_ status: ConnectionStatus) {
        guard !currentStatus.isFinal else { return }
        if let connection { disconnect(connection) }
        generation += 1
        setStatus(status)
        failFires(with: finalFailure ?? RemoteCoreError.closed)
    }
}
