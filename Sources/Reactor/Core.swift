import Dispatch
import Synchronization

/// Holds one `State` and applies events to it one at a time, in the order they were fired.
///
/// Every job — firing an event or a command, adding or removing a subscriber, a middleware, an
/// interceptor or a feedback — joins one FIFO queue and runs on the core's executor. A job started
/// from inside another (a subscriber or middleware firing an event, say) runs after the current job,
/// never nested in it. A caller already on the executor runs its job right there, with no thread hop.
///
/// @unchecked Sendable: every mutable field is touched only on `executor`; the rest is `let` or atomic.
public final class Core<StateType: State>: @unchecked Sendable {
    public let executor: any CoreExecutor

    // Confined to the executor. @usableFromInline so that the hot path below specialises for the
    // caller's state type: unspecialised generic code spends most of its time looking up metadata.
    // @exclusivity(unchecked): only the core's own code touches these, and it calls out (to
    // middleware, observers, completions) only between accesses, never during one. The one call
    // out during an access is a state's own `apply` while `current` is modified in place: user code
    // that could read the state then, which `isApplying` refuses as the dynamic check would (at
    // the price of a flag, not of a check on every access).
    @exclusivity(unchecked) @usableFromInline var current: StateType
    @exclusivity(unchecked) @usableFromInline var isApplying = false
    @exclusivity(unchecked) @usableFromInline var currentVersion: UInt64
    @exclusivity(unchecked) @usableFromInline var middlewares: [Registered<any Middleware<StateType>>] = []
    @exclusivity(unchecked) @usableFromInline var interceptors: [Registered<any Interceptor<StateType>>] = []
    @exclusivity(unchecked) @usableFromInline var observers: [Observer] = []
    @exclusivity(unchecked) @usableFromInline var pending = JobQueue<Job>()
    @exclusivity(unchecked) @usableFromInline var draining = false
    /// True while middleware and observers are shown a state: an event they fire then is a reaction.
    @exclusivity(unchecked) @usableFromInline var isShowingState = false
    @exclusivity(unchecked) @usableFromInline var applyingReaction = false
    /// True while a host replays an order already decided (`holdingOtherThreads`): what other
    /// threads fire stays in the inbox until then.
    @exclusivity(unchecked) @usableFromInline var holdsInbox = false
    /// What was removed on the executor while a job ran (see `removeNow`): skipped by the job's
    /// loops from then on, and dropped from the arrays when the job ends.
    @exclusivity(unchecked) @usableFromInline var removedDuringJob: [Observer.Key] = []

    /// Jobs fired from other threads and not yet taken on the executor, where one hop takes them all.
    /// A job fired on the executor takes them first and queues up behind them, which keeps one total
    /// order across all threads (except while a host holds them back: `holdingOtherThreads`).
    @usableFromInline let inbox = SlotInbox<Job>()
    /// What the running work owes subscribers when it ends (states to send to their own queues).
    @usableFromInline let round = DeliveryRound()
    private let lastRegistration = Atomic<UInt64>(0)

    /// - Parameters:
    ///   - version: the version of `state`; 0 for a new state, the last applied version for one loaded from storage.
    ///   - executor: where jobs run; by default a private serial queue of the core's own.
    public init(
        state: StateType,
        version: UInt64 = 0,
        middlewares: [any Middleware<StateType>] = [],
        executor: any CoreExecutor = DispatchQueueExecutor()
    ) {
        current = state
        currentVersion = version
        self.executor = executor
        self.middlewares = middlewares.map { Registered(Registration(id: lastRegistration.add(1, ordering: .relaxed).newValue), $0) }
    }

    // MARK: Reading

    /// The current state. On the executor this is a plain read; elsewhere it waits for its turn in the
    /// job queue, so it reflects every job fired before the read.
    public var state: StateType { snapshot().state }

    /// The version of the current state: 0 initially, then one more for each applied event.
    public var version: UInt64 { snapshot().version }

