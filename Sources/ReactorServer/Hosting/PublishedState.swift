import Reactor

/// The newest state clients may see, and its version: the commit pipeline moves it as the log
/// confirms events; the subscription hub (a new subscriber's snapshot) and the services read it.
/// Made before both, so that neither needs a reference to the other.
///
/// With a log it holds the state, which lags behind the core's. Without one the core's state is the
/// published one, and it is read from the core: held here as well, a document's root would have two
/// owners, and the core would copy it on every event.
final class PublishedState<StateType: HostedState> {
    /// Unowned: the core holds the pipeline (a middleware), which holds this.
    private unowned let core: Core<StateType>
    // @exclusivity(unchecked): touched on the loop thread only, and written only by `publish`,
    // which calls nothing; a dynamic check on each access would cost more than the access.
    @exclusivity(unchecked) private(set) var version: UInt64
    @exclusivity(unchecked) private var held: StateType?

    /// `holdsState`: whether there is a log, and so a published state apart from the core's.
    init(core: Core<StateType>, state: StateType, version: UInt64, holdsState: Bool) {
        self.core = core
        self.version = version
        held = holdsState ? state : nil
    }

    /// The published state and its version.
    var current: (version: UInt64, state: StateType) {
        guard let held else { return core.snapshot() }
        return (version, held)
    }

    /// The state held apart from the core's, when there is a log.
    var heldState: StateType? { held }

    func publish(_ state: StateType, at version: UInt64) {
        self.version = version
        if held != nil { held = state }
    }
}
