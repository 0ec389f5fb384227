/// Sees every applied event together with the state it produced (logging, persistence, metrics).
public protocol Middleware<StateType>: Sendable {
    associatedtype StateType: State

    /// Called on the core's executor after `event` was applied, with the new state.
    func process(event: Event, state: StateType)

    /// As `process(event:state:)`, with the version the event was given.
    /// The default forwards to `process(event:state:)`.
    func process(event: Event, state: StateType, version: UInt64)
}

extension Middleware {
    public func process(event: Event, state: StateType, version: UInt64) {
        process(event: event, state: state)
    }
}

/// Sees every event before it is applied, with the state it would be applied to, and may reject it.
/// This is where a server enforces who may fire what, whatever transport the event came by.
public protocol Interceptor<StateType>: Sendable {
    associatedtype StateType: State

    /// Throws to reject `event`: the state is not changed and whoever fired it gets the error.
    func intercept(event: Event, state: StateType) throws

    /// As `intercept(event:state:)`, with the origin the event was fired with (nil when fired
    /// without one). The default forwards to `intercept(event:state:)`.
    func intercept(event: Event, state: StateType, origin: (any Sendable)?) throws
}

extension Interceptor {
    public func intercept(event: Event, state: StateType, origin: (any Sendable)?) throws {
        try intercept(event: event, state: state)
    }
}

/// Identifies something added to a core after its creation (a middleware, an interceptor, a feedback),
/// so that it can be removed again.
public struct Registration: Hashable, Sendable {
    @usableFromInline let id: UInt64

    @usableFromInline init(id: UInt64) { self.id = id }
}

/// A middleware or interceptor as the core keeps it: an object, so that the hot path can call it
/// where it lies, unretained (see `Core.publishApplied`), rather than copying the existential out
/// of the array (a retain and a release of its box for every event).
@usableFromInline
final class Registered<Item>: Sendable where Item: Sendable {
    @usableFromInline let registration: Registration
    @usableFromInline let item: Item

    @usableFromInline init(_ registration: Registration, _ item: Item) {
        self.registration = registration
        self.item = item
    }
}