    /// The current version and state, read together.
    public func snapshot() -> (version: UInt64, state: StateType) {
        if executor.isCurrent {
            precondition(!isApplying, "the state was read while an event was being applied to it")
            return (currentVersion, current)
        }
        let handoff = Handoff<(version: UInt64, state: StateType)>()
        submit(.perform { [self] in handoff.put((currentVersion, current)) })
        return handoff.take()
    }

    /// The current version and state, without blocking a thread while the job queue gets to it.
    public func snapshot() async -> (version: UInt64, state: StateType) {
        await withCheckedContinuation { continuation in
            submit(.perform { [self] in continuation.resume(returning: (currentVersion, current)) })
        }
    }

    // MARK: Firing

    /// Fires `event` at the state. The seed's fire-and-forget form.
    @inlinable
    public func fire(event: consuming Event) {
        submit(.event(event, origin: nil, nil))
    }

    /// Fires `event`; `completion` runs on the executor with the version the event produced,
    /// or with the error an interceptor or the state rejected it with (the state is then unchanged).
    @inlinable
    public func fire(event: consuming Event, completion: @escaping @Sendable (Result<UInt64, any Error>) -> Void) {
        submit(.event(event, origin: nil, completion))
    }

    /// Fires `event` on behalf of `origin` (who or what fired it, such as a server's authenticated
    /// client), which interceptors see; `completion` as in `fire(event:completion:)`.
    @inlinable
    public func fire(event: consuming Event, origin: (any Sendable)?, completion: @escaping @Sendable (Result<UInt64, any Error>) -> Void) {
        submit(.event(event, origin: origin, completion))
    }

    /// Applies `event` at once, when the caller is on the executor and no other job is queued or
    /// running, and returns what `fire(event:origin:completion:)` would have passed its completion.
    /// Returns nil, having done nothing, when the event would have to wait for its turn: fire it the
    /// usual way then. For a host on the core's own thread (a server's event loop), the common case
    /// costs no completion closure and no job.
    @inlinable
    public func fireIfIdle(event: Event, origin: (any Sendable)?) -> Result<UInt64, any Error>? {
        applyIfIdle(event, origin: origin, intercepted: true)
    }

    /// Applies `event`, which was decided elsewhere, at once, on the same terms as `fireIfIdle`: for
    /// a replica of a log several cores share, where another core admitted it. No interceptor sees
    /// it, since it is no longer this core's to refuse; middleware and observers see it as any other.
    /// The state may still throw: then the replicas have diverged, and the caller must stop.
    public func applyIfIdle(decided event: Event) -> Result<UInt64, any Error>? {
        applyIfIdle(event, origin: nil, intercepted: false)
    }

    /// Whether the event being applied is a reaction: fired with `fire(event:)`, on the executor, by
    /// a middleware or an observer (a feedback, a subscriber) as it was shown another state. For an
    /// interceptor or a middleware, on the executor, to tell it from an event fired from outside;
    /// false between events. Events such a party fires another way (a batch, a command, from a job
    /// or a completion, a feedback's async effect or its first run) are not marked.
    public var isApplyingReaction: Bool { applyingReaction }

    /// Whether a job submitted now from the executor would run at once (nothing queued or running).
    public var isIdle: Bool {
        executor.isCurrent && !draining && pending.isEmpty && (inbox.isEmpty || holdsInbox)
    }

    /// Runs `body`, on the executor, with what other threads fire held back until it returns: for a
    /// host that puts the state back and applies events again in an order already decided (a
    /// replica of a log several cores share), which an event fired meanwhile must follow. Within
    /// `body`, `restore` and the `IfIdle` calls neither run nor wait for those events; they run once
    /// `body` returns, on the hop from their threads already on its way.
    public func holdingOtherThreads<Result>(_ body: () throws -> Result) rethrows -> Result {
        precondition(executor.isCurrent, "holdingOtherThreads is called on the executor")
        let held = holdsInbox
        holdsInbox = true
        defer { holdsInbox = held }
        return try body()
    }

