import Reactor

/// The newest state clients may see, and its version: the commit pipeline moves it as the log
/// confirms events; the subscription hub (a new subscriber's snapshot) and the services read it.
/// Made before both, so that neither needs a reference to the other.
///
/// A document's root has one owner wherever it can: held here while the core applies the next
/// events, it makes the core copy the root for the first of them. So the published state is read
/// from the core whenever it is the core's own: always without a log, and with a shared log after
/// events the others decided, until this server applies one of its own (`detach(from:)`). Held
/// here otherwise: with a log, the core runs ahead of what the log holds.
///
/// @unchecked Sendable: used on the loop thread only, which is the core's executor (where its
/// interceptor, `PublishedStateDetacher`, runs).
final class PublishedState<StateType: HostedState>: @unchecked Sendable {
    /// Unowned: the core holds the pipeline (a middleware), which holds this.
    private unowned let core: Core<StateType>
    /// Whether there is a log, so that the published state can lag behind the core's.
    let isJournaled: Bool
    // @exclusivity(unchecked): touched on the loop thread only, by the few methods below, which
    // call nothing; a dynamic check on each access would cost more than the access.
    @exclusivity(unchecked) private(set) var version: UInt64
    /// The published state, when it is not the core's own.
    @exclusivity(unchecked) private var held: StateType?

    init(core: Core<StateType>, state: StateType, version: UInt64, isJournaled: Bool) {
        self.core = core
        self.version = version
        self.isJournaled = isJournaled
        held = isJournaled ? state : nil
    }

    /// The published state and its version.
    var current: (version: UInt64, state: StateType) {
        guard let held else {
            let own = core.snapshot()
            assert(own.version == version, "the published state is the core's own only at the published version")
            return own
        }
        return (version, held)
    }

    /// `state`, at `version`, is what clients may see now; the core may already be past it.
    func publish(_ state: StateType, at version: UInt64) {
        self.version = version
        if isJournaled { held = state }
    }

    /// The core's own state, at `version`, is what clients may see now: an event the others decided,
    /// just applied, with nothing of this server's own applied after it.
    func publishCoresOwn(at version: UInt64) {
        self.version = version
        held = nil
    }

    /// Holds the published state apart from the core's before the core applies an event of this
    /// server's own, which the log does not hold yet: `state` is the core's, just before.
    func detach(from state: StateType) {
        if held == nil && isJournaled { held = state }
    }
}

/// Before the core applies an event of this server's own (decided ones skip interceptors), holds
/// the published state apart from the core's, if it was the core's own (`PublishedState`).
struct PublishedStateDetacher<StateType: HostedState>: Interceptor {
    unowned let published: PublishedState<StateType>

    func intercept(event: Event, state: StateType) throws {
        published.detach(from: state)
    }
}
