/// An RFC 6901 JSON Pointer such as "/users/0/name".
///
/// Stored as its decoded reference tokens, so "/a~1b" is the single token
/// "a/b". The empty pointer "" designates the whole document.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The decoded reference tokens, outermost first.
    public private(set) var tokens: [String]

    /// The pointer to the whole document ("").
    public static let root = JSONPointer(tokens: [])

    public init(tokens: [String]) {
        self.tokens = tokens
    }

    /// Parses the string form of a pointer ("" or "/" followed by tokens).
    public init(_ string: String) throws(JSONPointerError) {
        // The common pointer has no escapes: its tokens are the bytes between slashes, as they are.
        var text = string
        let plain: [String]? = text.withUTF8 { bytes in
            guard bytes.first == UInt8(ascii: "/"), !bytes.contains(UInt8(ascii: "~")) else { return nil }
            var tokens: [String] = []
            var start = 1
            for index in 1...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                tokens.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
                start = index + 1
            }
            return tokens
        }
        if let plain {
            tokens = plain
            return
        }
        var utf8 = Array(string.utf8)
        guard !utf8.isEmpty else {
            self.tokens = []
            return
        }
        guard utf8[0] == UInt8(ascii: "/") else {
            throw JSONPointerError(
                message: "JSON pointer \"\(string)\" must be empty or start with '/'",
                pointer: string)
        }
        var tokens: [String] = []
        var token: [UInt8] = []
        var index = 1
        utf8.append(UInt8(ascii: "/"))  // sentinel that ends the last token
        while index < utf8.count {
            let byte = utf8[index]
            switch byte {
            case UInt8(ascii: "/"):
                tokens.append(String(decoding: token, as: UTF8.self))
                token.removeAll(keepingCapacity: true)
            case UInt8(ascii: "~"):
                let next = index + 1 < utf8.count - 1 ? utf8[index + 1] : 0
                switch next {
                case UInt8(ascii: "0"): token.append(UInt8(ascii: "~"))
                case UInt8(ascii: "1"): token.append(UInt8(ascii: "/"))
                default:
                    throw JSONPointerError(
                        message: "JSON pointer \"\(string)\" has an invalid escape: '~' must be followed by '0' or '1'",
                        pointer: string)
                }
                index += 1
            default:
                token.append(byte)
            }
            index += 1
        }
        self.tokens = tokens
    }

    /// The string form, with '~' and '/' in tokens escaped as "~0" and "~1".
    public var string: String {
        var result = ""
        for token in tokens {
            result.append("/")
            if token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) {
                result.append(Self.escape(token))
            } else {
                result.append(token)
            }
        }
        return result
    }

    public var description: String { string }

    /// Works on scalars, not Characters: a "~" followed by a combining mark
    /// is one Character that is not "~", yet its "~" must still be escaped.
    private static func escape(_ token: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in token.unicodeScalars {
            switch scalar {
            case "~": escaped.append(contentsOf: "~0".unicodeScalars)
            case "/": escaped.append(contentsOf: "~1".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    public var isRoot: Bool { tokens.isEmpty }

    /// The pointer to the containing value; nil for the root.
    public var parent: JSONPointer? {
        isRoot ? nil : JSONPointer(tokens: Array(tokens.dropLast()))
    }

    public var lastToken: String? { tokens.last }

    public func appending(_ token: String) -> JSONPointer {
        JSONPointer(tokens: tokens + [token])
    }

    public func appending(index: Int) -> JSONPointer {
        appending(String(index))
    }

    /// True when `other` points strictly inside the value this pointer
    /// designates ("/a" is a proper prefix of "/a/b" but not of "/ab" or "/a").
    public func isProperPrefix(of other: JSONPointer) -> Bool {
        tokens.count < other.tokens.count && other.tokens.starts(with: tokens)
    }

    /// The array index a token designates under RFC 6901: "0" or a decimal
    /// number without leading zeros. "-" is not an index (it means "past the
    /// end", which only `add` accepts) and returns nil, as does anything else.
    public static func arrayIndex(from token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, utf8.count <= 18 else { return nil }
        if first == UInt8(ascii: "0") {
            return utf8.count == 1 ? 0 : nil
        }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// A string that is not a valid JSON pointer.
public struct JSONPointerError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    /// The rejected pointer text.
    public var pointer: String

    public init(message: String, pointer: String) {
        self.message = message
        self.pointer = pointer
    }

    public var description: String { message }
}

extension JSON {
    /// The value the pointer designates, or nil when there is none (a missing
    /// member, an index out of bounds or not a valid index, "-", or a step
    /// into a scalar).
    public subscript(pointer: JSONPointer) -> JSON? {
        var current = self
        for token in pointer.tokens {
            switch current {
            case .object(let members):
                guard let member = members[token] else { return nil }
                current = member
            case .array(let elements):
                guard let index = JSONPointer.arrayIndex(from: token), index < elements.count else {
                    return nil
                }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }
}
