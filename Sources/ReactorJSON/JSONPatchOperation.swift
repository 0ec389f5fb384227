/// One RFC 6902 operation.
public enum JSONPatchOperation: Sendable, Hashable {
    case add(path: JSONPointer, value: JSON)
    case remove(path: JSONPointer)
    case replace(path: JSONPointer, value: JSON)
    case move(from: JSONPointer, path: JSONPointer)
    case copy(from: JSONPointer, path: JSONPointer)
    case test(path: JSONPointer, value: JSON)

    /// The "op" member: "add", "remove", ...
    public var name: String {
        switch self {
        case .add: return "add"
        case .remove: return "remove"
        case .replace: return "replace"
        case .move: return "move"
        case .copy: return "copy"
        case .test: return "test"
        }
    }

    /// Whether this is a `test`, which changes nothing.
    public var isTest: Bool {
        if case .test = self { return true }
        return false
    }

    /// The "path" member: the location the operation acts on.
    public var path: JSONPointer {
        switch self {
        case .add(let path, _), .remove(let path), .replace(let path, _),
             .move(_, let path), .copy(_, let path), .test(let path, _):
            return path
        }
    }
}

// MARK: - Decoding

extension JSONPatchOperation {
    /// Decodes one operation object. Members other than the ones the
    /// operation uses are ignored, as RFC 6902 section 4 requires.
    /// The error's `index` is nil; `JSONPatch.operations(from:)` fills it in.
    public init(json: JSON) throws(JSONPatchError) {
        guard case .object(let members) = json else {
            throw Self.invalid("an operation must be an object, found \(json.typeName)")
        }
        guard let opMember = members["op"] else {
            throw Self.invalid("operation is missing \"op\"")
        }
        guard case .string(let op) = opMember else {
            throw Self.invalid("\"op\" must be a string, found \(opMember.typeName)")
        }

        func pointer(_ name: String) throws(JSONPatchError) -> JSONPointer {
            guard let member = members[name] else {
                throw Self.invalid("\"\(op)\" operation is missing \"\(name)\"")
            }
            guard case .string(let text) = member else {
                throw Self.invalid("\"\(name)\" must be a string, found \(member.typeName)")
            }
            do {
                return try JSONPointer(text)
            } catch {
                throw Self.invalid("\"\(name)\" is not a valid JSON pointer: \(error.message)")
            }
        }

        func value() throws(JSONPatchError) -> JSON {
            // A present "value": null is a value; only absence is an error.
            guard let member = members["value"] else {
                throw Self.invalid("\"\(op)\" operation is missing \"value\"")
            }
            return member
        }

        switch op {
        case "add":
            self = .add(path: try pointer("path"), value: try value())
        case "remove":
            self = .remove(path: try pointer("path"))
        case "replace":
            self = .replace(path: try pointer("path"), value: try value())
        case "move":
            let from = try pointer("from")
            let path = try pointer("path")
            if from.isProperPrefix(of: path) {
                throw JSONPatchError(
                    kind: .moveIntoOwnChild,
                    reason: "cannot move \(from.debugText) into its own child \(path.debugText)")
            }
            self = .move(from: from, path: path)
        case "copy":
            self = .copy(from: try pointer("from"), path: try pointer("path"))
        case "test":
            self = .test(path: try pointer("path"), value: try value())
        default:
            throw Self.invalid("unknown op \"\(op)\"")
        }
    }

    private static func invalid(_ reason: String) -> JSONPatchError {
        JSONPatchError(kind: .invalidOperation, reason: reason)
    }
}

// MARK: - Encoding

extension JSONPatchOperation {
    /// The operation as an RFC 6902 object, members in the RFC's order.
    public var json: JSON {
        var members = JSON.Object()
        members["op"] = .string(name)
        switch self {
        case .add(let path, let value), .replace(let path, let value), .test(let path, let value):
            members["path"] = .string(path.string)
            members["value"] = value
        case .remove(let path):
            members["path"] = .string(path.string)
        case .move(let from, let path), .copy(let from, let path):
            members["from"] = .string(from.string)
            members["path"] = .string(path.string)
        }
        return .object(members)
    }
}

extension Array where Element == JSONPatchOperation {
    /// The patch document: an array of operation objects.
    public var json: JSON {
        .array(map(\.json))
    }
}

extension JSONPointer {
    /// The pointer for error messages; the root would otherwise print as
    /// nothing at all.
    var debugText: String {
        isRoot ? "\"\" (the whole document)" : string
    }
}
