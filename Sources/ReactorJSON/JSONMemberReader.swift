/// How `JSONParser.forEachMember(in:_:)` ended.
public enum JSONMemberReading: Sendable, Equatable {
    /// Every member was read and the document was well-formed to its end.
    case finished
    /// The callback asked to stop; what follows was not read (nor checked).
    case stopped
    /// The document's value is not an object (nothing was read).
    case notAnObject
}

/// A member's value as `JSONParser.forEachMember(in:_:)` hands it over: a string without escapes
/// as its UTF-8 bytes (checked, and valid only during the call), anything else parsed. Readers that
/// match a string against a few known ones (an event's type, a path they have seen) need no String.
public enum JSONMemberValue {
    case unescapedString(UnsafeRawBufferPointer)
    case parsed(JSON)

    /// The value as JSON.
    public var json: JSON {
        switch self {
        case .unescapedString(let bytes): .string(String(decoding: bytes, as: UTF8.self))
        case .parsed(let value): value
        }
    }
}

extension JSONParser {
    /// Reads `bytes` as a document whose value is one object, handing each member to `body` in order
    /// without building the object: for decoders that know which members they want (an event's
    /// `type`, `path`, ...), where building an ordered dictionary only to look three keys up again
    /// costs more than the rest of the work.
    ///
    /// `body` gets the key's UTF-8 bytes (valid only during the call) and the member's value, and
    /// returns false to stop. Keys are passed as they come, repeated ones included. Malformed JSON
    /// throws exactly as `parse` would for the part read; bytes after a stop are not examined, so a
    /// caller that stops must not take the document for well-formed.
    public func forEachMember(
        in bytes: UnsafeRawBufferPointer,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: JSONMemberValue) -> Bool
    ) throws(JSONParseError) -> JSONMemberReading {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONParseError(message: "unexpected end of input, expected a JSON value", offset: 0, line: 1, column: 1)
        }
        var reader = JSONByteReader(
            base: base.assumingMemoryBound(to: UInt8.self),
            count: bytes.count,
            maxDepth: maxDepth,
            rejectsDuplicateKeys: false,
            approximatesBigIntegers: integersBeyond64Bits == .approximate)
        defer { reader.endParse() }
        return try reader.readMembers(body)
    }
}

extension JSONByteReader {
    /// `parseDocument` for an object, with each member handed to `body` instead of stored.
    mutating func readMembers(_ body: (UnsafeRawBufferPointer, JSONMemberValue) -> Bool) throws(JSONParseError) -> JSONMemberReading {
        if count >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF {
            throw error("a byte order mark is not allowed", at: 0)
        }
        skipWhitespace()
        guard position < count, base[position] == ASCII.openBrace else { return .notAnObject }
        if maxDepth < 1 {
            throw error(.tooDeep, "nesting depth exceeds the maximum of \(maxDepth)", at: position)
        }
        position += 1  // '{'
        skipWhitespace()
        if position < count, base[position] == ASCII.closeBrace {
            position += 1
            return try finishDocument()
        }
        while true {
            guard position < count, base[position] == ASCII.quote else {
                throw expected("'\"' to start an object key")
            }
            let keyStart = position + 1
            // A plain ASCII key (the common case) is passed as its own bytes, with no String made;
            // anything else goes through the full string parser, which also reports its errors.
            let plainEnd = plainASCIIStringEnd(from: keyStart)
            let key: String?
            if let plainEnd {
                position = plainEnd + 1
                key = nil
            } else {
                key = try parseString()
            }
            try skipColonAfterKey()
            let value: JSONMemberValue
            if position < count, base[position] == ASCII.quote {
                switch try parseStringContent() {
                case .unescaped(let bytes): value = .unescapedString(UnsafeRawBufferPointer(bytes))
                case .decoded(let string): value = .parsed(.string(string))
                }
            } else {
                value = .parsed(try parseValue(depth: 1))
            }
            let proceed: Bool
            if let plainEnd {
                proceed = body(UnsafeRawBufferPointer(start: base + keyStart, count: plainEnd - keyStart), value)
            } else {
                var decoded = key!
                proceed = decoded.withUTF8 { body(UnsafeRawBufferPointer($0), value) }
            }
            guard proceed else { return .stopped }
            if try endOfMember() { return try finishDocument() }
        }
    }

    /// The offset of the closing quote of a string starting at `start` (after its opening quote)
    /// that is printable ASCII without escapes; nil for any other string, or an unterminated one.
    private func plainASCIIStringEnd(from start: Int) -> Int? {
        let end = plainRunEnd(from: start)
        return end < count && base[end] == ASCII.quote ? end : nil
    }

    /// After the top-level value: nothing but whitespace may follow.
    private mutating func finishDocument() throws(JSONParseError) -> JSONMemberReading {
        skipWhitespace()
        if position < count {
            throw error("unexpected \(describeByte(at: position)) after the JSON value", at: position)
        }
        return .finished
    }
}
