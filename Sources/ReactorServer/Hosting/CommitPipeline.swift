import DequeModule
import Logging
import Reactor

/// Stands between the core and everyone who hears about its states: nothing the core applied is
/// acknowledged to a client, shown to a subscriber or served by `GET /state` before the event log
/// holds it.
///
/// As a middleware it sees every event the core applies, by any transport, and queues its record.
/// At the end of each loop iteration (a libuv prepare handle), or as soon as the append before it
/// completes, it appends what was queued as one batch (group commit); while that append runs, the
/// next batch gathers. When the log confirms a
/// batch, each of its states is published in order and the acknowledgements waiting on its versions
/// go out. When the log fails, the core goes back to the last published state, every waiting
/// acknowledgement becomes a 503, and readiness turns false until an append succeeds again.
///
/// Without a log every state is published as soon as it is applied.
///
/// A log several servers share (`SharedEventLog`, a cluster's Redis stream) adds two things. What
/// the others appended arrives in order and is applied as decided (`Core.applyIfIdle(decided:)`:
/// no interceptor, already durable, so published at once). And an append made while the others
/// moved the log on fails having written nothing (`.behind`): the core is put back to the last
/// published state, what the others appended is applied, and this server's own events are applied
/// again on top, in their order, each answered as it would have been on that state (a rejection
/// now is a 422, not an error), and appended again. Their clients wait throughout, and get the
/// versions their events finally took.
///
/// @unchecked Sendable: the core calls it as a middleware on its executor, which is this loop's
/// thread; everything else happens there too.
final class CommitPipeline<StateType: HostedState>: Middleware, Interceptor, @unchecked Sendable {
    struct Options {
        /// A snapshot is written after this many events since the last one, or this many journal bytes.
        var snapshotEvents = 100_000
        var snapshotBytes = 64 << 20
        /// How long the next append to a journal of its own waits at most for the clients the last
        /// one answered (`awaitFill`).
        var groupFillMilliseconds: UInt64 = 1
        /// How long a server waits before it tries again to write a shared log's snapshot Redis
        /// refused: each try encodes the whole state.
        var snapshotRetryMilliseconds: UInt64 = 1_000
    }

    private struct Entry {
        let version: UInt64
        /// The state after the event, kept only where the changes cannot stand for it: for a state
        /// that records none, and for the last event of a batch. A state kept for every event would
        /// give the document's root a second owner between events, and the core would copy it for
        /// each one. (A shared log that takes a batch back applies its events again, as new entries.)
        var state: StateType?
        /// What the event changed (`HostedState.lastChanges`), where its state is not kept.
        let changes: [JSONPatchOperation]?
        /// Encoded as the batch is appended, unless `record` gave its bytes; and applied again,
        /// with a shared log, after others appended first.
        let event: any Event
        /// The event's journal record as it arrived (see `record(_:asEventOf:)`).
        var payload: [UInt8]?
        /// The idempotency key of the request the event answers (see `answer(_:withEventOf:)`).
        var answeredKey: AnsweredKey?
        /// The answer to that key, where it is more than `{"version":N}` (a request of several events,
        /// answered by its last): its members, whose version is set to the entry's as it is appended.
        var answeredMembers: JSON.Object?
        /// The request of several events this one came in, if any (see `markBatch`).
        var batch: BatchMark?
        /// Fired by a middleware or an observer (`Core.isApplyingReaction`): not applied again with
        /// the rest, since applying its cause again fires it again.
        let isReaction: Bool
    }

    /// An event of a request of several, applied together: with a shared log, applied again together
    /// after the others' events, all or none.
    struct BatchMark {
        let id: UInt64
        /// Where the event was in the posted array, to name it if it is refused.
        let postedIndex: Int
    }
    private var batchesMarked: UInt64 = 0

    /// An idempotency key a request carried, answered by its one event: the answer, `{"version":N}`
    /// at the version the event is appended at, goes into the log with the event (into a cluster's
    /// Redis by the append's script, into the journal in the event's record), so that a retry finds
    /// it whenever the event went in, even if its server never answered.
    struct AnsweredKey {
        /// In the log's terms: a cluster's `IdempotencyAnswer.key`, the journal's scoped key.
        let key: String
        let fingerprint: String
        let milliseconds: UInt64
        /// In a cluster, the claim the request holds the key by (the append is fenced off without it).
        var claim: SharedIdempotencyEntry? = nil
        /// Set once an event carries the answer: a request then answered 2xx had its key answered
        /// by the append, and needs no other write.
        var carried: AnswerCarried? = nil
    }

    /// Whether an event carries a key's answer (`AnsweredKey.carried`); a class, shared by the
    /// request and the entries its key is given to.
    /// @unchecked Sendable: set and read on the loop thread only, as the pipeline itself.
    final class AnswerCarried: @unchecked Sendable {
        var value = false
    }

    /// What a client waiting on its event learns: the version it was published at, or the problem
    /// it was refused with (the log failed, or, with a shared log, the state refused it once the
    /// others' events were applied before it).
    typealias Outcome = Result<UInt64, Problem>

