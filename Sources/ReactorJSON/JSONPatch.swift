/// RFC 6902 JSON Patch: decoding a patch document and applying it.
public enum JSONPatch {
    /// Decodes a patch document (an array of operation objects).
    public static func operations(from json: JSON) throws(JSONPatchError) -> [JSONPatchOperation] {
        guard case .array(let elements) = json else {
            throw JSONPatchError(
                kind: .invalidOperation,
                reason: "a JSON Patch must be an array of operations, found \(json.typeName)")
        }
        var operations: [JSONPatchOperation] = []
        operations.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            do {
                operations.append(try JSONPatchOperation(json: element))
            } catch {
                throw error.at(index)
            }
        }
        return operations
    }

    /// Applies the operations in order. Atomic: if any operation fails,
    /// `document` is left exactly as it was (byte for byte, member order
    /// included) and the error names that operation's index.
    ///
    /// Changes are made in place, touching only the containers along each
    /// operation's path. Atomicity comes from an undo log rather than from
    /// working on a copy: a copy would share storage with `document`, so the
    /// first change to each container would duplicate it, which for a state
    /// holding a large array or object costs a full copy per request.
    ///
    /// `copyLimit` bounds the JSON text (`JSON.encodedSize(upTo:)`) the patch's `copy` operations
    /// may add in all: a copy shares its value's storage, so a few operations that copy what the
    /// ones before them copied would otherwise make a document far larger than the patch.
    public static func apply(_ operations: [JSONPatchOperation], to document: inout JSON, copyLimit: Int = .max) throws(JSONPatchError) {
        var copyAllowance = copyLimit
        var undoLog: [JSONPatchUndo] = []
        for (index, operation) in operations.enumerated() {
            do {
                // Every operation except "move" fails before it changes
                // anything, so the last one's changes never need undoing
                // (the move case logs its removal regardless). This spares
                // one-operation patches the log allocation.
                let logs = index < operations.count - 1
                try apply(operation, to: &document, undoLog: &undoLog, logs: logs, copyAllowance: &copyAllowance, copyLimit: copyLimit)
            } catch {
                for step in undoLog.reversed() {
                    document.undo(step)
                }
                throw error.at(index)
            }
        }
    }

    /// The result of applying the operations to `document`.
    public static func applying(_ operations: [JSONPatchOperation], to document: JSON) throws(JSONPatchError) -> JSON {
        var result = document
        try apply(operations, to: &result)
        return result
    }

    /// Applies one operation, appending how to take back each change it
    /// made to `undoLog` as soon as the change is made.
    private static func apply(
        _ operation: JSONPatchOperation, to document: inout JSON,
        undoLog: inout [JSONPatchUndo], logs: Bool, copyAllowance: inout Int, copyLimit: Int
    ) throws(JSONPatchError) {
        func log(_ step: JSONPatchUndo) {
            if logs { undoLog.append(step) }
        }
        switch operation {
        case .add(let path, let value):
            try checkDepth(of: value, at: path)
            log(try document.patchAdd(value, at: path))
        case .remove(let path):
            log(try document.patchRemove(at: path, role: "path").undo)
        case .replace(let path, let value):
            try checkDepth(of: value, at: path)
            log(try document.patchReplace(at: path, with: value))
        case .move(let from, let path):
            if from.isProperPrefix(of: path) {
                throw JSONPatchError(
                    kind: .moveIntoOwnChild,
                    reason: "cannot move \(from.debugText) into its own child \(path.debugText)")
            }
            if from == path {
                // A no-op, but the location must still exist.
                _ = try document.patchValue(at: from, role: "from")
                return
            }
            let (value, undoRemove) = try document.patchRemove(at: from, role: "from")
            // Logged even for the last operation: the add may still fail.
            undoLog.append(undoRemove)
            try checkDepth(of: value, movedFrom: from, to: path)
            log(try document.patchAdd(value, at: path))
        case .copy(let from, let path):
            let value = try document.patchValue(at: from, role: "from")
            if copyAllowance < .max {
                // Before the depth check, which walks the value as often as its parts are shared.
                let size = value.encodedSize(upTo: copyAllowance)
                guard size <= copyAllowance else {
                    throw JSONPatchError(
                        kind: .copiesTooMuch,
                        reason: "copying \(from.debugText) would take what the patch copies past \(copyLimit) bytes of JSON, the most it may copy")
                }
                copyAllowance -= size
            }
            try checkDepth(of: value, movedFrom: from, to: path)
            log(try document.patchAdd(value, at: path))
        case .test(let path, let expected):
            let actual = try document.patchValue(at: path, role: "path")
            guard actual == expected else {
                throw JSONPatchError(
                    kind: .testFailed,
                    reason: "test failed at \(path.debugText): expected \(expected.abbreviatedJSON), found \(actual.abbreviatedJSON)")
            }
        }
    }
}

