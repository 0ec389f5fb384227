import Dispatch

// Subscribers, state streams and status streams: showing the local copy and the connection to the app.
extension RemoteCore {
    /// Subscribes to the whole state: `subscriber` gets the current state (at once if one was
    /// received, else with the first snapshot), then every later one. Held weakly, as by a `Core`;
    /// adding it twice is ignored.
    /// - Parameter queue: where to call `subscriber`; nil (the default) means
    ///   `options.notificationQueue`. Give a serial queue: a concurrent one may reorder the states.
    public func add(subscriber: some Subscriber<StateType>, notifyOnQueue queue: DispatchQueue? = nil) {
        subscribe(subscriber, queue: queue, select: { $0 }, isRepeat: nil)
    }

    /// Subscribes to a selection of the state: `subscriber` gets `selector`'s value for every state.
    public func add<Selected>(
        subscriber: some Subscriber<Selected>,
        notifyOnQueue queue: DispatchQueue? = nil,
        selector: @escaping @Sendable (StateType) -> Selected
    ) {
        subscribe(subscriber, queue: queue, select: selector, isRepeat: nil)
    }

    /// Subscribes to an `Equatable` selection of the state: `subscriber` is notified only when it changes.
    public func add<Selected: Equatable>(
        subscriber: some Subscriber<Selected>,
        notifyOnQueue queue: DispatchQueue? = nil,
        selector: @escaping @Sendable (StateType) -> Selected
    ) {
        subscribe(subscriber, queue: queue, select: selector, isRepeat: { $0 == $1 })
    }

    /// Stops notifying `subscriber`: once this returns it gets nothing more, not even a state already
    /// on its way. Safe from anywhere, the subscriber's own `update` included.
    public func remove(subscriber: AnyObject) {
        let key = StateObserver<StateType>.Key.subscriber(ObjectIdentifier(subscriber))
        queue.sync { removeObserver(key) }
    }

    /// Every state from now on, with its version, starting with the current one (or the first
    /// snapshot). The stream ends when the remote core stops (closed, refused, unsupported) or its
    /// consumer stops iterating. By default it buffers every state for a slow consumer;
    /// `.bufferingNewest(1)` makes it skip to the latest instead.
    public func states(
        bufferingPolicy: AsyncStream<(version: UInt64, state: StateType)>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<(version: UInt64, state: StateType)> {
        let (stream, continuation) = AsyncStream.makeStream(of: (version: UInt64, state: StateType).self, bufferingPolicy: bufferingPolicy)
        queue.sync {
            guard !currentStatus.isFinal else { return continuation.finish() }
            lastRegistration += 1
            let key = StateObserver<StateType>.Key.stream(lastRegistration)
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                queue.async { self.removeObserver(key) }
            }
            addObserver(StateObserver(key: key, isLive: { true },
                                      deliver: { state, version in continuation.yield((version, state)) },
                                      cancel: { continuation.finish() }))
        }
        return stream
    }

    /// The connection status now, then every change, ending after a final one (closed, refused,
    /// unsupported).
    public func statuses() -> AsyncStream<ConnectionStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionStatus.self)
        queue.sync {
            continuation.yield(currentStatus)
            guard !currentStatus.isFinal else { return continuation.finish() }
            lastRegistration += 1
            let registration = lastRegistration
            statusContinuations[registration] = continuation
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                queue.async { self.statusContinuations[registration] = nil }
            }
        }
        return stream
    }

    func subscribe<Selected>(
        _ subscriber: some Subscriber<Selected>,
        queue subscriberQueue: DispatchQueue?,
        select: @escaping @Sendable (StateType) -> Selected,
        isRepeat: ((Selected, Selected) -> Bool)?
    ) {
        let link = SubscriberLink(subscriber, queue: subscriberQueue ?? notificationQueue, select: select, isRepeat: isRepeat)
        let key = StateObserver<StateType>.Key.subscriber(ObjectIdentifier(subscriber))
        queue.sync {
            // A subscriber that went away may have left its address to this one: only a live entry counts.
            observers.removeAll { $0.key == key && !$0.isLive() }
            guard !observers.contains(where: { $0.key == key }) else { return }
            addObserver(StateObserver(key: key, isLive: { link.isLive }, deliver: { link.deliver($0, version: $1) }, cancel: { link.cancel() }))
        }
    }

    /// Adds an observer and shows it the current state, if there is one yet. On `queue` only.
    func addObserver(_ observer: StateObserver<StateType>) {
        observers.append(observer)
        if let decoded { observer.deliver(decoded.state, decoded.version) }
    }

    func removeObserver(_ key: StateObserver<StateType>.Key) {
        guard let index = observers.firstIndex(where: { $0.key == key }) else { return }
        observers.remove(at: index).cancel()
    }

    /// Takes a new local copy: decodes it, and shows the state to every observer. On `queue` only.
    func replaceDocument(_ json: JSON, version: UInt64) {
        document = json
        documentVersion = version
        let state: StateType
        do {
            state = try json.decode(StateType.self, decoder: options.decoder)
        } catch {
            decodingFailure = (version, error)
            return
        }
        decodingFailure = nil
        decoded = (version, state)
        observers.removeAll { !$0.isLive() }
        for observer in observers { observer.deliver(state, version) }
    }

    func setStatus(_ status: ConnectionStatus) {
        guard status != currentStatus else { return }
        currentStatus = status
        if status.isFinal { return finishObservers(with: status) }
        for continuation in statusContinuations.values { continuation.yield(status) }
    }

    /// Shows the final status and ends every stream and subscription: nothing more will come.
    func finishObservers(with finalStatus: ConnectionStatus) {
        for continuation in statusContinuations.values {
            continuation.yield(finalStatus)
            continuation.finish()
        }
        statusContinuations.removeAll()
        for observer in observers { observer.cancel() }
        observers.removeAll()
    }
}