    let log: (any EventLog)?
    /// The log, when several servers share it.
    let shared: (any SharedEventLog)?
    /// Where published states go. One `let`, not a list of observers: a call through it costs no
    /// reference counting, for every event.
    private let hub: SubscriptionHub<StateType>
    private unowned let core: Core<StateType>
    private let loop: EventLoop
    private let logger: Logger
    private let options: Options
    private let metrics: ServerMetrics

    /// The newest state the log holds: what clients may see. Without a log, the core's own state.
    let publishedState: PublishedState<StateType>
    var published: (version: UInt64, state: StateType) { publishedState.current }
    var publishedVersion: UInt64 { publishedState.version }
    /// What the pipeline keeps track of as it runs.
    private struct Progress {
        /// Applied, not yet appended.
        var pending: [Entry] = []
        var appending = false
        var waiters: Deque<(version: UInt64, resume: (Outcome) -> Void)> = []
        /// Records others appended to a shared log, after the published version, not applied yet.
        var incoming: [LogRecord] = []
        /// Set just before a record of a shared log is applied: that event is durable already.
        var applyingDecided = false
        /// Set while the core is put back to a published state, and while it applies what others
        /// appended: reactions to those states are refused (see `intercept`).
        var refusingReactions = false
        /// Reading what a shared log holds after the published version (after a gap, or a handover
        /// that did not come).
        var catchingUp = false
        /// Set when a record of the shared log would not apply here: the server stops following,
        /// refuses writes and keeps serving what it published, rather than retry it forever.
        var cannotFollow = false
        /// After an append found the others ahead: the head they had reached, until the log has
        /// handed over what leads up to it (0 when nothing is awaited). Appending before then would
        /// fail again.
        var awaitedHead: UInt64 = 0
        /// The last append's failure, while no later append has succeeded.
        var failure: EventLogError?
        /// With a shared log: the idempotency keys an append was fenced off by (each another
        /// request's, or no one's). The requests answering them are dropped when the others are
        /// applied again (see `reconcile`).
        var fencedKeys: Set<String> = []
        /// When an append was last fenced off (loop time, ms).
        var fencedAt: UInt64?
        var eventsSinceSnapshot = 0
        var bytesSinceSnapshot = 0
        var snapshotting = false
        /// With a shared log: a snapshot this server's append crossed the interval for and could
        /// not write then (one was still being written, or Redis refused it), and when to try again.
        var snapshotOwed = false
        var snapshotRetryAt: UInt64 = 0
        /// Called once nothing is pending or being appended (shutdown waits for it).
        var whenIdle: (() -> Void)?
        /// After an append to a journal of its own: how many pending events the next append waits
        /// for (those that arrived meanwhile, and as many as the append acknowledged, whose clients
        /// are expected back), and for how many more turns of the loop (0 when it waits for none).
        var fillTarget = 0
        var fillTurnsLeft = 0
    }
    /// @exclusivity(unchecked): touched on the loop thread only, and the callbacks it holds are
    /// called on copies, never during a modification; a dynamic check on each access would cost
    /// more than the work it guards, on every event.
    @exclusivity(unchecked) private var progress = Progress()
    /// The last append's failure, while no later append has succeeded.
    var failure: EventLogError? { progress.failure }
    /// With a shared log: the head it held when this server joined, until the server has applied
    /// that far (0 after). Until then it is not ready: it starts behind, leaving the last events to
    /// its tail (see `ClusterBootstrap.join`).
    private var joinedHead: UInt64 = 0
    /// Clients waiting for a version another node of the cluster acknowledged (`whenPublished(catchingUpTo:_:)`).
    private var versionWatchers: [VersionWatcher] = []
    private var nextWatcherID: UInt64 = 0
    private var handoverTimer: LoopTimer?
    /// Ends a wait for the next group to fill (`Progress.fillTarget`) when the loop has nothing else to do.
    private var fillTimer: LoopTimer?
    private var endOfIteration: PrepareWatcher?
    /// `hub` gets the published state now, and every state published after it.
    init(core: Core<StateType>, published: PublishedState<StateType>, log: (any EventLog)?, hub: SubscriptionHub<StateType>,
         loop: EventLoop, options: Options, metrics: ServerMetrics = ServerMetrics(), logger: Logger) {
        self.core = core
        self.hub = hub
        self.metrics = metrics
        self.log = log
        self.loop = loop
        self.options = options
        self.logger = logger
        precondition((log != nil) == published.isJournaled, "the published state may lag behind the core's exactly when there is a log")
        publishedState = published
        shared = log as? any SharedEventLog
        if log != nil {
            endOfIteration = PrepareWatcher(loop: loop) { [unowned self] in
                reconcile()
                flush()
            }
            core.add(interceptor: SpecializedInterceptor(JournalableEventInterceptor<StateType>()))
            core.add(interceptor: SpecializedInterceptor(self))
            // Only a shared log publishes states the core still holds as its own.
            if log is any SharedEventLog { core.add(interceptor: SpecializedInterceptor(PublishedStateDetacher(published: published))) }
        }
        let (version, state) = published.current
        hub.update(with: state, version: version)
        if let journal = log as? FileEventLog { hub.remember(journal.takeReplayedChanges()) }
        if let shared {
            joinedHead = shared.lastVersion
            shared.onRecords = { [unowned self] records in received(records) }
            shared.appliedVersion = { [unowned self] in publishedVersion }
        }
    }

