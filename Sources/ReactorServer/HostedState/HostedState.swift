import Reactor

/// A state the server can host: it leaves the server as JSON (reads, subscriptions, snapshots).
/// Events arrive through the state's `EventRegistry`.
public protocol HostedState: State {
    /// The events the server accepts for this state, by their `"type"`.
    static var eventRegistry: EventRegistry<Self> { get }

    /// The state as JSON. The server asks once per version and keeps the answer.
    func jsonValue() throws -> JSON

    /// The state `jsonValue()` gave, back from its JSON: how a server loads a snapshot.
    init(json: JSON) throws

    /// One event read straight from the bytes of a request body, for a state with a quicker way
    /// than parsing the JSON and asking `eventRegistry`. Nil leaves the body to the registry, which
    /// also says what is wrong with it: a state gives exactly the event the registry would, or nil.
    /// The default is always nil.
    static func decodeEvent(fromBody body: UnsafeRawBufferPointer) -> (any Event)?

    /// The RFC 6902 operations that took the state before the last applied event to this one, for
    /// a state that records them while applying (`JSONDocument` does); the server sends them to
    /// subscribers instead of diffing the two states' JSON. Nil, the default, when the state does
    /// not know: the server diffs then.
    var lastChanges: [JSONPatchOperation]? { get }

    /// The wire name of `event`'s type, for logs, metrics and token allow-lists (asked for every
    /// event applied). The default asks `eventRegistry`.
    static func eventType(of event: any Event) -> String?

    /// Why the state refuses `event`, fired by a client, before it is applied to it: limits on what
    /// one event may make the state do beyond what its bytes carry (`bodyLimit`, the most a request
    /// body may hold). Asked when a client's event is admitted, never when a journal or a cluster's
    /// log is applied again: what was admitted once stays admitted. Nil, the default, admits it.
    func admissionProblem(of event: any Event, bodyLimit: Int) -> EventRejection?

    /// As `admissionProblem(of:bodyLimit:)`, for the events of one request of several together,
    /// asked before any of them is applied. Nil, the default, leaves each to be admitted on its own.
    static func admissionProblem(ofRequestWith events: [any Event]) -> EventRejection?
}

extension HostedState {
    public static func decodeEvent(fromBody body: UnsafeRawBufferPointer) -> (any Event)? { nil }

    public static func eventType(of event: any Event) -> String? { eventRegistry.typeName(of: event) }

    public var lastChanges: [JSONPatchOperation]? { nil }

    public func admissionProblem(of event: any Event, bodyLimit: Int) -> EventRejection? { nil }

    public static func admissionProblem(ofRequestWith events: [any Event]) -> EventRejection? { nil }
}

extension HostedState where Self: Encodable {
    /// Typed Swift states encode through their `Encodable` conformance.
    public func jsonValue() throws -> JSON {
        try JSON(encoding: self)
    }
}

extension HostedState where Self: Decodable {
    public init(json: JSON) throws {
        self = try json.decode(Self.self)
    }
}

/// Why an event was refused by the state it was fired at; the server answers 422 (or 409 for a
/// failed precondition such as a JSON Patch `test`), and the state is unchanged.
public struct EventRejection: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The event cannot apply to the state as it is (wrong type at a path, a missing member).
        case invalid
        /// A precondition the event carried does not hold (optimistic concurrency).
        case conflict
        /// The state would nest deeper than `JSON.maximumDepth`, beyond what it could be stored as.
        case tooDeep
        /// The event would make the state grow by more than one event may (a JSON Patch copying
        /// more than a request body may hold).
        case tooMuchGrowth
    }

    public let kind: Kind
    public let reason: String

    public init(_ reason: String, kind: Kind = .invalid) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { reason }
}
