import Reactor

/// Enforces each token's event allow-list inside the core, so an event fired by any transport
/// (HTTP, WebSocket) obeys it.
struct EventPermissionInterceptor<StateType: HostedState>: Interceptor {
    func intercept(event: Event, state: StateType) throws {}

    func intercept(event: Event, state: StateType, origin: (any Sendable)?) throws {
        guard let principal = principal(of: origin), let allowed = principal.token.allowedEventTypes else { return }
        let type = StateType.eventType(of: event) ?? "\(Swift.type(of: event))"
        guard allowed.contains(type) else {
            throw Problem.forbidden("token \(principal.name) may not fire \"\(type)\" events; it may fire: \(allowed.sorted().joined(separator: ", "))")
        }
    }
}
