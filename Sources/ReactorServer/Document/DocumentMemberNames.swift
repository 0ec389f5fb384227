import Reactor

/// Member names that are one to the document and two to JSON. An object is keyed by Swift strings,
/// which take canonically equivalent names (`"\u00e9"` and `"e\u0301"`) for one; JSON, and every
/// subscriber applying a change, compares names scalar by scalar. An event that names a member in
/// another spelling than the one it has would edit it, and be sent to subscribers under a name they
/// do not hold (or, as an `add`, give them a second member): a client's event doing so is refused.
/// Checked when an event is admitted, on the state it is about to be applied to, never when a
/// journal or a cluster's log is applied again: what an older server admitted still replays.
extension JSONDocument {
    /// Why `event` may not name what it names: nil when every name it gives an existing member is
    /// spelled as that member's.
    func memberNameProblem(of event: DocumentEvent, bodyLimit: Int) -> EventRejection? {
        switch event {
        case .set(let path, _), .remove(let path), .increment(let path, _), .append(let path, _):
            guard path.tokens.contains(where: Self.mayHaveAnotherSpelling) else { return nil }
            return Self.problem(at: path, in: root, doing: event.eventType)
        case .merge(let path, let value):
            guard path.tokens.contains(where: Self.mayHaveAnotherSpelling) || Self.namesMayHaveAnotherSpelling(in: value) else { return nil }
            if let problem = Self.problem(at: path, in: root, doing: "merge") { return problem }
            guard let target = root[path] else { return nil }
            return Self.mergeProblem(value, into: target, at: path)
        case .patch(let operations):
            guard operations.contains(where: { Self.pointers(of: $0).contains { $0.tokens.contains(where: Self.mayHaveAnotherSpelling) } }) else {
                return nil
            }
            // Each operation on the document the ones before it made, so that a member one of them
            // creates is seen by the next, on a copy (only patches with such names pay for it).
            var trial = root
            for (index, operation) in operations.enumerated() {
                for pointer in Self.pointers(of: operation) where pointer.tokens.contains(where: Self.mayHaveAnotherSpelling) {
                    if let problem = Self.problem(at: pointer, in: trial, doing: "patch (operation \(index), \(operation.name))") { return problem }
                }
                // One that fails refuses the patch when it is applied, saying why.
                guard (try? JSONPatch.apply([operation], to: &trial, copyLimit: bodyLimit)) != nil else { return nil }
            }
            return nil
        }
    }

    /// The pointers an operation names: its path, and where it moves or copies from.
    private static func pointers(of operation: JSONPatchOperation) -> [JSONPointer] {
        switch operation {
        case .move(let from, let path), .copy(let from, let path): [from, path]
        default: [operation.path]
        }
    }

    /// Whether a member could be spelled otherwise than `name` and be the same key. An ASCII name is
    /// its own only spelling but for three letters, each of which one other character decomposes
    /// to (Kelvin sign, Greek question mark, Greek varia): names without those, the usual ones, need
    /// no lookup, so that the common event pays a scan of its path's bytes and nothing more.
    private static func mayHaveAnotherSpelling(_ name: String) -> Bool {
        name.utf8.contains { $0 >= 0x80 || $0 == UInt8(ascii: "K") || $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: "`") }
    }

    private static func namesMayHaveAnotherSpelling(in value: JSON) -> Bool {
        guard case .object(let members) = value else { return false }
        return members.contains { mayHaveAnotherSpelling($0.key) || namesMayHaveAnotherSpelling(in: $0.value) }
    }

    /// The problem with the first token of `pointer` that names an existing member of `document`
    /// in another spelling.
    private static func problem(at pointer: JSONPointer, in document: JSON, doing action: String) -> EventRejection? {
        var node = document
        for (depth, token) in pointer.tokens.enumerated() {
            switch node {
            case .object(let members):
                guard let index = members.index(forKey: token) else { return nil }
                guard JSON.isSameName(members.keys[index], token) else {
                    return spelledOtherwise(token, stored: members.keys[index], in: JSONPointer(tokens: Array(pointer.tokens[..<depth])),
                                            action: "\(action) \(pointer.string)")
                }
                node = members.values[index]
            case .array(let elements):
                guard let index = JSONPointer.arrayIndex(from: token), index < elements.count else { return nil }
                node = elements[index]
            default:
                return nil
            }
        }
        return nil
    }

    /// The problem with the first member of a merge patch that names a member of the target in
    /// another spelling, where both are objects (RFC 7386 recurses there).
    private static func mergeProblem(_ patch: JSON, into target: JSON, at pointer: JSONPointer) -> EventRejection? {
        guard case .object(let patchMembers) = patch, case .object(let members) = target else { return nil }
        for (key, value) in patchMembers {
            guard let index = members.index(forKey: key) else { continue }
            guard JSON.isSameName(members.keys[index], key) else {
                return spelledOtherwise(key, stored: members.keys[index], in: pointer, action: "merge into \(pointer.appending(key).string)")
            }
            if let problem = mergeProblem(value, into: members.values[index], at: pointer.appending(key)) { return problem }
        }
        return nil
    }

    private static func spelledOtherwise(_ name: String, stored: String, in object: JSONPointer, action: String) -> EventRejection {
        EventRejection("cannot \(action): \(object.isRoot ? "the document" : object.string) holds the member \(JSON.string(stored).jsonString), "
                       + "of which \(JSON.string(name).jsonString) is another spelling (canonically equivalent, but another name to JSON); "
                       + "name it as it is spelled there")
    }
}
