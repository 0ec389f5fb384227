import Reactor

extension JSONDocument {
    /// Single events are read member by member (see `DocumentEventReader`); anything it does not
    /// take goes to `eventRegistry`.
    public static func decodeEvent(fromBody body: UnsafeRawBufferPointer) -> (any Event)? {
        DocumentEventReader.event(in: body)
    }
}

/// Reads one `DocumentEvent` straight from its wire bytes: the members are matched as bytes while
/// the object is read, with no ordered dictionary built and none looked up again.
///
/// This is the fast path of `POST /events`, not a second definition of the wire form: it takes only
/// what is plainly a valid event (a well-formed object with each allowed member once, of the right
/// JSON type) and returns nil for everything else — a batch, a repeated or unknown member, a bad
/// pointer, malformed JSON — which the registry then decodes, or refuses with its own message. For
/// what it does take, it must build exactly the event the registry builds (a test holds it to that).
enum DocumentEventReader {
    static func event(in body: UnsafeRawBufferPointer) -> DocumentEvent? {
        var members = Members()
        guard let reading = try? JSONParser.carrier.forEachMember(in: body, { key, value in members.take(key, value) }),
              reading == .finished, let kind = members.kind else { return nil }
        return members.takeEvent(of: kind)
    }

    private enum Kind {
        case set, merge, remove, increment, append, patch

        /// The kind a `"type"` names; nil for any other name, or a value that is not a string.
        init?(_ member: JSONMemberValue) {
            // An escaped spelling of a known name ("s\u0065t") is left to the registry.
            guard case .unescapedString(let name) = member else { return nil }
            if matches(name, "increment") { self = .increment }
            else if matches(name, "set") { self = .set }
            else if matches(name, "merge") { self = .merge }
            else if matches(name, "remove") { self = .remove }
            else if matches(name, "append") { self = .append }
            else if matches(name, "patch") { self = .patch }
            else { return nil }
        }
    }

    private struct Members {
        var kind: Kind?
        /// The `"path"`, parsed as soon as it is read (its bytes do not outlive the call).
        var pointer: JSONPointer?
        var value: JSON?
        var by: JSON?
        var ops: JSON?

        /// Keeps a member; false (stop, leave it to the registry) for an unknown, repeated or
        /// invalid one.
        mutating func take(_ key: UnsafeRawBufferPointer, _ member: JSONMemberValue) -> Bool {
            if matches(key, "type") {
                guard kind == nil, let named = Kind(member) else { return false }
                kind = named
                return true
            }
            if matches(key, "path") {
                guard pointer == nil else { return false }
                switch member {
                case .unescapedString(let text): pointer = RecentPointers.pointer(text)
                case .parsed(.string(let text)): pointer = RecentPointers.pointer(text)
                case .parsed: return false
                }
                return pointer != nil
            }
            if matches(key, "value") { return Self.keep(member.json, in: &value) }
            if matches(key, "by") { return Self.keep(member.json, in: &by) }
            if matches(key, "ops") { return Self.keep(member.json, in: &ops) }
            return false
        }

        /// Keeps a member seen for the first time; false for a repeated one.
        private static func keep(_ member: JSON, in slot: inout JSON?) -> Bool {
            guard slot == nil else { return false }
            slot = member
            return true
        }

        /// The event of `kind` when the members are exactly the ones it takes, each valid. The path
        /// and value move into the event (taken, not copied: no retain, and none released here after).
        mutating func takeEvent(of kind: Kind) -> DocumentEvent? {
            switch kind {
            case .set, .merge, .append:
                guard by == nil, ops == nil, let value = value.take(), let pointer = pointer.take() else { return nil }
                switch kind {
                case .set: return .set(path: pointer, value: value)
                case .merge: return .merge(path: pointer, value: value)
                default: return .append(path: pointer, value: value)
                }
            case .remove:
                guard value == nil, by == nil, ops == nil, let pointer = pointer.take() else { return nil }
                return .remove(path: pointer)
            case .increment:
                guard value == nil, ops == nil, let pointer = pointer.take() else { return nil }
                switch by {
                case nil: return .increment(path: pointer, by: 1)
                case .integer(let amount)?: return .increment(path: pointer, by: .integer(amount))
                case .number(let amount)?: return .increment(path: pointer, by: .number(amount))
                default: return nil
                }
            case .patch:
                guard pointer == nil, value == nil, by == nil, let ops, case .array = ops,
                      let operations = try? JSONPatch.operations(from: ops) else { return nil }
                return .patch(operations)
            }
        }
    }
}

/// Inlined: each call then compares against a known length, and most keys fail on that alone.
@inline(__always)
private func matches(_ key: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
    RawBytes.equal(key, name)
}
