extension DocumentEvent: JSONEncodableEvent {
    /// The event's wire form, as `JSONDocument.eventRegistry` decodes it: for logs, replication and
    /// clients written in Swift. Decoding it gives back an equal event.
    public var json: JSON {
        var members = JSON.Object()
        members["type"] = .string(eventType)
        switch self {
        case .set(let path, let value), .merge(let path, let value), .append(let path, let value):
            members["path"] = .string(path.string)
            members["value"] = value
        case .remove(let path):
            members["path"] = .string(path.string)
        case .increment(let path, let amount):
            members["path"] = .string(path.string)
            members["by"] = amount.json
        case .patch(let operations):
            members["ops"] = operations.json
        }
        return .object(members)
    }
}