    /// Runs `resume` once the event applied at `version` is published: with the version it was
    /// published at (`version`, unless a shared log made it apply again later), or with the problem
    /// it was refused with (a 503 if the log failed and it was undone).
    func whenPublished(_ version: UInt64, _ resume: @escaping (Outcome) -> Void) {
        if version <= publishedVersion { return resume(.success(version)) }
        progress.waiters.append((version, resume))
    }

    /// Whether clients may see `version` already.
    func isPublished(_ version: UInt64) -> Bool { version <= publishedVersion }

    /// How long a client of a cluster node waits for a version it saw on another node.
    static var catchUpWaitMilliseconds: UInt64 { 2_000 }

    /// Calls `proceed` once `version` is published here, or after `catchUpWaitMilliseconds`,
    /// whichever comes first: for a client that saw `version` on another node of a cluster (a
    /// subscriber resuming with `since`, a read of `?version=`), so that it gets what it asked for
    /// rather than an older state. Only for a version the shared log is known to hold: any other
    /// goes on at once.
    func whenPublished(catchingUpTo version: UInt64, _ proceed: @escaping () -> Void) {
        guard let shared, version > publishedVersion, version <= shared.lastVersion,
              versionWatchers.count < Self.maxVersionWatchers else { return proceed() }
        let id = nextWatcherID
        nextWatcherID += 1
        let timer = LoopTimer(loop: loop) { [unowned self] in
            guard let index = versionWatchers.firstIndex(where: { $0.id == id }) else { return }
            versionWatchers.remove(at: index).proceed()
        }
        timer.start(after: Self.catchUpWaitMilliseconds)
        // The watcher holds its timer: whichever of the two comes first removes it.
        versionWatchers.append(VersionWatcher(id: id, version: version, proceed: proceed, timer: timer))
    }

    /// A client waiting for a version (`whenPublished(catchingUpTo:_:)`), and its deadline.
    private struct VersionWatcher {
        let id: UInt64
        let version: UInt64
        let proceed: () -> Void
        let timer: LoopTimer
    }

    /// More clients than this waiting for versions go on at once.
    static var maxVersionWatchers: Int { 1_024 }

    /// Whether an append was fenced off by idempotency keys not its requests' own within the last
    /// second: a retry of a request answered elsewhere reached this server, and more may follow (a
    /// client retrying a batch of requests). Meanwhile a keyed request is applied only once its
    /// key's claim is answered (`EventService`), so that the group applied again after the fence
    /// is not fenced off in turn by the next retry, and the next.
    var wasFencedRecently: Bool {
        guard let fencedAt = progress.fencedAt else { return false }
        return loop.now < fencedAt + 1_000
    }

    var isHealthy: Bool { unreadiness == nil }

    /// Why the server is not ready to take events, if it is not.
    var unreadiness: String? {
        recoverOnceCaughtUp()
        // A shared log's own state first: it says what holds now, where the last failure may be older.
        if let shared, !shared.isReachable { return "cluster: " + (shared.status.lostHistory ?? "Redis is \(shared.status.connection)") }
        if let failure = progress.failure { return "journal: \(failure.message)" }
        if joinedHead > publishedVersion { return "cluster: catching up, at version \(publishedVersion) of the \(joinedHead) the log held when this node joined" }
        joinedHead = 0
        if let shared, shared.headWhenConnected > publishedVersion {
            return "cluster: catching up, at version \(publishedVersion) of the \(shared.headWhenConnected) the log held when this node connected to Redis again"
        }
        return nil
    }

    /// Trusts a shared log again that failed for want of Redis, once Redis answers and this server
    /// has applied all it knows the log holds. A journal of its own is trusted again only when an
    /// append succeeds; a shared one may have nothing of this server's to append, so waiting for
    /// that would leave the server unready while it serves the cluster's every event.
    private func recoverOnceCaughtUp() {
        guard let shared, !progress.cannotFollow, let failure = progress.failure, failure.kind == .unavailable || failure.kind == .indeterminate,
              shared.isReachable, !progress.appending, !progress.catchingUp, progress.incoming.isEmpty,
              publishedVersion >= shared.lastVersion else { return }
        logger.notice("caught up with the shared log", metadata: ["version": "\(publishedVersion)", "after": "\(failure)"])
        progress.failure = nil
    }

    /// Calls `done` once every event applied so far is journaled (or refused): at shutdown, before
    /// the log is closed.
    func drain(_ done: @escaping () -> Void) {
        progress.whenIdle = done
        progress.fillTarget = 0
        flush()
        signalIdleIfDrained()
    }

    private func signalIdleIfDrained() {
        guard !progress.appending, progress.pending.isEmpty, let whenIdle = progress.whenIdle else { return }
        progress.whenIdle = nil
        whenIdle()
    }