    @inlinable
    func applyIfIdle(_ event: Event, origin: (any Sendable)?, intercepted: Bool) -> Result<UInt64, any Error>? {
        guard executor.isCurrent, !draining, pending.isEmpty, inbox.isEmpty || holdsInbox else { return nil }
        draining = true
        let result: Result<UInt64, any Error>
        do {
            publishApplied(event, state: try admit(event, origin: origin, intercepted: intercepted))
            result = .success(currentVersion)
        } catch {
            result = .failure(error)
        }
        if !removedDuringJob.isEmpty { dropRemovedDuringJob() }
        // What middleware and observers fired meanwhile runs now, as it would after a queued job.
        if !pending.isEmpty { runPending() }
        draining = false
        endRound()
        return result
    }

    /// Ends the round of work: sends subscribers on queues of their own the states they were given,
    /// and lets go of the subscribers held for the round, when the core's work ends and before it
    /// lets anything else out (a completion, a job's body): whoever learns of a version from the
    /// core finds every state up to it already sent to those queues.
    @inlinable
    func endRound() {
        if !round.isEmpty { round.end() }
    }

    /// Runs the queued jobs, oldest first, until none is left. Out of line: there are almost never
    /// any, and inlined, the optimizer hoisted what a job may need out of the loop, onto every event.
    @usableFromInline @inline(never)
    func runPending() {
        while let next = pending.popFirst() { run(consume next) }
    }

    /// Fires several events in one job, so that nothing else is applied between them.
    ///
    /// `.allOrNothing`: if any event is rejected, none is applied and the completion gets a
    /// `BatchRejection` naming it. `.prune`: the accepted events are applied and the rejected ones
    /// reported. Either way every applied event takes its own version, and middleware and subscribers
    /// see each event's own state, as if the events had been fired one by one.
    public func fire(
        events: [any Event],
        mode: BatchMode,
        origin: (any Sendable)? = nil,
        completion: @escaping @Sendable (Result<BatchOutcome, BatchRejection>) -> Void
    ) {
        submit(.perform { [self] in completion(applyBatch(events, mode: mode, origin: origin)) })
    }

    /// Applies `events` as one job at once, on the same terms as `fireIfIdle(event:origin:)`, and
    /// returns what `fire(events:mode:origin:completion:)` would have passed its completion; nil,
    /// having done nothing, when they would have to wait for their turn.
    @inlinable
    public func fireIfIdle(events: [any Event], mode: BatchMode, origin: (any Sendable)?) -> Result<BatchOutcome, BatchRejection>? {
        guard executor.isCurrent, !draining, pending.isEmpty, inbox.isEmpty || holdsInbox else { return nil }
        draining = true
        let result = applyBatch(events, mode: mode, origin: origin)
        if !removedDuringJob.isEmpty { dropRemovedDuringJob() }
        if !pending.isEmpty { runPending() }
        draining = false
        endRound()
        return result
    }

    /// Fires `event` and returns the version it produced, or throws why it was rejected.
    /// (Not an `async` overload of `fire(event:)`: that would capture every fire-and-forget call
    /// made from async code.)
    public func fireAndWait(event: Event) async throws -> UInt64 {
        try await withCheckedThrowingContinuation { continuation in
            submit(.event(event, origin: nil, { continuation.resume(with: $0) }))
        }
    }

    /// Runs `command` at its turn with the state as of then.
    public func fire<C: Command>(command: C) where C.StateType == StateType {
        submit(.perform { [self] in command.execute(state: current, core: self) })
    }

    /// Replaces the state and its version at its turn in the job queue, and shows the result to
    /// observers. For a host whose storage refused the events after `version`: the core goes back to
    /// the last state that storage holds, as if those events had never been applied.
    public func restore(state: StateType, version: UInt64) {
        submit(.perform { [self] in
            current = state
            currentVersion = version
            isShowingState = true
            notifyObservers(of: state)
            isShowingState = false
        })
    }

    // MARK: Subscribers

    /// Subscribes to the whole state: `subscriber` gets the current state, then every later one.
    /// - Parameter queue: where to call `subscriber`; nil (the default) calls it on the core's executor.
    ///   Give a serial queue: a concurrent one may reorder the states.
    @inlinable
    public func add(subscriber: some Subscriber<StateType>, notifyOnQueue queue: DispatchQueue? = nil) {
        subscribe(subscriber, queue: queue, select: { $0 }, isRepeat: nil)
    }

