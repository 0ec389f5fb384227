/// The wire form of `DocumentEvent`s: `{"type": "...", ...members}`.
///
/// | type        | members                                  |
/// |-------------|------------------------------------------|
/// | `set`       | `path`, `value`                          |
/// | `merge`     | `path`, `value`                          |
/// | `remove`    | `path`                                   |
/// | `increment` | `path`, optional `by` (a number, default 1) |
/// | `append`    | `path`, `value`                          |
/// | `patch`     | `ops` (an RFC 6902 operation array)      |
///
/// `path` is a JSON Pointer string; `value` may be any JSON, null included (null is a value, only a
/// missing member is an error). Unknown members are rejected so that a typo ("valeu") is reported
/// rather than silently ignored. Decoding reads the parsed `JSON` directly: no Foundation, no Codable.
extension JSONDocument {
    public static let eventRegistry: EventRegistry<JSONDocument> = {
        var registry = EventRegistry<JSONDocument>()
        registry.nameEvents(of: DocumentEvent.self)
        registry.encodeEvents(of: DocumentEvent.self)
        registry.register("set") { json in
            let fields = try DocumentEventFields(json, type: "set", expected: DocumentEventFields.setMembers)
            return DocumentEvent.set(path: try fields.path(), value: try fields.value())
        }
        registry.register("merge") { json in
            let fields = try DocumentEventFields(json, type: "merge", expected: DocumentEventFields.mergeMembers)
            return DocumentEvent.merge(path: try fields.path(), value: try fields.value())
        }
        registry.register("remove") { json in
            let fields = try DocumentEventFields(json, type: "remove", expected: DocumentEventFields.removeMembers)
            return DocumentEvent.remove(path: try fields.path())
        }
        registry.register("increment") { json in
            let fields = try DocumentEventFields(json, type: "increment", expected: DocumentEventFields.incrementMembers)
            return DocumentEvent.increment(path: try fields.path(), by: try fields.amount())
        }
        registry.register("append") { json in
            let fields = try DocumentEventFields(json, type: "append", expected: DocumentEventFields.appendMembers)
            return DocumentEvent.append(path: try fields.path(), value: try fields.value())
        }
        registry.register("patch") { json in
            let fields = try DocumentEventFields(json, type: "patch", expected: DocumentEventFields.patchMembers)
            return DocumentEvent.patch(try fields.operations())
        }
        return registry
    }()
}

/// The members of one event object, checked against the ones its type allows.
private struct DocumentEventFields {
    let type: String
    let members: JSON.Object

    // The members each type allows, made once: an array literal at the call would be built per event.
    static let setMembers = ["path", "value"]
    static let mergeMembers = ["path", "value"]
    static let removeMembers = ["path"]
    static let incrementMembers = ["path", "by"]
    static let appendMembers = ["path", "value"]
    static let patchMembers = ["ops"]

    /// Rejects members other than "type" and `expected`.
    init(_ json: JSON, type: String, expected: [String]) throws(EventDecodingError) {
        guard case .object(let members) = json else {
            // The registry only hands over objects; kept for a direct caller.
            throw .notAnObject(found: json.typeName)
        }
        self.type = type
        self.members = members
        var unknown: [String] = []
        for key in members.keys where key != "type" && !expected.contains(key) {
            unknown.append("\"\(key)\"")
        }
        if !unknown.isEmpty {
            let noun = unknown.count == 1 ? "member" : "members"
            throw invalid("unknown \(noun) \(unknown.joined(separator: ", ")); expected \(expected.joined(separator: ", "))")
        }
    }

    func invalid(_ reason: String) -> EventDecodingError {
        .invalidFields(type: type, reason: reason)
    }

    /// The required "path": a JSON Pointer string.
    func path() throws(EventDecodingError) -> JSONPointer {
        guard let member = members["path"] else {
            throw invalid("missing \"path\" (a JSON Pointer such as \"/counter\", or \"\" for the whole document)")
        }
        guard case .string(let text) = member else {
            throw invalid("\"path\" must be a string (a JSON Pointer such as \"/counter\"), not \(member.typeName)")
        }
        do {
            return try JSONPointer(text)
        } catch {
            // The pointer error quotes the rejected pointer.
            throw invalid("\"path\" is not a valid JSON Pointer: \(error.message)")
        }
    }

    /// The required "value"; JSON null is a value, only absence is an error.
    func value() throws(EventDecodingError) -> JSON {
        guard let member = members["value"] else {
            throw invalid("missing \"value\" (any JSON value; null counts)")
        }
        return member
    }

    /// The optional "by" of an increment; 1 when absent.
    func amount() throws(EventDecodingError) -> DocumentEvent.Amount {
        switch members["by"] {
        case nil: return 1
        case .integer(let value)?: return .integer(value)
        // The parser never produces a non-finite number; the state checks again for Swift callers.
        case .number(let value)?: return .number(value)
        case let other?: throw invalid("\"by\" must be a number, not \(other.typeName)")
        }
    }

    /// The required "ops": an RFC 6902 patch document.
    func operations() throws(EventDecodingError) -> [JSONPatchOperation] {
        guard let member = members["ops"] else {
            throw invalid("missing \"ops\" (an array of JSON Patch operations)")
        }
        guard case .array = member else {
            throw invalid("\"ops\" must be an array of JSON Patch operations, not \(member.typeName)")
        }
        do {
            return try JSONPatch.operations(from: member)
        } catch {
            // "operation 1: "add" operation is missing "value""
            throw invalid("in \"ops\": \(error.description)")
        }
    }
}
