/// The edits behind `DocumentEvent`s, made in place on a `JSON` value.
///
/// A document's containers are mutated where they are: only the containers along the edited path are
/// touched, and none is copied as long as the document is their only owner. (A server handling 100k
/// events/s cannot afford to copy a large array because a counter next to it changed.)
///
/// Every edit either succeeds or throws with the value exactly as it was, member order included:
/// all checks that can fail happen before the first change, and the objects an edit creates on its
/// way down are removed again if anything below them throws.
extension JSON {
    /// `set`: puts `value` at `pointer`; see `DocumentEvent.set`.
    mutating func documentSet(_ value: JSON, at pointer: JSONPointer) throws(EventRejection) {
        guard let last = pointer.lastToken else {
            self = value
            return
        }
        let edit = DocumentEdit(action: "set", pointer: pointer)
        try withDocumentParent(of: edit, createsObjects: true) { (parent: inout JSON) throws(EventRejection) in
            switch parent.documentContainerKind {
            case .object:
                // Replaces an existing member where it stands, so member order is kept.
                parent.withMembersInPlace { $0[last] = value }
            case .array:
                try parent.withElementsInPlace { (elements: inout [JSON]) throws(EventRejection) in
                    if last == "-" {
                        elements.append(value)
                        return
                    }
                    guard let index = JSONPointer.arrayIndex(from: last) else {
                        throw edit.notAnIndex(last, ofArrayAtDepth: edit.lastDepth)
                    }
                    if index < elements.count {
                        elements[index] = value
                    } else if index == elements.count {
                        elements.append(value)
                    } else {
                        throw edit.reject(
                            "index \(index) is out of bounds for \(edit.location(depth: edit.lastDepth)), which has \(DocumentEdit.elementCount(elements.count)); use \(elements.count) or \"-\" to append")
                    }
                }
            case .scalar:
                throw edit.scalarInTheWay(depth: edit.lastDepth, found: parent)
            }
        }
    }

    /// `merge`: applies `patch` as an RFC 7386 merge patch to the value at `pointer`.
    mutating func documentMerge(_ patch: JSON, at pointer: JSONPointer) throws(EventRejection) {
        let edit = DocumentEdit(action: "merge into", pointer: pointer)
        // A missing target is the null placeholder `withDocumentTarget` inserts, which is exactly
        // what RFC 7386 merges into.
        try withDocumentTarget(of: edit, createsMissing: true) { (target: inout JSON, _) in
            JSONMergePatch.apply(patch, to: &target)
        }
    }

    /// `remove`: removes the existing member or element at `pointer`.
    mutating func documentRemove(at pointer: JSONPointer) throws(EventRejection) {
        guard let last = pointer.lastToken else {
            throw EventRejection("cannot remove the whole document; set \"\" to replace it")
        }
        let edit = DocumentEdit(action: "remove", pointer: pointer)
        try withDocumentParent(of: edit, createsObjects: false) { (parent: inout JSON) throws(EventRejection) in
            switch parent.documentContainerKind {
            case .object:
                try parent.withMembersInPlace { (members: inout Object) throws(EventRejection) in
                    guard let index = members.index(forKey: last) else {
                        throw edit.reject("no such member")
                    }
                    members.remove(at: index)
                }
            case .array:
                try parent.withElementsInPlace { (elements: inout [JSON]) throws(EventRejection) in
                    let index = try edit.existingIndex(last, ofArrayAtDepth: edit.lastDepth, count: elements.count)
                    elements.remove(at: index)
                }
            case .scalar:
                throw edit.scalarInTheWay(depth: edit.lastDepth, found: parent)
            }
        }
    }