extension JSONPatch {
    /// Refuses to put `value` at `path` when the document would then nest deeper than
    /// `JSON.maximumDepth`: what cannot be parsed back must not be made.
    private static func checkDepth(of value: JSON, at path: JSONPointer) throws(JSONPatchError) {
        let room = JSON.maximumDepth - path.tokens.count
        guard room < 0 || value.nestingDepth(upTo: room) > room else { return }
        throw JSONPatchError(
            kind: .tooDeep,
            reason: "the document would nest more than \(JSON.maximumDepth) levels deep, the most it may: \(path.tokens.count) levels of path and a value nesting \(value.nestingDepth(upTo: JSON.maximumDepth)) more")
    }

    /// `checkDepth(of:at:)` for a value taken from `from`: one that goes no deeper than it was
    /// leaves the document as deep as it was, and is not walked.
    private static func checkDepth(of value: JSON, movedFrom from: JSONPointer, to path: JSONPointer) throws(JSONPatchError) {
        if path.tokens.count > from.tokens.count { try checkDepth(of: value, at: path) }
    }
}

extension JSON {
    /// Applies a JSON Patch in place; atomic like `JSONPatch.apply`.
    public mutating func apply(patch operations: [JSONPatchOperation]) throws(JSONPatchError) {
        try JSONPatch.apply(operations, to: &self)
    }
}

/// How to take back one change made by a patch operation. Each case
/// restores the exact previous state, including member positions, so a
/// rolled-back document serializes to the same bytes as before.
private enum JSONPatchUndo {
    /// Put the old value back at an existing location (after a replace, an
    /// add over an existing member, or an add at the root).
    case restore(JSONPointer, JSON)
    /// Remove the member or element an add inserted.
    case removeInserted(JSONPointer)
    /// Put a removed member back at its old position in its object.
    case reinsertMember(object: JSONPointer, key: String, value: JSON, position: Int)
    /// Put a removed array element back; the pointer ends in its index.
    case reinsertElement(JSONPointer, JSON)
}

extension JSONPatchError {
    fileprivate func at(_ index: Int) -> JSONPatchError {
        var copy = self
        copy.index = index
        return copy
    }
}

// MARK: - Location handling

extension JSON {
    /// The value at `pointer`, with an error saying which step failed.
    fileprivate func patchValue(at pointer: JSONPointer, role: String) throws(JSONPatchError) -> JSON {
        var current = self
        for depth in pointer.tokens.indices {
            current = try current.child(pointer, depth: depth, role: role)
        }
        return current
    }

    /// The child designated by `pointer.tokens[depth]`.
    private func child(_ pointer: JSONPointer, depth: Int, role: String) throws(JSONPatchError) -> JSON {
        let token = pointer.tokens[depth]
        switch self {
        case .object(let members):
            guard let member = members[token] else {
                throw missing(pointer, role: role)
            }
            return member
        case .array(let elements):
            let index = try existingIndex(token, count: elements.count, pointer: pointer, role: role)
            return elements[index]
        default:
            throw scalarInTheWay(pointer, depth: depth, role: role, found: self)
        }
    }

    /// Runs `body` in place on the value designated by the first `end` tokens
    /// of `pointer`.
    private mutating func modify<Result>(
        _ pointer: JSONPointer, depth: Int, end: Int, role: String,
        _ body: (inout JSON) throws(JSONPatchError) -> Result
    ) throws(JSONPatchError) -> Result {
        if depth == end {
            return try body(&self)
        }
        let token = pointer.tokens[depth]
        switch containerKind {
        case .object:
            return try withMembers { (members: inout Object) throws(JSONPatchError) -> Result in
                guard let index = members.index(forKey: token) else {
                    throw missing(pointer, role: role)
                }
                return try members.values[index].modify(pointer, depth: depth + 1, end: end, role: role, body)
            }
        case .array:
            return try withElements { (elements: inout [JSON]) throws(JSONPatchError) -> Result in
                let index = try existingIndex(token, count: elements.count, pointer: pointer, role: role)
                return try elements[index].modify(pointer, depth: depth + 1, end: end, role: role, body)
            }
        case .scalar:
            throw scalarInTheWay(pointer, depth: depth, role: role, found: self)
        }
    }

