/// Why a JSON Patch could not be decoded or applied.
public struct JSONPatchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Broad classes, so a server can pick a status code (a malformed patch is
    /// the client's syntax error; the others are conflicts with the state).
    public enum Kind: Sendable, Hashable {
        /// The patch document is not an array of well-formed operations.
        case invalidOperation
        /// A "path" or "from" location (or the parent of an "add" target)
        /// does not exist.
        case pathNotFound
        /// A token used on an array is not a valid index for that use, or is
        /// out of bounds.
        case invalidArrayIndex
        /// A "test" operation found a different value.
        case testFailed
        /// A "move" whose "from" is a proper prefix of its "path".
        case moveIntoOwnChild
        /// A "remove" of the whole document, which RFC 6902 does not define.
        case cannotRemoveRoot
        /// The document would nest deeper than `JSON.maximumDepth`.
        case tooDeep
        /// The patch's `copy` operations would copy more than the limit it was applied with.
        case copiesTooMuch
    }

    public var kind: Kind
    /// Position of the failing operation in the patch; nil when the patch as
    /// a whole is malformed (for example, not an array).
    public var index: Int?
    /// A human-readable reason, such as "path /a/b does not exist".
    public var reason: String

    public init(kind: Kind, index: Int? = nil, reason: String) {
        self.kind = kind
        self.index = index
        self.reason = reason
    }

    public var description: String {
        if let index {
            return "operation \(index): \(reason)"
        }
        return reason
    }
}
