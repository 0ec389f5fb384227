/// What a `DocumentEvent` changed, as the RFC 6902 operations that take the document from before
/// the event to after it: worked out from the event itself and where its path stood, so that nobody
/// has to keep the previous document and diff it against the new one.
///
/// The operations are what subscribers are sent. They are exact (applied to the document before
/// the event, they give the document after it, member order included) and as small as the event:
/// an increment is one `replace`, an append one `add` at the new index, a merge one operation per
/// member it changes, and a path created on the way one `add` of its first new ancestor. An event
/// that changes nothing (a set to the same value, an increment by 0) has none, as a diff would; one
/// that changes only a value's spelling (`1` to `1.0`, a string to a canonically equivalent one)
/// has one, or what subscribers hold would read otherwise than `GET /state`.
/// A JSON Patch event records its own operations, less its tests: they may undo one another, so
/// subscribers may get operations that, together, change nothing.
enum DocumentChanges {
    /// How much of a path existed before an edit.
    struct Presence {
        let pointer: JSONPointer
        /// How many of the pointer's tokens resolved: all of them when the target existed.
        let existingDepth: Int
        /// The length of the array where resolution stopped (for an append past its end), or of the
        /// target when it is an array.
        let arrayCount: Int?
        /// The target as it was, when asked for: kept while the edit runs, so only for an edit that
        /// replaces the target rather than changing it in place (which would then copy it).
        let target: JSON?

        init(of pointer: JSONPointer, in root: JSON, keepingTarget: Bool = false) {
            self.pointer = pointer
            var node = root
            var depth = 0
            var arrayCount: Int?
            walk: for token in pointer.tokens {
                switch node {
                case .object(let members):
                    guard let member = members[token] else { break walk }
                    node = member
                case .array(let elements):
                    guard let index = JSONPointer.arrayIndex(from: token), index < elements.count else {
                        arrayCount = elements.count
                        break walk
                    }
                    node = elements[index]
                default:
                    break walk
                }
                depth += 1
            }
            if depth == pointer.tokens.count, case .array(let elements) = node { arrayCount = elements.count }
            existingDepth = depth
            self.arrayCount = arrayCount
            target = keepingTarget && depth == pointer.tokens.count ? node : nil
        }

        var targetExisted: Bool { existingDepth == pointer.tokens.count }

        /// After an edit that put `value` at the pointer: a `replace` when the target existed (none
        /// when it held that value already), or the `add` of what was created.
        func replacement(by value: JSON, in root: JSON) -> [JSONPatchOperation] {
            guard targetExisted else { return [creation(in: root)] }
            return target?.isIdentical(to: value) == true ? [] : [.replace(path: pointer, value: value)]
        }

        /// The `add` of the first location the edit created (the target or an ancestor of it), with
        /// the value it has in `root`, the document after the edit.
        func creation(in root: JSON) -> JSONPatchOperation {
            var tokens = Array(pointer.tokens[...existingDepth])
            // "-" (or the index just past the end) in an array: the element landed at its old length.
            if let arrayCount, existingDepth == tokens.count - 1, JSONPointer.arrayIndex(from: tokens[existingDepth]) == nil {
                tokens[existingDepth] = String(arrayCount)
            }
            let location = JSONPointer(tokens: tokens)
            return .add(path: location, value: root[location] ?? .null)
        }
    }

    /// The operations of a merge of `patch` into `target`, which exists at `pointer`: one per member
    /// the patch touches (RFC 7386 semantics), recursing where both sides are objects.
    static func merge(_ patch: JSON, into target: JSON, at pointer: JSONPointer) -> [JSONPatchOperation] {
        guard case .object(let patchMembers) = patch, case .object(let members) = target else {
            let merged = JSONMergePatch.applying(patch, to: target)
            return merged.isIdentical(to: target) ? [] : [.replace(path: pointer, value: merged)]
        }
        var operations: [JSONPatchOperation] = []
        for (key, value) in patchMembers {
            let location = pointer.appending(key)
            guard let existing = members[key] else {
                if !value.isNull {
                    operations.append(.add(path: location, value: JSONMergePatch.applying(value, to: .null)))
                }
                continue
            }
            if value.isNull {
                operations.append(.remove(path: location))
            } else if case .object = value, case .object = existing {
                operations += merge(value, into: existing, at: location)
            } else {
                let merged = JSONMergePatch.applying(value, to: existing)
                if !merged.isIdentical(to: existing) { operations.append(.replace(path: location, value: merged)) }
            }
        }
        return operations
    }
}

extension JSONDocument {
    /// Applies `event` and works out its operations (see `DocumentChanges`); nil for a JSON Patch.
    mutating func applyRecordingChanges(_ event: DocumentEvent) throws(EventRejection) -> [JSONPatchOperation]? {
        switch event {
        case .set(let path, let value):
            let before = DocumentChanges.Presence(of: path, in: content, keepingTarget: true)
            try content.documentSet(value, at: path)
            return before.replacement(by: value, in: content)
        case .merge(let path, let value):
            // Worked out before the merge, from the target as it was.
            let operations = content[path].map { DocumentChanges.merge(value, into: $0, at: path) }
            let before = operations == nil ? DocumentChanges.Presence(of: path, in: content) : nil
            try content.documentMerge(value, at: path)
            return operations ?? [before!.creation(in: content)]
        case .remove(let path):
            try content.documentRemove(at: path)
            return [.remove(path: path)]
        case .increment(let path, let amount):
            // A counter nearly always exists already: then its change is one replace (none for a
            // zero step), known without walking the path first to see what is there. Only when that
            // fails (a missing target, or an error) is the walk made, and the edit tried again.
            if let (previous, sum) = path.tokens.withUnsafeBufferPointer({ content.incrementExistingNumber(at: $0, by: amount) }) {
                return previous.isIdentical(to: sum) ? [] : [.replace(path: path, value: sum)]
            }
            // The target is a number (or the edit fails): keeping it copies nothing.
            let before = DocumentChanges.Presence(of: path, in: content, keepingTarget: true)
            let sum = try content.documentIncrement(at: path, by: amount)
            return before.replacement(by: sum, in: content)
        case .append(let path, let value):
            let before = DocumentChanges.Presence(of: path, in: content)
            try content.documentAppend(value, at: path)
            if before.targetExisted, let count = before.arrayCount {
                return [.add(path: path.appending(index: count), value: value)]
            }
            return [before.creation(in: content)]
        case .patch(let operations):
            do {
                try content.apply(patch: operations)
            } catch {
                throw EventRejection(error, in: operations)
            }
            // Applied in order to the document before, they made it what it is: they replay
            // exactly, less the tests, which change nothing (and passed).
            return operations.contains(where: \.isTest) ? operations.filter { !$0.isTest } : operations
        }
    }
}