    // Containers are mutated through `withMembers` and `withElements` so
    // that the payload is uniquely referenced: it is moved out of `self`
    // (`consume self`: not copied and released, and the compiler sees that
    // `self` is put back on every exit) before anything else happens. One
    // pattern defeats this and silently turns every change into a full copy
    // of the container, so it is avoided here: calling these from inside
    // `switch self`, whose subject stays retained for the whole case body.
    // `containerKind` is switched on instead.

    private enum ContainerKind {
        case object, array, scalar
    }

    private var containerKind: ContainerKind {
        switch self {
        case .object: return .object
        case .array: return .array
        default: return .scalar
        }
    }

    /// Runs `body` on the members of an object in place. `self` must be an object.
    private mutating func withMembers<Result, Failure: Error>(
        _ body: (inout Object) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard case .object(var members) = consume self else {
            preconditionFailure("withMembers called on a value that is not an object")
        }
        defer { self = .object(members) }
        return try body(&members)
    }

    /// Runs `body` on the elements of an array in place. `self` must be an array.
    private mutating func withElements<Result, Failure: Error>(
        _ body: (inout [JSON]) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard case .array(var elements) = consume self else {
            preconditionFailure("withElements called on a value that is not an array")
        }
        defer { self = .array(elements) }
        return try body(&elements)
    }

    fileprivate mutating func patchAdd(_ value: JSON, at pointer: JSONPointer) throws(JSONPatchError) -> JSONPatchUndo {
        guard let last = pointer.lastToken else {
            let old = self
            self = value
            return .restore(.root, old)
        }
        let parentEnd = pointer.tokens.count - 1
        return try modify(pointer, depth: 0, end: parentEnd, role: "path") { (parent: inout JSON) throws(JSONPatchError) -> JSONPatchUndo in
            switch parent.containerKind {
            case .object:
                return parent.withMembers { (members: inout Object) -> JSONPatchUndo in
                    if let index = members.index(forKey: last) {
                        // An existing member is replaced in place, as RFC 6902 says.
                        let old = members.values[index]
                        members.values[index] = value
                        return .restore(pointer, old)
                    }
                    members[last] = value
                    return .removeInserted(pointer)
                }
            case .array:
                return try parent.withElements { (elements: inout [JSON]) throws(JSONPatchError) -> JSONPatchUndo in
                    let index: Int
                    if last == "-" {
                        index = elements.count
                    } else {
                        guard let parsed = JSONPointer.arrayIndex(from: last) else {
                            throw invalidIndexToken(last, pointer: pointer)
                        }
                        guard parsed <= elements.count else {
                            throw JSONPatchError(
                                kind: .invalidArrayIndex,
                                reason: "cannot add at \(pointer.debugText): index \(parsed) is out of bounds for an array of \(elements.count) elements")
                        }
                        index = parsed
                    }
                    elements.insert(value, at: index)
                    // "-" is resolved to the index used, so the undo does
                    // not depend on later appends.
                    return .removeInserted(JSONPointer(tokens: pointer.tokens.dropLast() + [String(index)]))
                }
            case .scalar:
                throw JSONPatchError(
                    kind: .pathNotFound,
                    reason: "cannot add at \(pointer.debugText): \(pointer.parent?.debugText ?? "") is \(parent.typeName.withArticle), not an object or array")
            }
        }
    }

    fileprivate mutating func patchRemove(
        at pointer: JSONPointer, role: String
    ) throws(JSONPatchError) -> (removed: JSON, undo: JSONPatchUndo) {
        guard let last = pointer.lastToken else {
            throw JSONPatchError(kind: .cannotRemoveRoot, reason: "cannot remove the whole document")
        }
        let parentEnd = pointer.tokens.count - 1
        return try modify(pointer, depth: 0, end: parentEnd, role: role) { (parent: inout JSON) throws(JSONPatchError) -> (JSON, JSONPatchUndo) in
            switch parent.containerKind {
            case .object:
                return try parent.withMembers { (members: inout Object) throws(JSONPatchError) -> (JSON, JSONPatchUndo) in
                    guard let index = members.index(forKey: last) else {
                        throw missing(pointer, role: role)
                    }
                    let removed = members.remove(at: index).value
                    let object = JSONPointer(tokens: Array(pointer.tokens.dropLast()))
                    return (removed, .reinsertMember(object: object, key: last, value: removed, position: index))
                }
            case .array:
                return try parent.withElements { (elements: inout [JSON]) throws(JSONPatchError) -> (JSON, JSONPatchUndo) in
                    let index = try existingIndex(last, count: elements.count, pointer: pointer, role: role)
                    let removed = elements.remove(at: index)
                    return (removed, .reinsertElement(pointer, removed))
                }
            case .scalar:
                throw scalarInTheWay(pointer, depth: parentEnd, role: role, found: parent)
            }
        }
    }

