import Reactor

extension Event {
    /// The event as `E` when its dynamic type is exactly `E`.
    ///
    /// Runs for every event (applying, naming): `as?` goes through the runtime's general cast, which
    /// costs a few hundred instructions; comparing the opened type's metadata costs a handful. Falls
    /// back to `as?` for anything but an exact match (a subclass, an existential box).
    @inline(__always)
    func exactly<E: Event>(_ type: E.Type) -> E? {
        if Self.self == E.self { return unsafeBitCast(self, to: E.self) }
        return self as? E
    }
}

/// `event` as `E` when it is one: the cheap check above on the opened existential.
@inline(__always)
func eventCast<E: Event>(_ event: any Event, to type: E.Type) -> E? {
    event.exactly(type)
}

/// `body` of `event` as an `E`, read where the existential holds it; nil when it is no `E`.
///
/// A cast copies the event out of its existential: a retain and a release of each reference in
/// it, for every event the core applies and every event it names. An existential keeps a value
/// of at most three words, word-aligned and bitwise takable, inline at the start of its container
/// (Swift's existential layout, docs/ABI/TypeLayout.rst), so when the dynamic type is exactly `E`
/// and `E` is such a value, `body` reads it there, with no copy. Anything else is cast and copied.
/// (Tests read every kind of `DocumentEvent` through here, and events that take the other path.)
@inline(__always)
func withEvent<E: Event, Result, Failure: Error>(
    _ event: any Event, as type: E.Type, _ body: (E) throws(Failure) -> Result
) throws(Failure) -> Result? {
    let fitsInline = MemoryLayout<E>.size <= 3 * MemoryLayout<UnsafeRawPointer>.size
        && MemoryLayout<E>.alignment <= MemoryLayout<UnsafeRawPointer>.alignment
        && _isBitwiseTakable(E.self)
    if fitsInline, event.isExactly(E.self) {
        return try withUnsafePointer(to: event) { (container) throws(Failure) -> Result in
            try withBitwiseBorrow(of: UnsafeRawPointer(container), as: E.self, body)
        }
    }
    guard let copy = event.exactly(E.self) else { return nil }
    return try body(copy)
}

/// `body` with the bitwise-takable `E` stored at `source`, lent as it is there.
///
/// Read through the pointer (`pointee`), the value would be copied: a retain and a release of each
/// reference in it, as the compiler cannot tell that a mutating `body` leaves that memory alone.
/// Here its bits are moved into a temporary and out again as a value the compiler takes for its
/// own, handed to `body` (which can only borrow it), and moved back, so it is never destroyed: it
/// owns nothing; `source`, which outlives the call, does.
@inline(__always)
private func withBitwiseBorrow<E, Result, Failure: Error>(
    of source: UnsafeRawPointer, as type: E.Type, _ body: (E) throws(Failure) -> Result
) throws(Failure) -> Result {
    try withUnsafeTemporaryAllocation(of: E.self, capacity: 1) { (temporary) throws(Failure) -> Result in
        let slot = temporary.baseAddress!
        UnsafeMutableRawPointer(slot).copyMemory(from: source, byteCount: MemoryLayout<E>.size)
        let borrowed = slot.move()
        // Moved back, not destroyed; the temporary is then let go without deinitializing it.
        defer { slot.initialize(to: borrowed) }
        return try body(borrowed)
    }
}

extension Event {
    /// Whether the event's dynamic type is exactly `E` (read from the opened existential: no cast).
    @inline(__always)
    fileprivate func isExactly<E: Event>(_ type: E.Type) -> Bool {
        Self.self == E.self
    }
}

/// `value` as `Target`: read in place when its static type is exactly `Target`, else through `as?`
/// (the runtime's general cast, a few hundred instructions, which an interceptor would pay on every
/// event).
@inline(__always)
func exactCast<Value: Sendable, Target>(_ value: Value, to type: Target.Type) -> Target? {
    if Value.self == Target.self {
        return withUnsafePointer(to: value) { UnsafeRawPointer($0).load(as: Target.self) }
    }
    return value as? Target
}