    /// Subscribes to a selection of the state: `subscriber` gets `selector`'s value for every state.
    @inlinable
    public func add<Selected>(
        subscriber: some Subscriber<Selected>,
        notifyOnQueue queue: DispatchQueue? = nil,
        selector: @escaping @Sendable (StateType) -> Selected
    ) {
        subscribe(subscriber, queue: queue, select: selector, isRepeat: nil)
    }

    /// Subscribes to an `Equatable` selection of the state: `subscriber` is notified only when it changes.
    @inlinable
    public func add<Selected: Equatable>(
        subscriber: some Subscriber<Selected>,
        notifyOnQueue queue: DispatchQueue? = nil,
        selector: @escaping @Sendable (StateType) -> Selected
    ) {
        subscribe(subscriber, queue: queue, select: selector, isRepeat: { $0 == $1 })
    }

    /// Stops notifying `subscriber`. Safe from anywhere. On the executor (a command, a middleware,
    /// an interceptor, a subscriber's `update`) it takes effect before it returns: the subscriber
    /// gets nothing more, not even the states of events queued earlier, nor those already sent to
    /// its own queue. From a subscriber's `update` on its own queue, it gets nothing more either.
    /// Anywhere else it takes effect at its turn in the job queue, like any other job.
    public func remove(subscriber: AnyObject) {
        let key = Observer.Key.subscriber(ObjectIdentifier(subscriber))
        if executor.isCurrent {
            removeNow(key)
            return
        }
        SubscriberDelivery.current?.cancel(ifDeliveringTo: subscriber)
        submit(.perform { [self] in removeObserver(key) })
    }

    @inlinable
    func subscribe<Selected>(
        _ subscriber: some Subscriber<Selected>,
        queue: DispatchQueue?,
        select: @escaping @Sendable (StateType) -> Selected,
        isRepeat: ((Selected, Selected) -> Bool)?
    ) {
        let subscription = Subscription(subscriber, queue: queue, select: select, isRepeat: isRepeat, round: round)
        let key = Observer.Key.subscriber(ObjectIdentifier(subscriber))
        submit(.perform { [self] in
            // A subscriber that went away may have left its address to this one: only a live entry counts.
            observers.removeAll { $0.key == key && !$0.isLive() }
            guard !observers.contains(where: { $0.key == key }) else { return }
            addObserver(Observer(key: key, isLive: { subscription.isLive },
                                 cancelDeliveries: queue == nil ? nil : { subscription.cancel() }, notify: subscription.deliver))
        })
    }

    // MARK: Middleware and interceptors

    /// Adds a middleware after the existing ones; it sees the events fired after this call.
    @discardableResult
    public func add(middleware: any Middleware<StateType>) -> Registration {
        let registration = newRegistration()
        submit(.perform { [self] in middlewares.append(Registered(registration, middleware)) })
        return registration
    }

    /// Adds an interceptor after the existing ones; it sees the events fired after this call.
    @discardableResult
    public func add(interceptor: any Interceptor<StateType>) -> Registration {
        let registration = newRegistration()
        submit(.perform { [self] in interceptors.append(Registered(registration, interceptor)) })
        return registration
    }

    /// Removes a middleware, interceptor, feedback or state stream: before it returns when called
    /// on the executor (it sees nothing more, not even events queued earlier), and at its turn in the
    /// job queue when called anywhere else.
    public func remove(_ registration: Registration) {
        if executor.isCurrent {
            removeNow(.registration(registration))
            return
        }
        submit(.perform { [self] in drop(.registration(registration)) })
    }

    /// Removal on the executor. Between jobs the entry goes at once. During a job, whose loops over
    /// the middlewares, interceptors and observers may be running (the removed one among them,
    /// called unretained), it is marked instead: the loops skip it from then on, and it is dropped
    /// when the job ends.
    func removeNow(_ key: Observer.Key) {
        for observer in observers where observer.key == key { observer.cancelDeliveries?() }
        if draining {
            removedDuringJob.append(key)
        } else {
            drop(key)
        }
    }