    fileprivate mutating func patchReplace(at pointer: JSONPointer, with value: JSON) throws(JSONPatchError) -> JSONPatchUndo {
        // Replacing goes all the way down: the target itself must exist.
        try modify(pointer, depth: 0, end: pointer.tokens.count, role: "path") { (target: inout JSON) -> JSONPatchUndo in
            let old = target
            target = value
            return .restore(pointer, old)
        }
    }

    /// Takes back one logged change. The log is replayed newest first, so
    /// every location it names exists again when its step runs; a failure
    /// here is a bug in this file, not a property of the input.
    fileprivate mutating func undo(_ step: JSONPatchUndo) {
        do {
            switch step {
            case .restore(let pointer, let old):
                _ = try patchReplace(at: pointer, with: old)
            case .removeInserted(let pointer):
                _ = try patchRemove(at: pointer, role: "path")
            case .reinsertMember(let object, let key, let value, let position):
                try modify(object, depth: 0, end: object.tokens.count, role: "path") { (target: inout JSON) in
                    target.withMembers { (members: inout Object) in
                        _ = members.updateValue(value, forKey: key, insertingAt: position)
                    }
                }
            case .reinsertElement(let pointer, let value):
                _ = try patchAdd(value, at: pointer)
            }
        } catch {
            preconditionFailure("JSON Patch rollback failed: \(error)")
        }
    }
}

// MARK: - Error construction

private func missing(_ pointer: JSONPointer, role: String) -> JSONPatchError {
    JSONPatchError(kind: .pathNotFound, reason: "\(role) \(pointer.debugText) does not exist")
}

/// A pointer that tries to step into a scalar at `depth`.
private func scalarInTheWay(_ pointer: JSONPointer, depth: Int, role: String, found: JSON) -> JSONPatchError {
    let blocker = JSONPointer(tokens: Array(pointer.tokens[..<depth]))
    return JSONPatchError(
        kind: .pathNotFound,
        reason: "\(role) \(pointer.debugText) does not exist: \(blocker.debugText) is \(found.typeName.withArticle)")
}

private func invalidIndexToken(_ token: String, pointer: JSONPointer) -> JSONPatchError {
    JSONPatchError(
        kind: .invalidArrayIndex,
        reason: "\(pointer.debugText): \"\(token)\" is not a valid array index")
}

/// The index for a token that must name an existing array element.
private func existingIndex(_ token: String, count: Int, pointer: JSONPointer, role: String) throws(JSONPatchError) -> Int {
    guard let index = JSONPointer.arrayIndex(from: token) else {
        if token == "-" {
            throw JSONPatchError(
                kind: .invalidArrayIndex,
                reason: "\(role) \(pointer.debugText): \"-\" designates no existing element")
        }
        throw invalidIndexToken(token, pointer: pointer)
    }
    guard index < count else {
        throw JSONPatchError(
            kind: .invalidArrayIndex,
            reason: "\(role) \(pointer.debugText) does not exist: index \(index) is out of bounds for an array of \(count) elements")
    }
    return index
}

extension String {
    fileprivate var withArticle: String {
        switch first {
        case "a", "e", "i", "o", "u": return "an \(self)"
        default: return "a \(self)"
        }
    }
}

extension JSON {
    /// Compact JSON for error messages, cut short so a huge value cannot
    /// bloat an error response.
    var abbreviatedJSON: String {
        let limit = 120
        let bytes = jsonBytes
        guard bytes.count > limit else { return String(decoding: bytes, as: UTF8.self) }
        // Back off to a scalar boundary so the cut does not split a character.
        var end = limit
        while end > 0, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self) + "…"
    }
}
