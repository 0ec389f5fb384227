extension JSONPatch {
    /// A patch that turns `source` into `target`:
    /// `JSONPatch.applying(diff(from: a, to: b), to: a) == b` always holds, and the result is
    /// identical to `b` (`JSON.isIdentical(to:)`) but for the order of members.
    ///
    /// Objects are compared member by member, so a change deep inside a
    /// large state costs one small operation. Arrays are aligned by trimming
    /// their common prefix and suffix; the differing middle is diffed
    /// element by element, then grown with "add" or shrunk with "remove".
    /// This is not a minimal edit script (a reordering becomes a series of
    /// replacements) but it is linear and correct. Member order is not
    /// diffed, since `JSON` equality ignores it; spelling is: a number that
    /// becomes an equal one of the other kind, or a string (or member name) a
    /// canonically equivalent one, is replaced.
    public static func diff(from source: JSON, to target: JSON) -> [JSONPatchOperation] {
        var builder = JSONDiffBuilder()
        builder.diff(source, target)
        return builder.operations
    }
}

private struct JSONDiffBuilder {
    var operations: [JSONPatchOperation] = []
    /// Tokens of the location being compared; pushed and popped while
    /// recursing so pointers are built only when an operation is emitted.
    var path: [String] = []

    var pointer: JSONPointer { JSONPointer(tokens: path) }

    func pointer(appending token: String) -> JSONPointer {
        JSONPointer(tokens: path + [token])
    }

    mutating func diff(_ source: JSON, _ target: JSON) {
        // Successive states share what did not change: such subtrees are skipped without a look
        // inside, so diffing a large state after a small event costs about the event's path.
        switch (source, target) {
        case let (.object(old), .object(new)):
            if old.sharesStorage(with: new) { return }
            diffObjects(old, new, whole: target)
        case let (.array(old), .array(new)):
            if old.count == new.count, old.withUnsafeBufferPointer({ $0.baseAddress }) == new.withUnsafeBufferPointer({ $0.baseAddress }) { return }
            diffArrays(old, new)
        default:
            if !source.isIdentical(to: target) {
                operations.append(.replace(path: pointer, value: target))
            }
        }
    }

    mutating func diffObjects(_ old: JSON.Object, _ new: JSON.Object, whole target: JSON) {
        // The same keys in the same order (the key storage is shared: only values changed, as after
        // an event that set or incremented a member): compare the values pairwise by position, each
        // with a glance (storage identity, or a scalar compare), instead of looking every key up.
        if old.keys.sharesStorage(with: new.keys) {
            let keys = new.keys.elements
            for index in keys.indices where !Self.isUnchanged(old.values[index], new.values[index]) {
                path.append(keys[index])
                diff(old.values[index], new.values[index])
                path.removeLast()
            }
            return
        }
        // With no key in common, per-member operations would only be a
        // longer spelling of one replacement.
        if !old.isEmpty, !new.isEmpty, !old.keys.contains(where: { new[$0] != nil }) {
            operations.append(.replace(path: pointer, value: target))
            return
        }
        // A name spelled otherwise on each side (the dictionaries take canonically equivalent names
        // for one) is another member to JSON: removed and added.
        for key in old.keys where !Self.holds(new, key) {
            operations.append(.remove(path: pointer(appending: key)))
        }
        for (key, value) in new {
            if let index = old.index(forKey: key), old.keys[index].hasSameScalars(as: key) {
                path.append(key)
                diff(old.values[index], value)
                path.removeLast()
            } else {
                operations.append(.add(path: pointer(appending: key), value: value))
            }
        }
    }

    /// Whether `members` has a member named `key`, spelled as it is.
    static func holds(_ members: JSON.Object, _ key: String) -> Bool {
        members.index(forKey: key).map { members.keys[$0].hasSameScalars(as: key) } ?? false
    }

    /// Whether two values are the same without looking inside them: the same storage for
    /// containers, identical scalars. False means "maybe changed", never "changed".
    static func isUnchanged(_ source: JSON, _ target: JSON) -> Bool {
        switch (source, target) {
        case let (.object(old), .object(new)): old.sharesStorage(with: new)
        case let (.array(old), .array(new)):
            old.count == new.count && old.withUnsafeBufferPointer({ $0.baseAddress }) == new.withUnsafeBufferPointer({ $0.baseAddress })
        case (.object, _), (_, .object), (.array, _), (_, .array): false
        default: source.isIdentical(to: target)
        }
    }

    mutating func diffArrays(_ old: [JSON], _ new: [JSON]) {
        var prefix = 0
        let shorter = min(old.count, new.count)
        while prefix < shorter, old[prefix].isIdentical(to: new[prefix]) {
            prefix += 1
        }
        var suffix = 0
        while suffix < shorter - prefix, old[old.count - 1 - suffix].isIdentical(to: new[new.count - 1 - suffix]) {
            suffix += 1
        }
        let oldMiddle = old.count - prefix - suffix
        let newMiddle = new.count - prefix - suffix
        let paired = min(oldMiddle, newMiddle)

        for offset in 0..<paired {
            let index = prefix + offset
            path.append(String(index))
            diff(old[index], new[index])
            path.removeLast()
        }
        if oldMiddle > newMiddle {
            // Highest index first, so each removal leaves the indices of the
            // ones still to come unchanged.
            for index in stride(from: prefix + oldMiddle - 1, through: prefix + newMiddle, by: -1) {
                operations.append(.remove(path: pointer(appending: String(index))))
            }
        } else {
            for index in (prefix + oldMiddle)..<(prefix + newMiddle) {
                operations.append(.add(path: pointer(appending: String(index)), value: new[index]))
            }
        }
    }
}