    /// `increment`: adds `amount` to the number at `pointer` (a missing one counts as 0, and is
    /// created). Returns the number after.
    mutating func documentIncrement(at pointer: JSONPointer, by amount: DocumentEvent.Amount) throws(EventRejection) -> JSON {
        let edit = DocumentEdit(action: "increment", pointer: pointer)
        // Checked before anything is created: a missing target becomes the amount itself.
        if case .number(let value) = amount, !value.isFinite {
            throw edit.reject("the amount \(value) is not a finite number")
        }
        return try withDocumentTarget(of: edit, createsMissing: true) { (target: inout JSON, existed: Bool) throws(EventRejection) -> JSON in
            guard existed else {
                target = amount.json
                return target
            }
            guard let sum = amount.added(to: target) else {
                throw edit.reject(amount.whyNotAdded(to: target))
            }
            target = sum
            return sum
        }
    }

    /// The common `increment`: a number that exists, reached through objects by `tokens` from
    /// `depth` on. Adds `amount` to it in place and returns the number before and after; nil, with
    /// nothing changed, for anything else, which `documentIncrement` then does or refuses (saying
    /// why). This runs for nearly every event of a counter, so it makes no edit record, captures
    /// none in closures, and reads the tokens through a buffer (slicing the array would retain it
    /// at each step).
    mutating func incrementExistingNumber(at tokens: UnsafeBufferPointer<String>, depth: Int = 0, by amount: DocumentEvent.Amount) -> (previous: JSON, sum: JSON)? {
        guard depth < tokens.count else {
            guard let sum = amount.added(to: self) else { return nil }
            let previous = self
            self = sum
            return (previous, sum)
        }
        guard case .object = documentContainerKind else { return nil }
        return withMembersInPlace { members in
            guard let index = members.index(forKey: tokens[depth]) else { return nil }
            return members.values[index].incrementExistingNumber(at: tokens, depth: depth + 1, by: amount)
        }
    }

    /// `append`: appends `value` to the array at `pointer` (a missing one is created as `[value]`).
    mutating func documentAppend(_ value: JSON, at pointer: JSONPointer) throws(EventRejection) {
        let edit = DocumentEdit(action: "append to", pointer: pointer)
        try withDocumentTarget(of: edit, createsMissing: true) { (target: inout JSON, existed: Bool) throws(EventRejection) in
            guard existed else {
                target = .array([value])
                return
            }
            guard case .array = target.documentContainerKind else {
                throw edit.reject("it is \(target.typeNameWithArticle), not an array")
            }
            target.withElementsInPlace { $0.append(value) }
        }
    }
}

// MARK: - Walking a path in place

extension JSON {
    /// Runs `body` in place on the container that holds the last token of `edit.pointer` (which must
    /// not be the root). With `createsObjects`, a missing object member on the way is created as `{}`
    /// and removed again if `body` throws. Arrays on the way must have the indexed element.
    /// Not inlined: inlined into an edit, its recursion unrolled a few levels deep, and the
    /// closure's captures (the value, the pointer) were copied at every level, a dozen retains and
    /// releases of each per `set`.
    @inline(never)
    mutating func withDocumentParent<Result>(
        of edit: DocumentEdit, createsObjects: Bool, depth: Int = 0,
        _ body: (inout JSON) throws(EventRejection) -> Result
    ) throws(EventRejection) -> Result {
        if depth == edit.lastDepth {
            return try body(&self)
        }
        let token = edit.pointer.tokens[depth]
        switch documentContainerKind {
        case .object:
            return try withMembersInPlace { (members: inout Object) throws(EventRejection) -> Result in
                if let index = members.index(forKey: token) {
                    return try members.values[index].withDocumentParent(
                        of: edit, createsObjects: createsObjects, depth: depth + 1, body)
                }
                guard createsObjects else {
                    throw edit.reject("\(edit.location(depth: depth + 1)) does not exist")
                }
                members[token] = .object([:])
                let created = members.count - 1
                do throws(EventRejection) {
                    return try members.values[created].withDocumentParent(
                        of: edit, createsObjects: createsObjects, depth: depth + 1, body)
                } catch {
                    // Nothing below a new, empty object can fail today; undoing the creation keeps
                    // atomicity from resting on that.
                    members.removeLast()
                    throw error
                }
            }
        case .array:
            return try withElementsInPlace { (elements: inout [JSON]) throws(EventRejection) -> Result in
                let index = try edit.existingIndex(token, ofArrayAtDepth: depth, count: elements.count)
                return try elements[index].withDocumentParent(
                    of: edit, createsObjects: createsObjects, depth: depth + 1, body)
            }
        case .scalar:
            throw edit.scalarInTheWay(depth: depth, found: self)
        }
    }

