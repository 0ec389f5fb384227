import Reactor

// Why these wrappers: a core calls its middleware and interceptors through `any Middleware<State>`,
// and a witness reached that way runs the generic, unspecialised body of a generic type (the commit
// pipeline, the event logger), which looks type metadata up at run time on every call — a few
// hundred instructions per tuple or closure type it touches. Wrapped here, where the server's
// initialiser is specialised for its state, the closure holds the concrete type's own code.

/// A middleware that calls the concrete one it was made from.
/// @unchecked Sendable: made from a `Middleware`, which is Sendable; the closure only calls it.
struct SpecializedMiddleware<StateType: State>: Middleware, @unchecked Sendable {
    private let body: (Event, StateType, UInt64) -> Void

    init<Wrapped: Middleware>(_ middleware: Wrapped) where Wrapped.StateType == StateType {
        body = { middleware.process(event: $0, state: $1, version: $2) }
    }

    /// A middleware that is `first` then `second`: one call through the core's list where there
    /// would be two, for every event.
    init<First: Middleware, Second: Middleware>(_ first: First, then second: Second)
    where First.StateType == StateType, Second.StateType == StateType {
        body = {
            first.process(event: $0, state: $1, version: $2)
            second.process(event: $0, state: $1, version: $2)
        }
    }

    func process(event: Event, state: StateType) {}

    func process(event: Event, state: StateType, version: UInt64) {
        body(event, state, version)
    }
}

/// An interceptor that calls the concrete one it was made from.
/// @unchecked Sendable: made from an `Interceptor`, which is Sendable; the closure only calls it.
struct SpecializedInterceptor<StateType: State>: Interceptor, @unchecked Sendable {
    private let body: (Event, StateType, (any Sendable)?) throws -> Void

    init<Wrapped: Interceptor>(_ interceptor: Wrapped) where Wrapped.StateType == StateType {
        body = { try interceptor.intercept(event: $0, state: $1, origin: $2) }
    }

    func intercept(event: Event, state: StateType) throws {}

    func intercept(event: Event, state: StateType, origin: (any Sendable)?) throws {
        try body(event, state, origin)
    }
}
