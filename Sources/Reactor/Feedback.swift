/// A reaction of the core to its own state (after Loop's feedbacks): a selection of the state that,
/// when it changes, starts an effect that may fire an event. When the selection changes again, the
/// effect still running is cancelled and its event, if any, is dropped.
///
/// Synchronous effects run on the executor and their events are fired after the current job;
/// async effects run in a `Task`.
public struct Feedback<StateType: State>: Sendable {
    let makeObserver: @Sendable (Core<StateType>, Registration) -> Core<StateType>.Observer

    /// The general form: `trigger` selects what the feedback watches; each time its value changes (and
    /// for the first state) the running effect is cancelled, and `payload` says whether to start a new
    /// one and with what.
    init<Trigger: Equatable & Sendable, Payload: Sendable>(
        trigger: @escaping @Sendable (StateType) -> Trigger,
        payload: @escaping @Sendable (Trigger, StateType) -> Payload?,
        effect: FeedbackEffect<Payload>
    ) {
        makeObserver = { core, registration in
            let run = FeedbackRun<Trigger>()
            return Core<StateType>.Observer(
                key: .registration(registration),
                onRemove: { run.cancel() }
            ) { state, _ in
                let value = trigger(state)
                guard run.restart(on: value) else { return true }
                guard let input = payload(value, state) else { return true }
                switch effect {
                case .immediate(let body):
                    if let event = body(input) { core.fire(event: event) }
                case .async(let body):
                    let generation = run.generation
                    run.task = Task {
                        guard let event = await body(input), !Task.isCancelled else { return }
                        core.perform {
                            // Only the effect of the selection still current may speak.
                            if run.generation == generation { core.fire(event: event) }
                        }
                    }
                }
                return true
            }
        }
    }
}

extension Feedback {
    /// Runs `effect` with the selected value for the first state and whenever the value changes.
    public static func skippingRepeated<Value: Equatable & Sendable>(
        _ select: @escaping @Sendable (StateType) -> Value,
        effect: @escaping @Sendable (Value) -> (any Event)?
    ) -> Feedback {
        Feedback(trigger: select, payload: { value, _ in value }, effect: .immediate(effect))
    }

    /// Runs the async `effect` with the selected value for the first state and whenever the value
    /// changes, cancelling the previous run.
    public static func skippingRepeated<Value: Equatable & Sendable>(
        _ select: @escaping @Sendable (StateType) -> Value,
        effect: @escaping @Sendable (Value) async -> (any Event)?
    ) -> Feedback {
        Feedback(trigger: select, payload: { value, _ in value }, effect: .async(effect))
    }

    /// Runs `effect` with the state each time `predicate` goes from false (or no state yet) to true.
    public static func whenBecomesTrue(
        _ predicate: @escaping @Sendable (StateType) -> Bool,
        effect: @escaping @Sendable (StateType) -> (any Event)?
    ) -> Feedback {
        Feedback(trigger: predicate, payload: { holds, state in holds ? state : nil }, effect: .immediate(effect))
    }

    /// Runs the async `effect` each time `predicate` becomes true; cancels it when `predicate` turns false.
    public static func whenBecomesTrue(
        _ predicate: @escaping @Sendable (StateType) -> Bool,
        effect: @escaping @Sendable (StateType) async -> (any Event)?
    ) -> Feedback {
        Feedback(trigger: predicate, payload: { holds, state in holds ? state : nil }, effect: .async(effect))
    }

    /// Runs `effect` with the value each time `select` goes from nil (or no state yet) to a value;
    /// later values are ignored until it has been nil again.
    public static func firstValueAfterNil<Value: Sendable>(
        _ select: @escaping @Sendable (StateType) -> Value?,
        effect: @escaping @Sendable (Value) -> (any Event)?
    ) -> Feedback {
        Feedback(trigger: { select($0) != nil }, payload: { _, state in select(state) }, effect: .immediate(effect))
    }

    /// Runs the async `effect` each time `select` goes from nil to a value; cancels it when `select`
    /// turns nil again.
    public static func firstValueAfterNil<Value: Sendable>(
        _ select: @escaping @Sendable (StateType) -> Value?,
        effect: @escaping @Sendable (Value) async -> (any Event)?
    ) -> Feedback {
        Feedback(trigger: { select($0) != nil }, payload: { _, state in select(state) }, effect: .async(effect))
    }
}

extension Core {
    /// Starts `feedback` with the current state; remove it with the registration returned.
    @discardableResult
    public func add(feedback: Feedback<StateType>) -> Registration {
        let registration = newRegistration()
        perform { [self] in addObserver(feedback.makeObserver(self, registration)) }
        return registration
    }
}

enum FeedbackEffect<Payload: Sendable>: Sendable {
    case immediate(@Sendable (Payload) -> (any Event)?)
    case async(@Sendable (Payload) async -> (any Event)?)
}

/// What one feedback has running.
/// @unchecked Sendable: read and written only on the core's executor, also from the jobs its tasks submit.
final class FeedbackRun<Trigger: Equatable>: @unchecked Sendable {
    private var trigger: Trigger?
    private var started = false
    private(set) var generation: UInt64 = 0
    var task: Task<Void, Never>?

    /// Records `value`; true when it differs from the last one (or is the first), in which case the
    /// running effect has been cancelled.
    func restart(on value: Trigger) -> Bool {
        if started, trigger == value { return false }
        started = true
        trigger = value
        cancel()
        return true
    }

    func cancel() {
        generation += 1
        task?.cancel()
        task = nil
    }
}
