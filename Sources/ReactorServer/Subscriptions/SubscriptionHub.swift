import Logging
import Reactor

/// Something that receives subscription messages: a WebSocket or an event-stream subscriber.
protocol SubscriptionSink: AnyObject {
    func deliver(_ message: SubscriberMessage)
}

/// Fans the core's state changes out to subscribers, on the loop thread.
///
/// For every transition it computes the patch once per distinct selection and encodes it once; the
/// same bytes then go to every subscriber of that selection. It keeps the recent transitions in a
/// window so that a subscriber that reconnects with `since=N` catches up without a snapshot.
final class SubscriptionHub<StateType: HostedState> {
    /// What the hub holds between transitions.
    private struct Held {
        var version: UInt64 = 0
        /// The JSON of the state at `version`, held only while the next transition needs it: to diff
        /// against when the state does not record its changes, or for sub-tree selections, which diff
        /// their own part. Held always, a document's root would have a second owner, and the core would
        /// copy it on every event.
        var kept: JSON?
        var hasState = false
        var window: TransitionWindow
        var groups: [SubscriptionSelection: [ObjectIdentifier: any SubscriptionSink]] = [:]
        /// How many of `groups` select a sub-tree, and how many want whole states rather than patches.
        var subtreeGroups = 0
        var stateGroups = 0
        /// Snapshots of the current version by selection: many subscribers arriving together share one.
        var snapshots: [SubscriptionSelection: SubscriberMessage] = [:]
        var subscriberCount = 0
    }
    // @exclusivity(unchecked) on `held` and `counters`: touched on the loop thread only; subscribers
    // are called on copies, never during a modification; a dynamic exclusivity check on each access
    // would cost more than the work it guards.
    @exclusivity(unchecked) private var held: Held
    /// What was sent, for metrics: messages and their bytes, and what happened to slow subscribers.
    @exclusivity(unchecked) var counters = Counters()
    /// The published state, for what needs the current JSON while none is kept (snapshots).
    private let published: () -> StateType
    private let logger: Logger

    var version: UInt64 { held.version }
    var subscriberCount: Int { held.subscriberCount }

    struct Counters {
        var pushes: UInt64 = 0
        var pushedBytes: UInt64 = 0
        /// Subscribers whose patches were dropped for a snapshot once they drain (conflation).
        var conflations: UInt64 = 0
        /// Subscribers closed for being too slow.
        var slowConsumerDisconnects: UInt64 = 0

        mutating func pushed(_ bytes: Int) {
            pushes += 1
            pushedBytes += UInt64(bytes)
        }

        mutating func fellBehind(_ policy: SlowConsumerPolicy) {
            switch policy {
            case .snapshot: conflations += 1
            case .close: slowConsumerDisconnects += 1
            }
        }
    }

    /// The name of the history the versions belong to (`HistoryName`), which snapshots carry.
    let history: String

    init(windowCapacity: Int, history: String = HistoryName.random(), logger: Logger, published: @escaping () -> StateType) {
        held = Held(window: TransitionWindow(capacity: windowCapacity))
        self.history = history
        self.logger = logger
        self.published = published
    }

    /// The JSON of the state at `version`.
    private var current: JSON {
        if let kept = held.kept { return kept }
        do {
            return try published().jsonValue()
        } catch {
            logger.error("cannot encode the state for subscribers", metadata: ["version": "\(held.version)", "error": "\(error)"])
            return .null
        }
    }

    func update(with newState: StateType, version newVersion: UInt64) {
        // The state's own account of the event, when it keeps one and follows the version held here.
        let recorded = held.hasState && newVersion == held.version + 1 ? newState.lastChanges : nil
        // The state as JSON, only when something needs it: a diff (no record, or sub-tree selections)
        // or whole-state messages. Patches from the record need none, and making it anyway (for a
        // document, a copy of its root) would cost on every event.
        var json: JSON?
        if !held.hasState || recorded == nil || held.subtreeGroups > 0 || held.stateGroups > 0 {
            do {
                json = try newState.jsonValue()
            } catch {
                logger.error("cannot encode the state for subscribers", metadata: ["version": "\(newVersion)", "error": "\(error)"])
                return
            }
        }
        guard held.hasState else {
            held.hasState = true
            (held.kept, held.version) = (json, newVersion)
            return
        }
        // A diff, or with nothing to diff against, the whole state, when the state keeps no record.
        let operations = recorded ?? held.kept.map { JSONPatch.diff(from: $0, to: json!) } ?? [.replace(path: .root, value: json!)]
        let previous = held.kept
        held.kept = recorded == nil || held.subtreeGroups > 0 ? json : nil
        // Past a jump over versions (a cluster node that started again from a snapshot), the
        // window keeps the whole new state: a subscriber resuming from any version before it gets
        // that, where a diff would hold only from the version the node had.
        let isJump = newVersion != held.version + 1
        send(operations, previous: previous, current: json, version: newVersion,
             kept: isJump ? [.replace(path: .root, value: json!)] : nil)
    }

    /// Keeps `transitions`, the last of which led to the state held, in the resume window: the
    /// events a journal replayed at start-up, so that a subscriber reconnecting after a restart
    /// resumes with what it missed rather than a snapshot. Before anything else is held there.
    func remember(_ transitions: [(version: UInt64, changes: [JSONPatchOperation])]) {
        guard held.hasState, transitions.last?.version == held.version, held.window.isEmpty else { return }
        for (version, changes) in transitions { held.window.append(.init(version: version, operations: changes)) }
    }

