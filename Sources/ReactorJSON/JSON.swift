import ByteWords
import OrderedCollections

/// A JSON value.
///
/// Integers that fit in `Int64` are kept exactly in `.integer`; every other
/// number is a `.number`. Objects keep their members in insertion order so
/// that serialization is stable, but equality ignores member order: two
/// objects are equal when they have the same keys with equal values, which is
/// what RFC 6902's `test` operation and the patch round trip require.
///
/// Numbers compare by value across the two cases: `.integer(1) == .number(1.0)`.
public enum JSON: Sendable {
    /// Object members, in insertion order, with unique keys.
    public typealias Object = OrderedDictionary<String, JSON>

    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSON])
    case object(Object)
}

// MARK: - Equality and hashing

extension JSON: Equatable {
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null):
            return true
        case let (.bool(a), .bool(b)):
            return a == b
        case let (.integer(a), .integer(b)):
            return a == b
        case let (.number(a), .number(b)):
            return a == b
        case let (.integer(a), .number(b)), let (.number(b), .integer(a)):
            // Converting the double (not the integer) keeps the comparison
            // exact: 2^53 + 1 must not equal 2^53 just because the integer
            // rounds to it.
            return Int64(exactly: b) == a
        case let (.string(a), .string(b)):
            return a == b
        case let (.array(a), .array(b)):
            return a == b
        case let (.object(a), .object(b)):
            guard a.count == b.count else { return false }
            // Copies of one state share storage; comparing them (as diffing
            // a state against its patched successor does) is then O(1).
            if a.sharesStorage(with: b) { return true }
            // Members in the same order (one value replacing another of its shape, the usual case)
            // are compared place by place; a key is looked up only where the orders differ.
            let (aKeys, bKeys) = (a.keys, b.keys)
            for index in 0 ..< a.count {
                if aKeys[index] == bKeys[index] {
                    guard a.values[index] == b.values[index] else { return false }
                } else {
                    guard let other = b[aKeys[index]], other == a.values[index] else { return false }
                }
            }
            return true
        default:
            return false
        }
    }
}

// MARK: - Identity

extension JSON {
    /// Whether the two are the same JSON text, not merely equal values: the same kind of number (an
    /// integer is not a double, and doubles are compared to the bit, so -0.0 is not 0.0), strings
    /// and member names with the same Unicode scalars (Swift's `==` takes canonically equivalent
    /// strings for equal, JSON does not), members in the same order. `==` is what RFC 6902's `test`
    /// asks; this is whether a copy that a client keeps (by patches) still reads like this one.
    public func isIdentical(to other: JSON) -> Bool {
        switch (self, other) {
        case (.null, .null):
            return true
        case let (.bool(a), .bool(b)):
            return a == b
        case let (.integer(a), .integer(b)):
            return a == b
        case let (.number(a), .number(b)):
            return a.bitPattern == b.bitPattern
        case let (.string(a), .string(b)):
            return a.hasSameScalars(as: b)
        case let (.array(a), .array(b)):
            guard a.count == b.count else { return false }
            if a.withUnsafeBufferPointer({ $0.baseAddress }) == b.withUnsafeBufferPointer({ $0.baseAddress }) { return true }
            return a.indices.allSatisfy { a[$0].isIdentical(to: b[$0]) }
        case let (.object(a), .object(b)):
            guard a.count == b.count else { return false }
            if a.sharesStorage(with: b) { return true }
            let (aKeys, bKeys) = (a.keys, b.keys)
            for index in 0 ..< a.count {
                guard aKeys[index].hasSameScalars(as: bKeys[index]), a.values[index].isIdentical(to: b.values[index]) else { return false }
            }
            return true
        default:
            return false
        }
    }
}

extension JSON {
    /// Whether two member names (or strings) are one to JSON: the same Unicode scalars. Swift's `==`,
    /// and so an `Object`'s lookups, also take canonically equivalent ones for one.
    public static func isSameName(_ name: String, _ other: String) -> Bool {
        name.hasSameScalars(as: other)
    }
}

extension String {
    /// Whether the two hold the same Unicode scalars (the same UTF-8), as JSON compares strings.
    /// Compared as two buffers: iterating the UTF-8 views byte by byte costs several times more.
    func hasSameScalars(as other: String) -> Bool {
        var (a, b) = (self, other)
        return a.withUTF8 { a in
            b.withUTF8 { b in a.count == b.count && (a.isEmpty || ByteScan.equal(a.baseAddress!, b.baseAddress!, count: a.count)) }
        }
    }
}

extension JSON: Hashable {
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .bool(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .integer(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .number(let value):
            // Must agree with `==`: a double holding an exact Int64 hashes
            // like that integer.
            if let exact = Int64(exactly: value) {
                hasher.combine(2 as UInt8)
                hasher.combine(exact)
            } else {
                hasher.combine(3 as UInt8)
                hasher.combine(value)
            }
        case .string(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        case .array(let elements):
            hasher.combine(5 as UInt8)
            hasher.combine(elements)
        case .object(let members):
            // Equality ignores member order, so the members are combined
            // with a commutative sum of independent hashes.
            hasher.combine(6 as UInt8)
            hasher.combine(members.count)
            var sum = 0
            for (key, value) in members {
                var memberHasher = Hasher()
                memberHasher.combine(key)
                memberHasher.combine(value)
                sum &+= memberHasher.finalize()
            }
            hasher.combine(sum)
        }
    }
}

extension OrderedSet where Element == String {
    /// True when both sets use the same element buffer: the same keys in the same order.
    func sharesStorage(with other: Self) -> Bool {
        count == other.count
            && elements.withUnsafeBufferPointer({ $0.baseAddress }) == other.elements.withUnsafeBufferPointer({ $0.baseAddress })
    }
}

extension OrderedDictionary where Key == String, Value == JSON {
    /// True when both dictionaries use the same key and value buffers, so
    /// they are equal without looking at any member. (Arrays get the same
    /// shortcut from the standard library's `==`.)
    func sharesStorage(with other: Self) -> Bool {
        let keyBuffer = keys.elements.withUnsafeBufferPointer { $0.baseAddress }
        let otherKeyBuffer = other.keys.elements.withUnsafeBufferPointer { $0.baseAddress }
        guard keyBuffer == otherKeyBuffer else { return false }
        let valueBuffer = values.withUnsafeBufferPointer { $0.baseAddress }
        let otherValueBuffer = other.values.withUnsafeBufferPointer { $0.baseAddress }
        return valueBuffer == otherValueBuffer
    }
}

// MARK: - Accessors

extension JSON {
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value as an exact integer: an `.integer`, or a `.number` with no
    /// fractional part that fits in `Int64`.
    public var int64Value: Int64? {
        switch self {
        case .integer(let value): return value
        case .number(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// The value as a double; large integers may round.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        default: return nil
        }
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: Object? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The member named `key`, or nil when this is not an object or has no
    /// such member.
    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index`, or nil when this is not an array or the index
    /// is out of bounds.
    public subscript(index: Int) -> JSON? {
        if case .array(let elements) = self, elements.indices.contains(index) {
            return elements[index]
        }
        return nil
    }

    /// A short name of the value's type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .integer, .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

// MARK: - Literals

extension JSON: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension JSON: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSON: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension JSON: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSON: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSON: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
}

extension JSON: ExpressibleByDictionaryLiteral {
    /// Duplicate keys in a literal are a programming error and trap, as they
    /// do for `Dictionary`.
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Object(uniqueKeysWithValues: elements))
    }
}

extension JSON: CustomStringConvertible {
    /// The compact JSON text of the value.
    public var description: String { jsonString }
}