    /// Takes `payload` as the journal record of the event the core applied at `version`: the JSON it
    /// arrived as, which decodes to that very event, so it is not encoded again. Called in the turn
    /// the core answered with `version`, while the entry is still pending: the core answers a fire
    /// as soon as it has applied it, and pending entries are only taken back in later turns (an
    /// append's answer, the shared log's records). Bytes with a line break are not taken (the
    /// journal's records become lines of `/history` and `export`); the event is encoded instead.
    func record(_ payload: [UInt8], asEventOf version: UInt64) {
        guard log != nil, Self.isOneLine(payload),
              let index = progress.pending.lastIndex(where: { $0.version == version }) else { return }
        progress.pending[index].payload = payload
    }

    /// Takes `key` as answered by the event the core applied at `version`, under the same terms as
    /// `record(_:asEventOf:)`: the answer is written with the event, by the append that carries it.
    func answer(_ key: AnsweredKey, withEventOf version: UInt64, members: JSON.Object? = nil) {
        guard log != nil, let index = progress.pending.lastIndex(where: { $0.version == version }) else { return }
        progress.pending[index].answeredKey = key
        progress.pending[index].answeredMembers = members
        key.carried?.value = true
    }

    /// Takes the events the core applied at `versions` as one request's, posted at `postedIndices`
    /// of its array, under the same terms as `record(_:asEventOf:)`: a journal keeps them all or none
    /// across a crash (`LogRecord.continued`), a shared log applies them again together.
    func markBatch(versions: ClosedRange<UInt64>, postedIndices: [Int]) {
        guard log != nil, versions.count == postedIndices.count,
              let first = progress.pending.lastIndex(where: { $0.version == versions.lowerBound }) else { return }
        batchesMarked += 1
        // The request's events were applied in one job: their entries are contiguous.
        for (index, postedIndex) in zip(first..., postedIndices) where index < progress.pending.endIndex {
            progress.pending[index].batch = BatchMark(id: batchesMarked, postedIndex: postedIndex)
        }
    }