    /// A transition known by its operations alone, which take the state at `version` to the one at
    /// `newVersion`: what a journal's pipeline hands over for the events of a group but its last, so
    /// that it keeps no state per event (see `CommitPipeline.Entry`). The JSON, where a selection
    /// needs it, is the previous one with the operations applied, and is kept for the next
    /// transition. Until the group's last state comes (`update(with:version:)`), `published` must
    /// still give the state at the version before the group.
    func update(changes operations: [JSONPatchOperation], version newVersion: UInt64) {
        precondition(held.hasState && newVersion == held.version + 1, "changes come in order, after a state")
        var json: JSON?
        if held.subtreeGroups > 0 || held.stateGroups > 0 {
            var next = current
            do {
                try JSONPatch.apply(operations, to: &next)
            } catch {
                // They are exact by construction: this is a bug. The group's last state sets it right.
                logger.error("recorded changes do not apply to the state before them", metadata: ["version": "\(newVersion)", "error": "\(error)"])
            }
            json = next
        }
        let previous = held.kept
        held.kept = json
        send(operations, previous: previous, current: json, version: newVersion)
    }

    /// Sends the transition to `newVersion` to every selection it changes, and keeps it in the window.
    private func send(_ operations: [JSONPatchOperation], previous: JSON?, current json: JSON?, version newVersion: UInt64,
                      kept: [JSONPatchOperation]? = nil) {
        held.version = newVersion
        if !held.snapshots.isEmpty { held.snapshots.removeAll(keepingCapacity: true) }
        // Iterating even an empty dictionary retains and releases its storage, on every event.
        if !held.groups.isEmpty {
            for (selection, sinks) in held.groups where !sinks.isEmpty {
                guard let message = message(for: selection, previous: previous, current: json, rootOperations: operations) else { continue }
                for sink in sinks.values { sink.deliver(message) }
            }
        }
        // Last, so that the operations move into the window rather than being copied there.
        held.window.append(.init(version: newVersion, operations: kept ?? operations))
    }

    /// The message a selection's subscribers get for the transition just made; nil when the
    /// selection did not change. `current` is there for every selection that needs it (see `update`).
    private func message(for selection: SubscriptionSelection, previous: JSON?, current: JSON?, rootOperations: [JSONPatchOperation]) -> SubscriberMessage? {
        let operations = selection.path.isRoot
            ? rootOperations
            : JSONPatch.diff(from: previous?[selection.path] ?? .null, to: current![selection.path] ?? .null)
        guard !operations.isEmpty else { return nil }
        switch selection.mode {
        case .patch: return .patch(held.version, operations, history: history)
        case .state: return .state(held.version, current![selection.path] ?? .null, history: history)
        }
    }

    /// Adds `sink` and returns what it must be sent first: a snapshot, or what it missed since `since`
    /// (of `history`, when the client named the history it had it from); a fresh snapshot
    /// (`"resumed":false`) rather than more than `budget` bytes of missed patches, which would wait
    /// in the output unbounded by the slow-consumer policy.
    func subscribe(_ sink: any SubscriptionSink, to selection: SubscriptionSelection, since: UInt64?, history: String? = nil,
                   budget: Int = .max) -> [SubscriberMessage] {
        if held.groups[selection] == nil {
            if selection.mode == .state { held.stateGroups += 1 }
            if !selection.path.isRoot {
                held.subtreeGroups += 1
                // The next transition diffs this sub-tree against the state as it is now.
                if held.kept == nil { held.kept = current }
            }
        }
        held.groups[selection, default: [:]][ObjectIdentifier(sink)] = sink
        held.subscriberCount += 1
        guard let since else { return [snapshot(for: selection)] }
        let startOver = { [self] in [SubscriberMessage.snapshot(held.version, current[selection.path] ?? .null, history: self.history, resumed: false)] }
        // Version `since` of another history (this server started over since) is not this one's.
        if let history, history != self.history { return startOver() }
        guard let missed = held.window.transitions(after: since, current: held.version) else {
            // Too old, or from a future this server never saw (a restart): start over, and say so.
            return startOver()
        }
        if selection.path.isRoot && selection.mode == .patch {
            var messages: [SubscriberMessage] = []
            var bytes = 0
            for transition in missed where !transition.operations.isEmpty {
                let message = SubscriberMessage.patch(transition.version, transition.operations, history: self.history)
                bytes += message.json.count
                if bytes > budget { return startOver() }
                messages.append(message)
            }
            return messages
        }
        // A sub-tree's own history is not kept: one message brings it from `since` to now.
        let touched = missed.contains { $0.operations.contains(where: selection.isTouched(by:)) }
        guard touched else { return [] }
        let part = current[selection.path] ?? .null
        return [selection.mode == .patch ? .patch(held.version, [.replace(path: .root, value: part)], history: self.history)
                                         : .state(held.version, part, history: self.history)]
    }

    func unsubscribe(_ sink: any SubscriptionSink, from selection: SubscriptionSelection) {
        if held.groups[selection]?.removeValue(forKey: ObjectIdentifier(sink)) != nil {
            held.subscriberCount -= 1
        }
        if held.groups[selection]?.isEmpty == true {
            held.groups[selection] = nil
            if !selection.path.isRoot { held.subtreeGroups -= 1 }
            if selection.mode == .state { held.stateGroups -= 1 }
        }
    }

    /// A snapshot of the current version for `selection`, made once per version.
    func snapshot(for selection: SubscriptionSelection) -> SubscriberMessage {
        if let cached = held.snapshots[selection] { return cached }
        let message = SubscriberMessage.snapshot(held.version, current[selection.path] ?? .null, history: history)
        held.snapshots[selection] = message
        return message
    }
}
