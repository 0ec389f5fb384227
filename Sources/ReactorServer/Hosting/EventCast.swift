import Reactor

extension Event {
    /// The event as `E` when its dynamic type is exactly `E`.
    ///
    /// Runs for every event (applying, naming): `as?` goes through the runtime's general cast, which
    /// costs a few hundred instructions; comparing the opened type's metadata costs a handful. Falls
    /// back to `as?` for anything but an exact match (a subclass, an existential box).
    @inline(__always)
    func exactly<E: Event>(_ type: E.Type) -> E? {
        if Self.self == E.self {
            return withUnsafePointer(to: self) { UnsafeRawPointer($0).load(as: E.self) }
        }
        return self as? E
    }
}

/// `event` as `E` when it is one: the cheap check above on the opened existential.
@inline(__always)
func eventCast<E: Event>(_ event: any Event, to type: E.Type) -> E? {
    event.exactly(type)
}

/// The client an event was fired for, when its origin is one: `as?` from `any Sendable` is the
/// runtime's general cast, and interceptors ask this for every event.
@inline(__always)
func principal(of origin: (any Sendable)?) -> Principal? {
    guard let origin else { return nil }
    return exactCast(origin, to: Principal.self)
}

@inline(__always)
private func exactCast<Value: Sendable, Target>(_ value: Value, to type: Target.Type) -> Target? {
    if Value.self == Target.self {
        return withUnsafePointer(to: value) { UnsafeRawPointer($0).load(as: Target.self) }
    }
    return value as? Target
}
