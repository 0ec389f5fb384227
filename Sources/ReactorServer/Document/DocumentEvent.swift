import Reactor

/// A change to a `JSONDocument`, addressed by an RFC 6901 JSON Pointer ("" is the whole document).
///
/// Every event either applies completely or is rejected with the document left exactly as it was.
/// On the wire an event is `{"type": "set", "path": "/a/b", "value": 1}`; see
/// `JSONDocument.eventRegistry` for each type's members.
///
/// The cases that carry a JSON value are `indirect`: the others then fit in an existential's inline
/// buffer, so that firing an increment or a remove as `any Event` allocates nothing.
public enum DocumentEvent: NamedEvent, Equatable {
    /// Puts `value` at `path`, replacing what is there. Missing intermediate objects are created
    /// (like `mkdir -p`); arrays are not. In an array, the last token may be an existing index
    /// (replace), or the array's length or "-" (append). `""` replaces the whole document.
    indirect case set(path: JSONPointer, value: JSON)

    /// Applies `value` as an RFC 7386 merge patch to the value at `path`. A missing value counts as
    /// null and is created, with its intermediate objects. Literally RFC 7386: a non-object `value`
    /// (null included) replaces the target rather than deleting it; to delete, merge `{"name": null}`
    /// into the parent, or `remove`.
    indirect case merge(path: JSONPointer, value: JSON)

    /// Removes the member or element at `path`, which must exist. The whole document cannot be removed.
    case remove(path: JSONPointer)

    /// Adds `by` to the number at `path`. A missing target counts as 0 and is created, with its
    /// intermediate objects. Integer plus integer stays an integer (overflow is rejected); any other
    /// combination is done in `Double` and must give a finite result.
    case increment(path: JSONPointer, by: Amount = 1)

    /// Appends `value` to the array at `path`; a missing target is created as `[value]`.
    indirect case append(path: JSONPointer, value: JSON)

    /// Applies an RFC 6902 JSON Patch, atomically. A failed `test` operation is a conflict.
    case patch([JSONPatchOperation])

    /// The amount of an `increment`: an exact integer or a double, as JSON numbers are.
    public enum Amount: Sendable, Hashable, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
        case integer(Int64)
        case number(Double)

        public init(integerLiteral value: Int64) { self = .integer(value) }
        public init(floatLiteral value: Double) { self = .number(value) }

        /// The amount as the JSON number it was decoded from.
        public var json: JSON {
            switch self {
            case .integer(let value): return .integer(value)
            case .number(let value): return .number(value)
            }
        }

        /// `current` plus the amount: an integer while both are and the sum fits 64 bits, otherwise
        /// a double; nil when `current` is not a number, or the sum overflows or is not finite.
        func added(to current: JSON) -> JSON? {
            switch (current, self) {
            case let (.integer(value), .integer(step)):
                let (sum, overflow) = value.addingReportingOverflow(step)
                return overflow ? nil : .integer(sum)
            case (.integer, _), (.number, _):
                let sum = current.doubleValue! + json.doubleValue!
                return sum.isFinite ? .number(sum) : nil
            default:
                return nil
            }
        }

        /// Why `added(to:)` gave nil for `current`, for the rejection.
        func whyNotAdded(to current: JSON) -> String {
            switch (current, self) {
            case let (.integer(value), .integer(step)):
                return "\(value) + \(step) overflows a 64-bit integer"
            case (.integer, _), (.number, _):
                return "\(current.jsonString) + \(json.jsonString) is not a finite number"
            default:
                return "it is \(current.typeNameWithArticle), not a number"
            }
        }
    }

    /// The event's `"type"` on the wire, which the server logs and authorizes by.
    public var eventType: String {
        switch self {
        case .set: return "set"
        case .merge: return "merge"
        case .remove: return "remove"
        case .increment: return "increment"
        case .append: return "append"
        case .patch: return "patch"
        }
    }
}