    /// Runs `body` in place on the value at `edit.pointer`, telling it whether the value existed.
    /// With `createsMissing`, a missing object member (and its missing intermediate objects) is
    /// created as a null placeholder for `body` to fill, and removed again if `body` throws. Array
    /// elements are never created: the target in an array must exist.
    mutating func withDocumentTarget<Result>(
        of edit: DocumentEdit, createsMissing: Bool,
        _ body: (inout JSON, _ existed: Bool) throws(EventRejection) -> Result
    ) throws(EventRejection) -> Result {
        guard let last = edit.pointer.lastToken else {
            return try body(&self, true)
        }
        return try withDocumentParent(of: edit, createsObjects: createsMissing) { (parent: inout JSON) throws(EventRejection) -> Result in
            switch parent.documentContainerKind {
            case .object:
                return try parent.withMembersInPlace { (members: inout Object) throws(EventRejection) -> Result in
                    if let index = members.index(forKey: last) {
                        return try body(&members.values[index], true)
                    }
                    guard createsMissing else {
                        throw edit.reject("no such member")
                    }
                    members[last] = .null
                    let created = members.count - 1
                    do throws(EventRejection) {
                        return try body(&members.values[created], false)
                    } catch {
                        members.removeLast()
                        throw error
                    }
                }
            case .array:
                return try parent.withElementsInPlace { (elements: inout [JSON]) throws(EventRejection) -> Result in
                    let index = try edit.existingIndex(last, ofArrayAtDepth: edit.lastDepth, count: elements.count)
                    return try body(&elements[index], true)
                }
            case .scalar:
                throw edit.scalarInTheWay(depth: edit.lastDepth, found: parent)
            }
        }
    }

    // Containers are changed through `withMembersInPlace` and `withElementsInPlace`, the technique
    // of JSONPatch.swift: the payload is moved out of `self` (`consume self`: not copied and
    // released) before anything else happens, so it is uniquely referenced and changes happen in
    // place, and it is put back on every exit. Calling these from inside `switch self`, whose
    // subject stays retained for the whole case body, would silently turn each change into a full
    // copy: `documentContainerKind` is switched on instead.

    enum DocumentContainerKind {
        case object, array, scalar
    }

    var documentContainerKind: DocumentContainerKind {
        switch self {
        case .object: return .object
        case .array: return .array
        default: return .scalar
        }
    }

    /// Runs `body` on the members of an object in place. `self` must be an object.
    mutating func withMembersInPlace<Result, Failure: Error>(
        _ body: (inout Object) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard case .object(var members) = consume self else {
            preconditionFailure("withMembersInPlace called on a value that is not an object")
        }
        defer { self = .object(members) }
        return try body(&members)
    }

    /// Runs `body` on the elements of an array in place. `self` must be an array.
    mutating func withElementsInPlace<Result, Failure: Error>(
        _ body: (inout [JSON]) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard case .array(var elements) = consume self else {
            preconditionFailure("withElementsInPlace called on a value that is not an array")
        }
        defer { self = .array(elements) }
        return try body(&elements)
    }

    /// "a number", "an object", "null": for "it is a string, not a number".
    var typeNameWithArticle: String {
        switch self {
        case .null: return "null"
        case .integer, .number, .bool, .string: return "a \(typeName)"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
