import Foundation

/// An event to fire at a remote core: its stored properties, encoded as a JSON object, with
/// `"type": eventType` added.
///
/// ```swift
/// struct Increment: RemoteEvent {
///     static let eventType = "increment"
///     var path: String
///     var by = 1
/// }
/// remote.fire(event: Increment(path: "/counter"))   // {"type":"increment","path":"/counter","by":1}
/// ```
///
/// The type name is static because the server dispatches on it: each Swift type is one kind of event.
public protocol RemoteEvent: Encodable, Sendable {
    static var eventType: String { get }
}

extension RemoteEvent {
    /// `{"type": eventType, ...members}`, as it goes on the wire.
    func wireJSON(encoder: JSONEncoder) throws(RemoteCoreError) -> JSON {
        let encoded: JSON
        do {
            encoded = try JSON(encoding: self, encoder: encoder)
        } catch {
            throw .invalidEvent("\(Self.self) does not encode: \(error)")
        }
        guard case .object(let members) = encoded else {
            throw .invalidEvent("\(Self.self) encodes to a JSON \(encoded.typeName), not an object")
        }
        // A member of its own named "type" would be silently overwritten: refuse it unless it agrees.
        if let type = members["type"], type != .string(Self.eventType) {
            throw .invalidEvent("\(Self.self) encodes \"type\": \(type), but its eventType is \"\(Self.eventType)\"")
        }
        var event: JSON.Object = ["type": .string(Self.eventType)]
        for (key, value) in members where key != "type" { event[key] = value }
        return .object(event)
    }
}
