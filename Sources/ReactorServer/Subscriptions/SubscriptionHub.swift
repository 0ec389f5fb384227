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
    // @exclusivity(unchecked) on the stored properties below: touched on the loop thread only; subscribers are called on copies, never during a modification;
    // a dynamic exclusivity check on each access costs more than the work it guards here.
    @exclusivity(unchecked) private(set) var version: UInt64 = 0
    @exclusivity(unchecked) private(set) var state: JSON = .null
    @exclusivity(unchecked) private var hasState = false
    @exclusivity(unchecked) private var window: TransitionWindow
    @exclusivity(unchecked) private var groups: [SubscriptionSelection: [ObjectIdentifier: any SubscriptionSink]] = [:]
    /// Snapshots of the current version by selection: many subscribers arriving together share one.
    @exclusivity(unchecked) private var snapshots: [SubscriptionSelection: SubscriberMessage] = [:]
    private let logger: Logger

    @exclusivity(unchecked) private(set) var subscriberCount = 0
    /// What was sent, for metrics: messages and their bytes, and what happened to slow subscribers.
    @exclusivity(unchecked) var counters = Counters()

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

    init(windowCapacity: Int, logger: Logger) {
        window = TransitionWindow(capacity: windowCapacity)
        self.logger = logger
    }

    func update(with newState: StateType, version newVersion: UInt64) {
        let json: JSON
        do {
            json = try newState.jsonValue()
        } catch {
            logger.error("cannot encode the state for subscribers", metadata: ["version": "\(newVersion)", "error": "\(error)"])
            return
        }
        guard hasState else {
            hasState = true
            (state, version) = (json, newVersion)
            return
        }
        // The state's own account of the event, when it keeps one and follows the version held here;
        // a diff otherwise.
        let recorded = newVersion == version + 1 ? newState.lastChanges : nil
        let operations = recorded ?? JSONPatch.diff(from: state, to: json)
        // The previous state is kept only for sub-tree selections, which diff their own part.
        let previous: JSON? = groups.isEmpty ? nil : state
        (state, version) = (json, newVersion)
        window.append(.init(version: newVersion, operations: operations))
        if !snapshots.isEmpty { snapshots.removeAll(keepingCapacity: true) }
        guard let previous else { return }
        for (selection, sinks) in groups where !sinks.isEmpty {
            guard let message = message(for: selection, previous: previous, rootOperations: operations) else { continue }
            for sink in sinks.values { sink.deliver(message) }
        }
    }

    /// The message a selection's subscribers get for the transition just made; nil when the
    /// selection did not change.
    private func message(for selection: SubscriptionSelection, previous: JSON, rootOperations: [JSONPatchOperation]) -> SubscriberMessage? {
        let operations = selection.path.isRoot
            ? rootOperations
            : JSONPatch.diff(from: previous[selection.path] ?? .null, to: state[selection.path] ?? .null)
        guard !operations.isEmpty else { return nil }
        switch selection.mode {
        case .patch: return .patch(version, operations)
        case .state: return .state(version, state[selection.path] ?? .null)
        }
    }

    /// Adds `sink` and returns what it must be sent first: a snapshot, or what it missed since `since`.
    func subscribe(_ sink: any SubscriptionSink, to selection: SubscriptionSelection, since: UInt64?) -> [SubscriberMessage] {
        groups[selection, default: [:]][ObjectIdentifier(sink)] = sink
        subscriberCount += 1
        guard let since else { return [snapshot(for: selection)] }
        guard let missed = window.transitions(after: since, current: version) else {
            // Too old, or from a future this server never saw (a restart): start over, and say so.
            return [.snapshot(version, state[selection.path] ?? .null, resumed: false)]
        }
        if selection.path.isRoot && selection.mode == .patch {
            return missed.compactMap { $0.operations.isEmpty ? nil : .patch($0.version, $0.operations) }
        }
        // A sub-tree's own history is not kept: one message brings it from `since` to now.
        let touched = missed.contains { $0.operations.contains { selection.isTouched(by: $0.path) } }
        guard touched else { return [] }
        let current = state[selection.path] ?? .null
        return [selection.mode == .patch ? .patch(version, [.replace(path: .root, value: current)]) : .state(version, current)]
    }

    func unsubscribe(_ sink: any SubscriptionSink, from selection: SubscriptionSelection) {
        if groups[selection]?.removeValue(forKey: ObjectIdentifier(sink)) != nil {
            subscriberCount -= 1
        }
        if groups[selection]?.isEmpty == true { groups[selection] = nil }
    }

    /// A snapshot of the current version for `selection`, made once per version.
    func snapshot(for selection: SubscriptionSelection) -> SubscriberMessage {
        if let cached = snapshots[selection] { return cached }
        let message = SubscriberMessage.snapshot(version, state[selection.path] ?? .null)
        snapshots[selection] = message
        return message
    }
}