    /// Takes what `key` names out of the middlewares, interceptors or observers.
    func drop(_ key: Observer.Key) {
        if case .registration(let registration) = key {
            middlewares.removeAll { $0.registration == registration }
            interceptors.removeAll { $0.registration == registration }
        }
        removeObserver(key)
    }

    /// Whether `key` was removed during the running job (`removeNow`). Empty nearly always.
    @inlinable
    func wasRemovedDuringJob(_ key: Observer.Key) -> Bool {
        !removedDuringJob.isEmpty && removedDuringJob.contains(key)
    }

    @usableFromInline @inline(never)
    func dropRemovedDuringJob() {
        let removed = removedDuringJob
        removedDuringJob = []
        for key in removed { drop(key) }
    }

    // MARK: Observers (the machinery under subscribers, feedbacks, waits and streams)

    /// Adds a job-confined observer of every state from now on, starting with the current one.
    /// Runs on the executor only.
    @usableFromInline
    func addObserver(_ observer: Observer) {
        observers.append(observer)
        if !observer.notify(current, currentVersion) {
            removeObserver(observer.key)
        }
    }

    /// Returns false when there was no such observer.
    @discardableResult
    @usableFromInline
    func removeObserver(_ key: Observer.Key) -> Bool {
        guard let index = observers.firstIndex(where: { $0.key == key }) else { return false }
        observers.remove(at: index).onRemove?()
        return true
    }

    func newRegistration() -> Registration {
        Registration(id: lastRegistration.add(1, ordering: .relaxed).newValue)
    }

    /// Runs `body` at its turn in the job queue, on the executor, with the state as of then.
    func perform(_ body: @escaping @Sendable () -> Void) {
        submit(.perform(body))
    }

    // MARK: The job queue

    /// A job is moved, never copied, from `fire` to `run` (hence the `consuming` parameters and the
    /// `consume`s on its way): a copy retains the event and its closures and releases them again,
    /// which was a third of the executor's time per event fired from another thread.
    @usableFromInline
    enum Job: Sendable {
        case event(any Event, origin: (any Sendable)?, (@Sendable (Result<UInt64, any Error>) -> Void)?)
        /// An event fired by a middleware or an observer as it was shown a state (`isApplyingReaction`).
        case reaction(any Event, origin: (any Sendable)?, (@Sendable (Result<UInt64, any Error>) -> Void)?)
        case perform(@Sendable () -> Void)

        @inlinable
        init(reactionTo job: consuming Job) {
            switch consume job {
            case .event(let event, let origin, let completion): self = .reaction(event, origin: origin, completion)
            case .reaction(let event, let origin, let completion): self = .reaction(event, origin: origin, completion)
            case .perform(let body): self = .perform(body)
            }
        }
    }

    @inlinable
    func submit(_ job: consuming Job) {
        if executor.isCurrent {
            if !inbox.isEmpty && !holdsInbox { takeInbox() }
            if isShowingState { return acceptReaction(job) }
            accept(job)
        } else if inbox.push(job) {
            executor.enqueue { [self] in runInbox() }
        }
    }

    /// Accepts `job`, fired by a middleware or an observer as it was shown a state, as a reaction.
    /// Out of line: rare, and kept off the path of every other job.
    @usableFromInline @inline(never)
    func acceptReaction(_ job: consuming Job) {
        accept(Job(reactionTo: job))
    }

    /// Queues what other threads fired, oldest first. On the executor only, which then owes the
    /// inbox a `runInbox` (already scheduled: the inbox was not idle).
    @inlinable @inline(never)
    func takeInbox() {
        inbox.takeAll { job in pending.append(consume job) }
    }

    /// How many jobs from other threads one hop runs before it lets the executor run its other work
    /// (an event loop's sockets and timers) and comes back for the rest.
    @usableFromInline static var inboxJobsPerHop: Int { 1024 }

