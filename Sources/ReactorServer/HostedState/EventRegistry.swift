import Reactor

/// Maps each event `"type"` the server accepts to the decoder of its fields.
///
/// An event on the wire is a JSON object `{"type": "...", ...fields}`. Decoders get the whole object.
public struct EventRegistry<StateType: State>: Sendable {
    public typealias Decoder = @Sendable (JSON) throws -> any Event

    private var decoders: [String: Decoder] = [:]
    /// How each Swift event type is written down, searched in order like `namers` (a journal asks
    /// for every event; a cast to `any JSONEncodableEvent` costs over a thousand instructions).
    private var encoders: [TypeEncoder] = []

    private struct TypeEncoder: Sendable {
        let type: ObjectIdentifier
        var encode: @Sendable (any Event) throws -> JSON
    }

    private mutating func setEncoder(_ encode: @escaping @Sendable (any Event) throws -> JSON, for type: ObjectIdentifier) {
        if let index = encoders.firstIndex(where: { $0.type == type }) {
            encoders[index].encode = encode
        } else {
            encoders.append(TypeEncoder(type: type, encode: encode))
        }
    }

    private func encoder(for event: any Event) -> (@Sendable (any Event) throws -> JSON)? {
        let id = ObjectIdentifier(type(of: event))
        for encoder in encoders where encoder.type == id { return encoder.encode }
        return nil
    }
    /// How each Swift event type is named on the wire. An array searched in order rather than a
    /// dictionary: a registry has a handful of types, and comparing identifiers beats hashing one
    /// (this is looked up for every event applied).
    private var namers: [TypeNamer] = []

    // A struct, not a tuple: code that is not specialised would look a tuple type up at run time.
    private struct TypeNamer: Sendable {
        let type: ObjectIdentifier
        var name: Namer
    }

    private enum Namer: Sendable {
        case fixed(String)
        case byValue(@Sendable (any Event) -> String?)
    }

    private mutating func setNamer(_ namer: Namer, for type: ObjectIdentifier) {
        if let index = namers.firstIndex(where: { $0.type == type }) {
            namers[index].name = namer
        } else {
            namers.append(TypeNamer(type: type, name: namer))
        }
    }

    public init() {}

    /// Accepts events of `type`, built by `decode` from the event's JSON object. A decoder throws
    /// `EventDecodingError.invalidFields` (or any error, reported as its description) for bad fields.
    public mutating func register(_ type: String, decode: @escaping Decoder) {
        decoders[type] = decode
    }

    /// Accepts events of `type` decoded by their `Decodable` conformance (the `"type"` member is ignored).
    public mutating func register<E: Event & Decodable>(_ event: E.Type, as type: String) {
        decoders[type] = { json in try json.decode(E.self) }
        setNamer(.fixed(type), for: ObjectIdentifier(E.self))
    }

    /// Accepts events of `type` by their `Codable` conformance: decoded as above, and encoded (with
    /// the `"type"` member) when a journal records them.
    public mutating func register<E: Event & Codable>(_ event: E.Type, as type: String) {
        decoders[type] = { json in try json.decode(E.self) }
        setNamer(.fixed(type), for: ObjectIdentifier(E.self))
        setEncoder({ event in
            guard case .object(var members) = try JSON(encoding: event as! E) else {
                throw EventDecodingError.invalidFields(type: type, reason: "it does not encode as a JSON object")
            }
            _ = members.updateValue(.string(type), forKey: "type", insertingAt: 0)
            return .object(members)
        }, for: ObjectIdentifier(E.self))
    }

    /// Writes events of `type` down by their own `json`, found without a cast to
    /// `any JSONEncodableEvent` (which `encode` falls back to for types not named here).
    public mutating func encodeEvents<E: JSONEncodableEvent>(of type: E.Type) {
        setEncoder({ event in
            guard let event = eventCast(event, to: E.self) else { throw EventEncodingError(typeName: "\(Swift.type(of: event))") }
            return event.json
        }, for: ObjectIdentifier(E.self))
    }

    /// Whether `encode` can write `event` down: a journal refuses events it could not replay.
    public func canEncode(_ event: any Event) -> Bool {
        encoder(for: event) != nil || event is any JSONEncodableEvent
    }

    /// The event's wire form, which `decode` turns back into an equal event.
    public func encode(_ event: any Event) throws -> JSON {
        if let encode = encoder(for: event) { return try encode(event) }
        guard let event = event as? any JSONEncodableEvent else {
            throw EventEncodingError(typeName: "\(type(of: event))")
        }
        return event.json
    }

    /// Names events of `type` by their `eventType` without a cast to `any NamedEvent`, which looks
    /// the conformance up every time (this runs for every event, for logs and metrics).
    public mutating func nameEvents<E: NamedEvent>(of type: E.Type) {
        setNamer(.byValue { eventCast($0, to: E.self)?.eventType }, for: ObjectIdentifier(E.self))
    }

    /// The wire name of `event`'s type: its `NamedEvent.eventType`, or the name it was registered under.
    public func typeName(of event: any Event) -> String? {
        let id = ObjectIdentifier(type(of: event))
        for namer in namers where namer.type == id {
            switch namer.name {
            case .fixed(let name): return name
            case .byValue(let name): return name(event)
            }
        }
        return (event as? any NamedEvent)?.eventType
    }

    /// The accepted types, sorted, for error messages and docs.
    public var knownTypes: [String] { decoders.keys.sorted() }

    /// Decodes one event from its JSON object.
    public func decode(_ json: JSON) throws(EventDecodingError) -> any Event {
        guard case .object(let members) = json else {
            throw .notAnObject(found: json.typeName)
        }
        guard let typeValue = members["type"] else { throw .missingType }
        guard case .string(let type) = typeValue else { throw .typeNotAString(found: typeValue.typeName) }
        guard let decode = decoders[type] else { throw .unknownType(type, known: knownTypes) }
        do {
            return try decode(json)
        } catch let error as EventDecodingError {
            throw error
        } catch {
            throw .invalidFields(type: type, reason: "\(error)")
        }
    }
}

/// An event that writes its own wire form (`{"type": ..., ...fields}`), as its registry decodes it.
public protocol JSONEncodableEvent: Event {
    var json: JSON { get }
}

/// An event of a type the registry has no encoder for: a journal cannot record it.
public struct EventEncodingError: Error, Sendable, CustomStringConvertible {
    public let typeName: String

    public var description: String {
        "events of type \(typeName) cannot be journaled: register the type as Codable, or make it a JSONEncodableEvent"
    }
}

/// An event that knows its wire name, for event types that cover several names (an enum of events).
public protocol NamedEvent: Event {
    var eventType: String { get }
}

/// Why an event could not be decoded; the server answers 422 with the detail.
public enum EventDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    case notAnObject(found: String)
    case missingType
    case typeNotAString(found: String)
    case unknownType(String, known: [String])
    case invalidFields(type: String, reason: String)

    public var description: String {
        switch self {
        case .notAnObject(let found):
            "an event must be a JSON object with a \"type\" member, not \(found)"
        case .missingType:
            "the event has no \"type\" member"
        case .typeNotAString(let found):
            "the event's \"type\" must be a string, not \(found)"
        case .unknownType(let type, let known):
            "unknown event type \"\(type)\"; known types: \(known.joined(separator: ", "))"
        case .invalidFields(let type, let reason):
            "invalid \"\(type)\" event: \(reason)"
        }
    }
}
