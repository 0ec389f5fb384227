extension JSONParser {
    /// The parser for what carries a value rather than being one (a request body, a message, a
    /// journal record, an export line): `envelopeDepth` more levels than a value may nest, so that
    /// a value at the limit still travels, and its own limit is checked where it lands.
    public static let carrier = JSONParser(maxDepth: JSON.maximumDepth + JSON.envelopeDepth)
}

/// The limits every JSON value this package reads or builds stays within, so that whatever one
/// program writes (a document, a journal record, a snapshot) another can read back.
extension JSON {
    /// The deepest a value may nest: each array or object is a level, the outermost is 1, a scalar
    /// adds none. What the parser reads by default, and what a server's document may become: an
    /// edit that would nest deeper is refused rather than stored, since nothing could load it again.
    /// It also bounds the recursion of everything that walks a value (serializer, diff, merge).
    public static let maximumDepth = 512

    /// The levels a message wraps around a value it carries (`{"type":"patch","ops":[{"value":…}]}`,
    /// an export line's `{"version":N,"state":…}`): what reads such messages allows beyond
    /// `maximumDepth`, so that a document at the limit still travels.
    public static let envelopeDepth = 8

    /// How many levels of arrays and objects the value nests (`1` 0, `[]` 1, `[{"a":[]}]` 3), counted
    /// no further than `limit + 1`: a deeper value answers `limit + 1` without being walked to the
    /// bottom, so the count recurses at most `limit + 1` levels however the value was built.
    public func nestingDepth(upTo limit: Int = JSON.maximumDepth) -> Int {
        switch self {
        case .array(let elements): return Self.levels(containing: elements, upTo: limit)
        case .object(let members): return Self.levels(containing: members.values, upTo: limit)
        default: return 0
        }
    }

    /// The size of the value's compact JSON text (a control character in a string counted as six
    /// bytes, `\u001f`, and a non-integer number as 24, the most either takes), counted no further
    /// than just past `limit`: a larger value answers more than `limit` having walked about `limit`
    /// bytes' worth of it, however many times its parts are shared (a value built by copying itself
    /// has far more text than memory).
    public func encodedSize(upTo limit: Int) -> Int {
        var size = 0
        Self.addEncodedSize(of: self, to: &size, upTo: limit)
        return size
    }

    private static func addEncodedSize(of value: JSON, to size: inout Int, upTo limit: Int) {
        switch value {
        case .null: size += 4
        case .bool(let flag): size += flag ? 4 : 5
        case .integer(let value): size += Self.decimalDigits(value)
        case .number: size += 24
        case .string(let text):
            size += 2
            for byte in text.utf8 {
                size += byte < 0x20 ? 6 : byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") ? 2 : 1
                if size > limit { return }
            }
        case .array(let elements):
            size += 1 + max(elements.count, 1)
            for element in elements where size <= limit { addEncodedSize(of: element, to: &size, upTo: limit) }
        case .object(let members):
            size += 1 + max(members.count, 1)
            for (key, member) in members where size <= limit {
                size += key.utf8.count + 3
                addEncodedSize(of: member, to: &size, upTo: limit)
            }
        }
    }

    /// The length of `value` in decimal, with its sign.
    private static func decimalDigits(_ value: Int64) -> Int {
        var count = value < 0 ? 2 : 1
        var rest = value.magnitude
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }

    /// 1 for the container holding `children`, plus the deepest child, counted up to `limit + 1`.
    private static func levels(containing children: some Collection<JSON>, upTo limit: Int) -> Int {
        guard limit > 0 else { return 1 }
        var deepest = 0
        for child in children {
            deepest = max(deepest, child.nestingDepth(upTo: limit - 1))
            if deepest >= limit { break }
        }
        return 1 + deepest
    }
}