    /// The one hop from other threads: runs what they fired, batch after batch, and what that fires
    /// in turn, until they fire nothing more, or until it ran `inboxJobsPerHop` jobs and they still
    /// fire: a thread that never pauses would otherwise keep the executor from everything else.
    @inlinable
    func runInbox() {
        guard !draining else {
            // Inside a running job (an executor that runs a job given from its own thread at once):
            // the job's own loop runs them when it ends.
            repeat { takeInbox() } while !inbox.endTaking()
            return
        }
        draining = true
        round.holdsSubscribers = true
        var ran = 0
        while true {
            // Each job runs from the inbox where it lies; what the batch fires on the executor waits
            // in `pending` behind the whole batch, which came first.
            inbox.takeAll { job in
                ran &+= 1
                run(consume job)
            }
            while let next = pending.popFirst() { run(consume next) }
            endRound()
            if inbox.endTaking() { break }
            if ran >= Self.inboxJobsPerHop {
                // Still taking, so no producer hops: this one comes back for the rest, after the
                // executor's other work. Jobs fired on the executor meanwhile take the inbox first.
                executor.enqueue { [self] in runInbox() }
                break
            }
        }
        round.holdsSubscribers = false
        draining = false
    }

    @inlinable
    func accept(_ job: consuming Job) {
        // The common case on an event loop: nothing queued, nothing running. Run it straight away.
        if !draining && pending.isEmpty {
            draining = true
            run(job)
            if !pending.isEmpty { runPending() }
            draining = false
            endRound()
            return
        }
        pending.append(job)
        guard !draining else { return }
        draining = true
        while let next = pending.popFirst() {
            run(consume next)
        }
        draining = false
        endRound()
    }

    @inlinable
    func run(_ job: consuming Job) {
        switch consume job {
        case .perform(let body):
            endRound()
            body()
        case .event(let event, let origin, let completion):
            let result = apply(event, origin: origin)
            if let completion {
                endRound()
                completion(result)
            }
        case .reaction(let event, let origin, let completion):
            applyingReaction = true
            let result = apply(event, origin: origin)
            applyingReaction = false
            if let completion {
                endRound()
                completion(result)
            }
        }
        if !removedDuringJob.isEmpty { dropRemovedDuringJob() }
    }

    /// Admits and applies `event`, and shows the result: the version it took, or why it was rejected.
    @inlinable
    func apply(_ event: Event, origin: (any Sendable)?) -> Result<UInt64, any Error> {
        do {
            publishApplied(event, state: try admit(event, origin: origin))
            return .success(currentVersion)
        } catch {
            return .failure(error)
        }
    }

    /// Runs the interceptors, then applies `event` to the current state and returns the new state;
    /// throws, with the state unchanged, if either rejects it.
    @inlinable
    func admit(_ event: Event, origin: (any Sendable)?, intercepted: Bool = true) throws -> StateType {
        if intercepted && !interceptors.isEmpty {
            let state = current
            for interceptor in interceptors where !wasRemovedDuringJob(.registration(interceptor.registration)) {
                try interceptor.item.intercept(event: event, state: state, origin: origin)
            }
        }
        // Applied in place, and the result read out in the same access for middleware and observers.
        isApplying = true
        defer { isApplying = false }
        return try Self.applying(event, to: &current)
    }

    @inlinable
    static func applying(_ event: Event, to state: inout StateType) throws -> StateType {
        try state.apply(event)
        return state
    }

    /// Gives the event just applied its version and shows `state`, the state it made, to middleware
    /// and observers. Nothing changes the state until this job ends: what they fire waits in the queue.
    @inlinable
    func publishApplied(_ event: Event, state: StateType) {
        currentVersion += 1
        isShowingState = true
        defer { isShowingState = false }
        // Each middleware is called where it lies, unretained: the array holds it, and nothing
        // changes the array before this job ends (what adds or removes one waits in the queue).
        var index = 0
        while index < middlewares.count {
            Unmanaged.passUnretained(middlewares[index])._withUnsafeGuaranteedRef {
                if !wasRemovedDuringJob(.registration($0.registration)) {
                    $0.item.process(event: event, state: state, version: currentVersion)
                }
            }
            index += 1
        }
        notifyObservers(of: state)
    }

    /// The longest all-or-nothing batch whose intermediate states are kept until all its events
    /// are accepted; a longer one is applied twice instead (see `applyBatch`).
    @usableFromInline static var batchStatesKept: Int { 8 }

