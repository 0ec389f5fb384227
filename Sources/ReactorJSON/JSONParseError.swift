/// Why and where a JSON text was rejected.
///
/// `description` reads like "expected ':' after object key at line 3, column 7",
/// so it can be returned to a client as is.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Whether the text is not JSON at all, or JSON beyond what this package keeps exactly: a server
    /// answers the first as a malformed body and the others as content it cannot store.
    public enum Kind: Sendable, Hashable {
        /// Not RFC 8259 JSON.
        case syntax
        /// Arrays and objects nested deeper than the parser's `maxDepth` (`JSON.maximumDepth`).
        case tooDeep
        /// An integer (no fraction, no exponent) outside the 64-bit range, which RFC 8259 lets an
        /// implementation refuse: taken as a double it would silently lose its last digits.
        case integerOutOfRange
    }

    public var kind: Kind
    /// What was wrong, without the position.
    public var message: String
    /// Byte offset of the offending byte in the input (the input's length
    /// when the input ended too early).
    public var offset: Int
    /// 1-based line; lines are separated by "\n".
    public var line: Int
    /// 1-based column, counted in Unicode scalars so that it matches what an
    /// editor shows for non-ASCII text.
    public var column: Int

    public init(kind: Kind = .syntax, message: String, offset: Int, line: Int, column: Int) {
        self.kind = kind
        self.message = message
        self.offset = offset
        self.line = line
        self.column = column
    }

    public var description: String {
        "\(message) at line \(line), column \(column)"
    }
}