    /// No line break in `bytes`: one scan over the raw bytes (`Array.contains` twice costs several times as much).
    private static func isOneLine(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            for byte in buffer where byte == 10 || byte == 13 { return false }
            return true
        }
    }

    // MARK: Middleware

    func process(event: Event, state: StateType) {}

    func process(event: Event, state: StateType, version: UInt64) {
        guard log != nil else { return publish(state, version) }
        if progress.applyingDecided {
            // The decided event itself, the first the core applies in `applyIfIdle(decided:)`;
            // what middleware or observers fire meanwhile is applied after it, as this server's own.
            progress.applyingDecided = false
            return publish(state, version, isCoresOwn: true)
        }
        let changes = state.lastChanges
        progress.pending.append(Entry(version: version, state: changes == nil ? state : nil, changes: changes, event: event,
                                      isReaction: core.isApplyingReaction))
    }

    // MARK: Interceptor

    /// Refuses a reaction (an event a middleware or an observer fired) to a state this server did
    /// not reach by its own events: the published state the core is put back to, which was reacted
    /// to when it was first reached, or an event another server appended, which that server reacts
    /// to and appends the reactions of. Applied here as well, a reaction would apply once more per
    /// server, or, fired before the others' events, take the version one of them holds.
    func intercept(event: Event, state: StateType) throws {
        if progress.refusingReactions && core.isApplyingReaction {
            throw EventRejection("a reaction to a state this server did not reach by its own events is not applied here")
        }
    }

    // MARK: Group commit

    /// Appends what the core applied since the last append, unless an append is still running.
    private func flush() {
        guard let log, !progress.appending, !progress.catchingUp, progress.awaitedHead == 0, progress.fencedKeys.isEmpty, !progress.pending.isEmpty else { return }
        if progress.fillTarget > 0 {
            if progress.pending.count < progress.fillTarget && progress.fillTurnsLeft > 0 {
                progress.fillTurnsLeft -= 1
                return
            }
            progress.fillTarget = 0
            fillTimer?.stop()
        }
        var batch = progress.pending
        progress.pending.removeAll(keepingCapacity: true)
        var records: [LogRecord] = []
        records.reserveCapacity(batch.count)
        for (index, entry) in batch.enumerated() {
            guard let payload = entry.payload ?? encoded(entry) else {
                return fail(EventLogError(.other, "an event could not be encoded for the journal"))
            }
            // A request's events are applied in one job, so they are appended together.
            let continued = entry.batch != nil && index + 1 < batch.count && batch[index + 1].batch?.id == entry.batch?.id
            records.append(LogRecord(version: entry.version, payload: payload, answers: journaledAnswers(entry), continued: continued))
        }
        if batch[batch.count - 1].state == nil {
            // The batch's last state is the core's: everything the core applies comes through
            // `process`, and this runs between events. Taking it here copies the root once per batch.
            let (version, state) = core.snapshot()
            guard version == batch[batch.count - 1].version else {
                return fail(EventLogError(.other, "the core is at version \(version), the journal's batch ends at \(batch[batch.count - 1].version)"))
            }
            batch[batch.count - 1].state = state
        }
        progress.appending = true
        let completion = { [self] (result: Result<Void, EventLogError>) in
            progress.appending = false
            switch result {
            case .success:
                commit(batch, bytes: records.reduce(0) { $0 + $1.payload.count })
                if shared == nil { awaitFill(acknowledged: batch.count) }
            case .failure(let error) where error.isBehind:
                // Not appended: applied again once what the others appended first is applied.
                progress.pending.insert(contentsOf: batch, at: 0)
                if case .behind(let head) = error.kind { awaitHandover(upTo: head) }
            case .failure(let error):
                if case .fenced(let keys) = error.kind, !keys.isEmpty {
                    // Only the requests whose keys are not theirs stay out (each answered with what
                    // its key holds: the first answer, a 409, a 422); the rest are applied again.
                    logger.info("requests whose idempotency keys are not theirs in Redis are dropped from an append; the rest go in again",
                                metadata: ["keys": "\(keys.count)"])
                    progress.pending.insert(contentsOf: batch, at: 0)
                    progress.fencedKeys.formUnion(keys)
                    progress.fencedAt = loop.now
                } else {
                    fail(error)
                }
            }
            reconcile()
            // What gathered while this append ran goes now, not at the end of the loop iteration:
            // the disk is idle until it does.
            flush()
            signalIdleIfDrained()
        }
        // A cluster's keys go to Redis beside the records (the journal's are in them).
        // (A cluster's keys always carry their claim; without one the append would be fenced off.)
        let answers = shared == nil ? [] : batch.compactMap { entry in
            entry.answeredKey.map { key in
                IdempotencyAnswer(key: key.key, entry: .answered(fingerprint: key.fingerprint, status: HTTPStatus.ok.code, body: Self.answeredBody(entry)),
                                  milliseconds: key.milliseconds, claim: key.claim ?? .inFlight(fingerprint: key.fingerprint, claim: ""))
            }
        }
        if let shared, !answers.isEmpty {
            shared.append(records, answering: answers, completion: completion)
        } else {
            log.append(records, completion: completion)
        }
    }

    /// The answer `entry` gives its request's key, when the journal keeps it (a cluster's goes to
    /// Redis beside the records).
    private func journaledAnswers(_ entry: Entry) -> [JournaledAnswer] {
        guard shared == nil, let key = entry.answeredKey else { return [] }
        return [JournaledAnswer(version: entry.version, expiresAt: JournaledAnswer.now() + key.milliseconds, fingerprint: key.fingerprint,
                                key: key.key, body: entry.answeredMembers == nil ? nil : Self.answeredBody(entry))]
    }

    /// The answer `entry` gives its request's key, at the version it is appended at.
    private static func answeredBody(_ entry: Entry) -> [UInt8] {
        guard var members = entry.answeredMembers else { return EventPath<StateType>.withVersionBody(entry.version) { Array($0) } }
        members["version"] = .integer(Int64(entry.version))
        return JSON.object(members).jsonBytes
    }

    /// Makes the next append wait a little for the clients just acknowledged: under load most of
    /// them send their next event at once, and it joins the next group instead of the one after,
    /// so one fsync carries nearly every connection's event rather than every other one's. The wait
    /// ends when they are pending, after `fillTurns` turns of the loop, or after
    /// `groupFillMilliseconds` (a millisecond), whichever comes first; a lone client is never
    /// waited for, since its next event is the one the wait expects.
    private func awaitFill(acknowledged: Int) {
        progress.fillTarget = progress.pending.count + acknowledged
        progress.fillTurnsLeft = Self.fillTurns
        if fillTimer == nil {
            fillTimer = LoopTimer(loop: loop) { [unowned self] in
                progress.fillTarget = 0
                flush()
            }
        }
        fillTimer!.start(after: options.groupFillMilliseconds)
    }

    /// How many times the next append is put off at most: at the append's answer, and at the end of
    /// the loop's next two turns (the acknowledgements go out in the first, what their clients send
    /// back is read in the second).
    static var fillTurns: Int { 3 }

    /// The event's JSON, for the journal; nil (logged) if it cannot be encoded, which the
    /// `JournalableEventInterceptor` keeps from happening to anything fired here.
    private func encoded(_ entry: Entry) -> [UInt8]? {
        do {
            return try StateType.eventRegistry.encode(entry.event).jsonBytes
        } catch {
            logger.error("an applied event cannot be journaled", metadata: ["version": "\(entry.version)", "error": "\(error)"])
            return nil
        }
    }

    private func commit(_ batch: [Entry], bytes: Int) {
        if let failure = progress.failure {
            logger.notice("the journal accepts events again", metadata: ["after": "\(failure)"])
            progress.failure = nil
        }
        publish(batch)
        if shared != nil, let first = batch.first, let last = batch.last {
            // One node writes each snapshot of a shared log: the one whose append crossed a
            // multiple of the snapshot interval. One it could not write then it writes after a
            // later append of its own, rather than leave the stream untrimmed to the next multiple.
            if (first.version - 1) / UInt64(options.snapshotEvents) != last.version / UInt64(options.snapshotEvents) { progress.snapshotOwed = true }
            if progress.snapshotOwed && !progress.snapshotting && loop.now >= progress.snapshotRetryAt {
                progress.snapshotOwed = false
                saveSnapshot { [self] error in
                    guard error != nil else { return }
                    progress.snapshotOwed = true
                    progress.snapshotRetryAt = loop.now + options.snapshotRetryMilliseconds
                }
            }
            return
        }
        progress.eventsSinceSnapshot += batch.count
        progress.bytesSinceSnapshot += bytes
        if progress.eventsSinceSnapshot >= options.snapshotEvents || progress.bytesSinceSnapshot >= options.snapshotBytes {
            saveSnapshot()
        }
    }

    /// Publishes a batch the log holds: subscribers get every version in order, then the published
    /// state moves to the batch's last and the acknowledgements go out. The published state moves
    /// only at the end: the hub derives the JSON of a version known by its changes alone from it.
    private func publish(_ batch: [Entry]) {
        for entry in batch.dropLast() {
            if let state = entry.state {
                hub.update(with: state, version: entry.version)
            } else {
                hub.update(changes: entry.changes ?? [], version: entry.version)
            }
        }
        let last = batch[batch.count - 1]
        publish(last.state!, last.version)
    }

    /// `isCoresOwn`: the state is the core's, and stays so until an event of this server's own
    /// (see `PublishedState`).
    private func publish(_ state: StateType, _ version: UInt64, isCoresOwn: Bool = false) {
        if isCoresOwn { publishedState.publishCoresOwn(at: version) } else { publishedState.publish(state, at: version) }
        hub.update(with: state, version: version)
        while let first = progress.waiters.first, first.version <= version {
            progress.waiters.removeFirst().resume(.success(first.version))
        }
        if !versionWatchers.isEmpty {
            let due = versionWatchers.filter { $0.version <= version }
            versionWatchers.removeAll { $0.version <= version }
            for watcher in due {
                watcher.timer.stop()
                watcher.proceed()
            }
        }
    }

    /// The log refused a batch: undo everything applied since the last published state and answer
    /// everyone waiting with a 503.
    private func fail(_ error: EventLogError) {
        logger.error("the journal refused events; they are undone and not acknowledged", metadata: [
            "error": "\(error)", "published": "\(publishedVersion)",
        ])
        // A fenced append says nothing of the log, which is sound.
        if case .fenced = error.kind {} else { progress.failure = error }
        progress.pending.removeAll()
        progress.fencedKeys.removeAll()
        endHandover()
        metrics.eventsUndone += core.version - publishedVersion
        let (version, state) = published
        restoreCore(to: state, version: version)
        let problem = Problem.journalUnavailable(error)
        // Taken out first: an event fired from a waiter's answer is applied on the restored state,
        // and waits for an append of its own.
        let refused = progress.waiters
        progress.waiters.removeAll()
        for waiter in refused { waiter.resume(.failure(problem)) }
    }

    // MARK: A shared log

    /// Records a shared log handed over: kept in order, applied when nothing of this server's own is
    /// being appended (see `reconcile`).
    private func received(_ records: [LogRecord]) {
        guard !progress.cannotFollow else { return }
        let new = records.drop { $0.version <= publishedVersion }
        if let first = new.first, let held = progress.incoming.last, first.version <= held.version {
            // A read that fills a gap before what the tail brought: merged in, each version once.
            progress.incoming = Self.merged(progress.incoming, Array(new))
        } else {
            progress.incoming += new
        }
        if progress.awaitedHead != 0 && receivedVersion >= progress.awaitedHead { endHandover() }
        reconcile()
    }

    /// Two runs of records in order of version, as one in order, each version once.
    static func merged(_ held: [LogRecord], _ arrived: [LogRecord]) -> [LogRecord] {
        var result: [LogRecord] = []
        result.reserveCapacity(held.count + arrived.count)
        var (i, j) = (0, 0)
        while i < held.count || j < arrived.count {
            let next: LogRecord
            if j == arrived.count || (i < held.count && held[i].version <= arrived[j].version) {
                next = held[i]
                if j < arrived.count && arrived[j].version == next.version { j += 1 }
                i += 1
            } else {
                next = arrived[j]
                j += 1
            }
            result.append(next)
        }
        return result
    }

    /// The newest version this server has, applied or waiting to be.
    private var receivedVersion: UInt64 { max(publishedVersion, progress.incoming.last?.version ?? 0) }

    /// How long the log's tail may take to hand over what an append found the others had appended,
    /// before it is read instead. The tail brings it within a round trip; this covers a tail that
    /// stopped (a read on a broken connection then fails the events with a 503, as an append would).
    static var handoverGraceMilliseconds: UInt64 { 100 }

    /// Holds this server's appends until the log has handed over the others' records up to `head`:
    /// its tail brings them anyway, so the refused append neither carried them back nor needs a read.
    private func awaitHandover(upTo head: UInt64) {
        guard receivedVersion < head else { return }
        progress.awaitedHead = max(progress.awaitedHead, head)
        if handoverTimer == nil {
            handoverTimer = LoopTimer(loop: loop) { [unowned self] in
                guard progress.awaitedHead != 0 else { return }
                endHandover()
                catchUp()
            }
        }
        handoverTimer!.start(after: Self.handoverGraceMilliseconds)
    }

    private func endHandover() {
        progress.awaitedHead = 0
        handoverTimer?.stop()
    }

    /// Reads what the shared log holds after the published version: when the tail did not bring
    /// what an append found the others had appended, or records arrived with a gap before them.
    private func catchUp() {
        guard let log, !progress.catchingUp else { return }
        progress.catchingUp = true
        log.read(after: publishedVersion, limit: 4_096) { [self] result in
            progress.catchingUp = false
            switch result {
            case .success(let records):
                received(records)
            case .failure(let error) where error.kind == .gone:
                // Away longer than the log keeps events: start again from its newest snapshot.
                resynchronize()
            case .failure(let error):
                fail(error)
            }
            flush()
        }
    }

    /// Takes the shared log's newest snapshot as the published state, when the events between this
    /// server's state and it are no longer kept. Subscribers get the jump as one replacement of the
    /// whole state; this server's own unpublished events are undone (their clients get a 503).
    private func resynchronize() {
        guard let log, !progress.catchingUp else { return }
        progress.catchingUp = true
        log.loadSnapshot(atOrBefore: .max) { [self] result in
            progress.catchingUp = false
            guard case .success(let record?) = result, record.version > publishedVersion else {
                if case .failure(let error) = result { fail(error) }
                return
            }
            let state: StateType
            do throws(EventLogError) { state = try StateType(snapshot: record) } catch {
                return fail(error)
            }
            logger.notice("took the shared log's snapshot: the events before it are no longer kept", metadata: [
                "from": "\(publishedVersion)", "to": "\(record.version)",
            ])
            fail(EventLogError(.gone, "this node was behind the shared log's oldest event and started again from its snapshot of version \(record.version)"))
            restoreCore(to: state, version: record.version)
            publish(state, record.version)
            progress.failure = nil
            reconcile()
        }
    }

    /// Applies the records others appended, in order, once no append of this server's is in
    /// flight: its own unpublished events are taken back, the others' applied as decided, and its
    /// own applied again on top (`Entry.event`), to be appended next.
    private func reconcile() {
        guard shared != nil, !progress.appending, !progress.catchingUp, !progress.cannotFollow else { return }
        progress.incoming.removeAll { $0.version <= publishedVersion }
        guard !progress.incoming.isEmpty || !progress.fencedKeys.isEmpty else { return }
        if let first = progress.incoming.first, first.version != publishedVersion + 1 { return catchUp() }
        // Everything below must run now, in order, with nothing else applied in between. What other
        // threads fired and the core has not taken yet waits (a thread that fires without pause
        // would otherwise keep this node from ever following).
        guard core.holdingOtherThreads({ core.isIdle }) else { return }
        let records = progress.incoming
        progress.incoming.removeAll()
        let own = progress.pending
        progress.pending.removeAll()
        let waiting = progress.waiters
        progress.waiters.removeAll()
        let dropping = progress.fencedKeys
        progress.fencedKeys.removeAll()
        // An event another thread fires meanwhile comes after all of this, which is decided already.
        core.holdingOtherThreads { replay(records, own: own, dropping: dropping, waiting: waiting) }
        if progress.failure != nil, !progress.cannotFollow, shared?.isReachable == true {
            logger.notice("caught up with the shared log", metadata: ["version": "\(publishedVersion)"])
            progress.failure = nil
        }
    }

    /// Applies `records` on the published state, then this server's `own` events again on top, but
    /// for the requests answering the idempotency keys in `dropping` (an append was fenced off by
    /// them), which are answered 503 and left out: their keys' claims answer their clients.
    private func replay(_ records: [LogRecord], own: [Entry], dropping: Set<String>, waiting: Deque<(version: UInt64, resume: (Outcome) -> Void)>) {
        var own = own
        // Read only when needed: held here while the others' events apply, the state would make
        // the core copy the document's root for the first of them.
        progress.refusingReactions = true
        if !own.isEmpty { core.restore(state: publishedState.current.state, version: publishedVersion) }
        for record in records {
            do {
                let event = try StateType.event(in: record)
                progress.applyingDecided = true
                let applied = core.applyIfIdle(decided: event)
                progress.applyingDecided = false
                if case .failure(let error)? = applied { throw error }
                guard case .success(record.version)? = applied else {
                    throw EventLogError(.diverged, "the event of version \(record.version) took version \(String(describing: applied)) here")
                }
                if !progress.pending.isEmpty {
                    // Fired meanwhile by a job the event let run (not a reaction to it, refused):
                    // this server's own, so applied again after the others', like the rest.
                    own += progress.pending
                    progress.pending.removeAll()
                    core.restore(state: publishedState.current.state, version: publishedVersion)
                }
            } catch {
                progress.applyingDecided = false
                progress.refusingReactions = false
                let failure = error as? EventLogError ?? EventLogError(.diverged, "the event of version \(record.version) in the shared log does not apply here: \(error)")
                logger.critical("this node cannot follow the shared log", metadata: ["error": "\(failure)"])
                progress.cannotFollow = true
                progress.incoming.removeAll()
                // Its own events are not applied again: their clients get the 503.
                progress.waiters = waiting
                return fail(failure)
            }
        }
        progress.refusingReactions = false
        // This server's own events again, on the others': each keeps its clients, at its new version;
        // their reactions are fired anew as they apply.
        var outcomes: [UInt64: Outcome] = [:]
        func isDropped(_ entry: Entry) -> Bool { !dropping.isEmpty && entry.answeredKey.map { dropping.contains($0.key) } ?? false }
        var next = own.startIndex
        while next < own.endIndex {
            let entry = own[next]
            if entry.isReaction {
                next += 1
                continue
            }
            if let mark = entry.batch {
                var end = next + 1
                while end < own.endIndex, own[end].batch?.id == mark.id { end += 1 }
                outcomes[own[end - 1].version] = own[next..<end].contains(where: isDropped) ? Self.dropped : applyAgain(batch: own[next..<end])
                next = end
                continue
            }
            next += 1
            if isDropped(entry) {
                outcomes[entry.version] = Self.dropped
                continue
            }
            guard let result = core.fireIfIdle(event: entry.event, origin: nil) else { continue }
            // The event's record is the same bytes at its new version: not encoded again.
            if case .success(let version) = result {
                if let payload = entry.payload { record(payload, asEventOf: version) }
                if let key = entry.answeredKey { answer(key, withEventOf: version) }
            }
            outcomes[entry.version] = result.mapError { Problem.forEvent($0, index: nil) }
        }
        for waiter in waiting {
            switch outcomes[waiter.version] {
            case .success(let version)?: whenPublished(version, waiter.resume)
            case .failure(let problem)?: waiter.resume(.failure(problem))
            case nil: waiter.resume(.failure(Problem.journalUnavailable(EventLogError(.other, "the event was lost while this node caught up"))))
            }
        }
    }

    /// What a request dropped from a fenced append is told (its client gets its key's answer
    /// instead). Made when needed: a replay after every lost race would otherwise build it.
    private static var dropped: Outcome {
        .failure(Problem.journalUnavailable(EventLogError(.fenced(keys: []),
            "the request's idempotency key was not its own in Redis (another request's, or its claim refused or run out); its events were not applied")))
    }

    /// The events of one request of several, applied again as one, all or none: each keeps its
    /// record, its mark and its key's answer at its new version; the answer is the request's last
    /// version, or the problem of the event now refused.
    private func applyAgain(batch: ArraySlice<Entry>) -> Outcome? {
        switch core.fireIfIdle(events: batch.map(\.event), mode: .allOrNothing, origin: nil) {
        case .success(let outcome)?:
            // Applied in one job, the events' new entries are contiguous.
            let firstVersion = outcome.version - UInt64(batch.count) + 1
            if let first = progress.pending.lastIndex(where: { $0.version == firstVersion }) {
                for (index, entry) in zip(first..., batch) where index < progress.pending.endIndex {
                    progress.pending[index].payload = entry.payload
                    progress.pending[index].batch = entry.batch
                    progress.pending[index].answeredKey = entry.answeredKey
                    progress.pending[index].answeredMembers = entry.answeredMembers
                }
            }
            return .success(outcome.version)
        case .failure(let rejection)?:
            let refused = batch[batch.startIndex + rejection.index]
            return .failure(Problem.forEvent(rejection.error, index: refused.batch?.postedIndex))
        case nil:
            return nil
        }
    }

    /// Puts the core back to `state`, refusing what observers fire as they are shown it again; what
    /// other threads fired and the core has not applied yet is applied after, on that state.
    private func restoreCore(to state: StateType, version: UInt64) {
        progress.refusingReactions = true
        core.holdingOtherThreads { core.restore(state: state, version: version) }
        progress.refusingReactions = false
    }

    // MARK: Snapshots

    /// Writes the published state as a snapshot, from an immutable copy, off the loop thread.
    func saveSnapshot(completion: ((EventLogError?) -> Void)? = nil) {
        guard let log, !progress.snapshotting else { completion?(nil); return }
        progress.snapshotting = true
        let (version, state) = published
        progress.eventsSinceSnapshot = 0
        progress.bytesSinceSnapshot = 0
        log.saveSnapshot(at: version, encode: { try state.jsonValue().jsonBytes }) { [self] result in
            progress.snapshotting = false
            switch result {
            case .success:
                logger.info("snapshot written", metadata: ["version": "\(version)"])
                completion?(nil)
            case .failure(let error):
                logger.error("cannot write a snapshot", metadata: ["version": "\(version)", "error": "\(error)"])
                completion?(error)
            }
        }
    }
}

/// Refuses, before it is applied, an event the journal could not write down (a Swift event type
/// with no encoder in the registry): applied, it would leave a hole in the log.
struct JournalableEventInterceptor<StateType: HostedState>: Interceptor {
    func intercept(event: Event, state: StateType) throws {
        guard StateType.eventRegistry.canEncode(event) else {
            throw EventRejection("\(EventEncodingError(typeName: "\(type(of: event))"))")
        }
    }
}
