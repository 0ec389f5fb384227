/// Asynchronous work that starts from the state as it is at the command's turn and fires events
/// at the core when it has something to report.
public protocol Command: Sendable {
    associatedtype StateType: State

    /// Runs on the core's executor, in the core's FIFO order, with the state as of its turn.
    /// Long work belongs elsewhere: hand it off and fire events when it completes.
    func execute(state: StateType, core: Core<StateType>)
}