    /// Inlinable, as `applyIfIdle` is: a host that fires batches on the executor (a server's
    /// `POST /events` with an array) gets it specialized for its state.
    @inlinable
    func applyBatch(_ events: [any Event], mode: BatchMode, origin: (any Sendable)?) -> Result<BatchOutcome, BatchRejection> {
        switch mode {
        case .prune:
            var rejected: [BatchRejection] = []
            for (index, event) in events.enumerated() {
                do {
                    publishApplied(event, state: try admit(event, origin: origin))
                } catch {
                    rejected.append(BatchRejection(index: index, error: error))
                }
            }
            endRound()
            return .success(BatchOutcome(version: currentVersion, applied: events.count - rejected.count, rejected: rejected))
        case .allOrNothing where events.count > Self.batchStatesKept:
            // Checked first, on the state alone, then applied again to be published: kept states
            // share the state's storage, so each would copy what its event changes, and a long
            // batch of edits to a large container would hold that many copies of it at once. The
            // second pass runs no interceptor (they saw the first) and cannot fail for a state
            // whose `apply` depends on the state and the event alone, as replaying a journal
            // already requires; if it does fail, the events before it stay applied.
            let before = current
            for (index, event) in events.enumerated() {
                do {
                    _ = try admit(event, origin: origin)
                } catch {
                    current = before
                    return .failure(BatchRejection(index: index, error: error))
                }
            }
            current = before
            for (index, event) in events.enumerated() {
                do {
                    publishApplied(event, state: try admit(event, origin: origin, intercepted: false))
                } catch {
                    endRound()
                    return .failure(BatchRejection(index: index, error: error))
                }
            }
            endRound()
            return .success(BatchOutcome(version: currentVersion, applied: events.count, rejected: []))
        case .allOrNothing:
            // Apply everything first, keeping each intermediate state, and publish only once all
            // were accepted: a rejection restores the state as it was and nobody saw anything.
            let before = current
            var states: [StateType] = []
            states.reserveCapacity(events.count)
            for (index, event) in events.enumerated() {
                do {
                    states.append(try admit(event, origin: origin))
                } catch {
                    current = before
                    return .failure(BatchRejection(index: index, error: error))
                }
            }
            for (event, state) in zip(events, states) {
                current = state
                publishApplied(event, state: state)
            }
            endRound()
            return .success(BatchOutcome(version: currentVersion, applied: events.count, rejected: []))
        }
    }

    @inlinable
    func notifyObservers(of state: StateType) {
        var index = 0
        while index < observers.count {
            if wasRemovedDuringJob(observers[index].key) || observers[index].notify(state, currentVersion) {
                index += 1
            } else {
                observers.remove(at: index).onRemove?()
            }
        }
    }

    /// One party interested in every state: a subscriber, a feedback, a wait or a stream.
    @usableFromInline
    struct Observer {
        @usableFromInline
        enum Key: Equatable, Sendable {
            case subscriber(ObjectIdentifier)
            case registration(Registration)
        }

        @usableFromInline let key: Key
        @usableFromInline var isLive: () -> Bool = { true }
        @usableFromInline var onRemove: (() -> Void)? = nil
        /// For a subscriber on its own queue: drops what was sent there and has not run yet
        /// (a removal on the executor takes effect at once).
        @usableFromInline var cancelDeliveries: (() -> Void)? = nil
        /// Returns false when the observer is done and should be dropped.
        @usableFromInline let notify: (StateType, UInt64) -> Bool

        @usableFromInline
        init(key: Key, isLive: @escaping () -> Bool = { true }, onRemove: (() -> Void)? = nil, cancelDeliveries: (() -> Void)? = nil,
             notify: @escaping (StateType, UInt64) -> Bool) {
            self.key = key
            self.isLive = isLive
            self.onRemove = onRemove
            self.cancelDeliveries = cancelDeliveries
            self.notify = notify
        }
    }
}

/// Hands one value from the executor to a thread that waits for it.
private final class Handoff<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func put(_ newValue: Value) {
        value.withLock { $0 = newValue }
        ready.signal()
    }

    func take() -> Value {
        ready.wait()
        return value.withLock { $0! }
    }
}
