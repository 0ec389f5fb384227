import ByteWords

/// A strict RFC 8259 parser working directly on UTF-8 bytes.
///
/// Strict means: no trailing commas, no leading zeros, no comments, no byte
/// order mark, no unescaped control characters in strings, no invalid UTF-8,
/// no unpaired surrogate escapes, nothing but whitespace after the value, and
/// no number so large that it would become infinity, and no integer outside the 64-bit range
/// unless `integersBeyond64Bits` says to approximate it.
public struct JSONParser: Sendable {
    /// What to do when an object repeats a key. RFC 8259 leaves it open.
    public enum DuplicateKeyPolicy: Sendable, Hashable {
        /// The last value wins and keeps the position of the first
        /// occurrence, as JavaScript's `JSON.parse` does.
        case keepLast
        /// The document is rejected.
        case reject
    }

    /// Maximum nesting of arrays and objects. Bounds the recursion of the
    /// parser and of every recursive algorithm run on the result later.
    public var maxDepth: Int
    public var duplicateKeys: DuplicateKeyPolicy

    /// What to do with an integer literal that does not fit 64 bits (`18446744073709551616`).
    public enum BigIntegerPolicy: Sendable, Hashable {
        /// The text is refused (`JSONParseError.Kind.integerOutOfRange`): integers stay exact.
        case refuse
        /// It becomes the nearest double, as JavaScript's `JSON.parse` makes it.
        case approximate
    }

    public var integersBeyond64Bits: BigIntegerPolicy

    public init(maxDepth: Int = JSON.maximumDepth, duplicateKeys: DuplicateKeyPolicy = .keepLast, integersBeyond64Bits: BigIntegerPolicy = .refuse) {
        self.maxDepth = maxDepth
        self.duplicateKeys = duplicateKeys
        self.integersBeyond64Bits = integersBeyond64Bits
    }

    public func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSON {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONParseError(
                message: "unexpected end of input, expected a JSON value",
                offset: 0, line: 1, column: 1)
        }
        var reader = JSONByteReader(
            base: base.assumingMemoryBound(to: UInt8.self),
            count: bytes.count,
            maxDepth: maxDepth,
            rejectsDuplicateKeys: duplicateKeys == .reject,
            approximatesBigIntegers: integersBeyond64Bits == .approximate)
        defer { reader.endParse() }
        return try reader.parseDocument()
    }

    public func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSON {
        // `withUnsafeBytes` only rethrows untyped errors; a Result carries
        // the typed one across.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) -> JSON in try parse(raw) }
        }
        return try result.get()
    }

    public func parse(_ text: String) throws(JSONParseError) -> JSON {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(JSONParseError) -> JSON in try parse(UnsafeRawBufferPointer(utf8)) }
        }
        return try result.get()
    }
}

extension JSON {
    /// Parses UTF-8 JSON text with the default parser settings.
    public init(parsing bytes: [UInt8]) throws(JSONParseError) {
        self = try JSONParser().parse(bytes)
    }

    /// Parses UTF-8 JSON text with the default parser settings.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(JSONParseError) {
        self = try JSONParser().parse(bytes)
    }

    /// Parses JSON text with the default parser settings.
    public init(parsing text: String) throws(JSONParseError) {
        self = try JSONParser().parse(text)
    }
}

// MARK: - Byte-level recursive descent

enum ASCII {
    static let quote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C
    static let slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C
    static let colon: UInt8 = 0x3A
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D
    static let openBrace: UInt8 = 0x7B
    static let closeBrace: UInt8 = 0x7D
    static let minus: UInt8 = 0x2D
    static let plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
    static let lowerE: UInt8 = 0x65
    static let upperE: UInt8 = 0x45
    static let lowerU: UInt8 = 0x75
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let newline: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
}

/// The parser's cursor over the input. The input outlives the reader (it is
/// only used inside `JSONParser.parse`), so raw pointer access is safe and
/// avoids bounds-check and retain traffic on the hot path.
struct JSONByteReader {
    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    let rejectsDuplicateKeys: Bool
    let approximatesBigIntegers: Bool
    var position = 0
    /// Reused buffer for strings containing escapes, so decoding them costs
    /// one String creation rather than one append per character.
    var scratch: [UInt8] = []
    /// This thread's scratch (the recent strings, the members' stack), looked up when first needed.
    private var scratchPointer: UnsafeMutablePointer<JSONParserScratch>?
    /// Where the stack stood when this reader first used it: a parse that ends unwinds to there.
    private var stackStart = (keys: 0, values: 0)

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int, rejectsDuplicateKeys: Bool, approximatesBigIntegers: Bool) {
        self.base = base
        self.count = count
        self.maxDepth = maxDepth
        self.rejectsDuplicateKeys = rejectsDuplicateKeys
        self.approximatesBigIntegers = approximatesBigIntegers
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        if count >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF {
            throw error("a byte order mark is not allowed", at: 0)
        }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if position < count {
            throw error("unexpected \(describeByte(at: position)) after the JSON value", at: position)
        }
        return value
    }

    // MARK: Values

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSON {
        guard position < count else {
            throw expected("a JSON value")
        }
        switch base[position] {
        case ASCII.openBrace:
            return try parseObject(depth: depth + 1)
        case ASCII.openBracket:
            return try parseArray(depth: depth + 1)
        case ASCII.quote:
            return .string(try parseString())
        case ASCII.minus, ASCII.zero...ASCII.nine:
            return try parseNumber()
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default:
            throw error("unexpected \(describeByte(at: position)), expected a JSON value", at: position)
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSON {
        if depth > maxDepth {
            throw error(.tooDeep, "nesting depth exceeds the maximum of \(maxDepth)", at: position)
        }
        position += 1  // '{'
        skipWhitespace()
        if position < count, base[position] == ASCII.closeBrace {
            position += 1
            return .object(JSON.Object())
        }
        // Most objects on the wire are small: their keys and values are gathered on the thread's
        // stack, each key checked against the earlier ones by its print before any string is
        // compared, and the dictionary made once, from arrays of the exact size. (Inserted one by
        // one, a small ordered dictionary, which has no hash table, compares every new key with
        // every earlier one as strings.) The stack may move as nested containers grow it: it is
        // reached through `shared` each time.
        let shared = threadScratch()
        let firstKey = shared.pointee.stack.keyCount
        let firstValue = shared.pointee.stack.valueCount
        var memberCount = 0
        var prints = SmallObjectKeyPrints()
        var printsAreExact = true
        while true {
            guard position < count, base[position] == ASCII.quote else {
                throw expected("'\"' to start an object key")
            }
            let keyOffset = position
            let key: String
            let print: UInt64
            switch try parseStringContent() {
            case .unescaped(let bytes):
                key = string(bytes)
                print = Self.keyPrint(bytes)
                // Bytes tell ASCII keys apart exactly. Others may differ in bytes and still be one key
                // as the object's dictionary compares them (canonically equivalent: "\u{C5}" and
                // "A\u{30A}"), which it must never hold twice: compare every key as a string.
                if !Self.isASCII(bytes) { printsAreExact = false }
            case .decoded(let decoded):
                // A key written with escapes has no print of its own bytes: compare every key as a string.
                key = decoded
                print = 0
                printsAreExact = false
            }
            try skipColonAfterKey()
            let value = try parseValue(depth: depth)
            let keys = UnsafeBufferPointer(start: shared.pointee.stack.keys + firstKey, count: memberCount)
            // The key and value are moved onto the stack (`consume`): otherwise each was copied
            // there and the original released, for every member read.
            if let earlier = prints.firstIndex(of: key, print: print, among: keys, printsAreExact: printsAreExact) {
                if rejectsDuplicateKeys { throw error("duplicate key \"\(key)\" in object", at: keyOffset) }
                // As `updateValue(_:forKey:)`: the last value, at the first key's place.
                shared.pointee.stack.values[firstValue + earlier] = consume value
            } else {
                prints.set(print, at: memberCount)
                shared.pointee.stack.push(key: consume key)
                shared.pointee.stack.push(value: consume value)
                memberCount += 1
            }
            let ended = try endOfMember()
            if ended || memberCount == SmallObjectKeyPrints.capacity {
                var members = JSON.Object(
                    uncheckedUniqueKeys: shared.pointee.stack.popKeys(from: firstKey),
                    values: shared.pointee.stack.popValues(from: firstValue))
                if !ended { try parseMembers(into: &members, depth: depth) }
                return .object(members)
            }
        }
    }

    /// The rest of a large object's members, after the first few: inserted with hashing.
    mutating func parseMembers(into members: inout JSON.Object, depth: Int) throws(JSONParseError) {
        while true {
            guard position < count, base[position] == ASCII.quote else {
                throw expected("'\"' to start an object key")
            }
            let keyOffset = position
            let key = try parseString()
            try skipColonAfterKey()
            let value = try parseValue(depth: depth)
            if members.updateValue(value, forKey: key) != nil, rejectsDuplicateKeys {
                throw error("duplicate key \"\(key)\" in object", at: keyOffset)
            }
            if try endOfMember() { return }
        }
    }

    /// A key's print, from its bytes (no escapes): equal keys have equal prints, and keys of up to
    /// seven bytes have prints of their own (the length and the bytes themselves).
    @inline(__always)
    static func keyPrint(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        guard let start = bytes.baseAddress else { return 0 }
        let length = bytes.count
        if length >= 8 {
            let head = ByteWord(loadingFrom: start, at: 0).bits
            let tail = ByteWord(loadingFrom: start, at: length - 8).bits
            return (head &* 0x9E37_79B9_7F4A_7C15) ^ tail ^ UInt64(length)
        }
        var print = UInt64(length) << 56
        for index in 0..<length { print |= UInt64(start[index]) << (UInt64(index) &* 8) }
        return print
    }

    /// Whether every byte is ASCII, a word at a time.
    @inline(__always)
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = bytes.baseAddress else { return true }
        var index = 0
        while index + 8 <= bytes.count {
            if ByteWord(loadingFrom: start, at: index).nonASCIILanes != 0 { return false }
            index += 8
        }
        while index < bytes.count {
            if start[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }

    /// Between a key and its value: the ':' and the whitespace around it.
    @inline(__always)
    mutating func skipColonAfterKey() throws(JSONParseError) {
        skipWhitespace()
        guard position < count, base[position] == ASCII.colon else {
            throw expected("':' after object key")
        }
        position += 1
        skipWhitespace()
    }

    /// After an object member: a ',' (false: another member follows) or the closing '}' (true).
    @inline(__always)
    mutating func endOfMember() throws(JSONParseError) -> Bool {
        try endOfItem(closedBy: ASCII.closeBrace, "'}'", after: "object member")
    }

    /// After an array element or object member: a ',' (false: another follows) or `closing` (true).
    /// `closingText` and `item` are for the error messages. Inlined: it runs once per member and element.
    @inline(__always)
    mutating func endOfItem(closedBy closing: UInt8, _ closingText: String, after item: String) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard position < count else {
            throw expected("',' or \(closingText) after \(item)")
        }
        switch base[position] {
        case ASCII.comma:
            let commaOffset = position
            position += 1
            skipWhitespace()
            if position < count, base[position] == closing {
                throw error("trailing comma before \(closingText) is not allowed", at: commaOffset)
            }
            return false
        case closing:
            position += 1
            return true
        default:
            throw expected("',' or \(closingText) after \(item)")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSON {
        if depth > maxDepth {
            throw error(.tooDeep, "nesting depth exceeds the maximum of \(maxDepth)", at: position)
        }
        position += 1  // '['
        skipWhitespace()
        if position < count, base[position] == ASCII.closeBracket {
            position += 1
            return .array([])
        }
        // Gathered on the thread's stack, as an object's members are (see `parseObject`).
        let shared = threadScratch()
        let first = shared.pointee.stack.valueCount
        while true {
            let element = try parseValue(depth: depth)
            shared.pointee.stack.push(value: consume element)
            if try endOfItem(closedBy: ASCII.closeBracket, "']'", after: "array element") {
                return .array(shared.pointee.stack.popValues(from: first))
            }
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let length = literal.utf8CodeUnitCount
        let start = position
        let literalBytes = literal.utf8Start
        var matched = 0
        while matched < length, start + matched < count, base[start + matched] == literalBytes[matched] {
            matched += 1
        }
        guard matched == length else {
            throw error("invalid literal, expected '\(literal)'", at: start)
        }
        position += length
    }

    // MARK: Numbers

    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = position
        let negative = base[position] == ASCII.minus
        if negative { position += 1 }
        guard position < count, isDigit(base[position]) else {
            throw expected("a digit after '-'")
        }
        let digitsStart = position
        if base[position] == ASCII.zero {
            position += 1
            if position < count, isDigit(base[position]) {
                throw error("leading zeros are not allowed in numbers", at: start)
            }
        } else {
            while position < count, isDigit(base[position]) { position += 1 }
        }
        let digitsEnd = position
        var isInteger = true
        var fractionEnd = digitsEnd
        if position < count, base[position] == ASCII.dot {
            isInteger = false
            position += 1
            guard position < count, isDigit(base[position]) else {
                throw expected("a digit after the decimal point")
            }
            while position < count, isDigit(base[position]) { position += 1 }
            fractionEnd = position
        }
        var exponentStart = position
        if position < count, base[position] == ASCII.lowerE || base[position] == ASCII.upperE {
            isInteger = false
            position += 1
            exponentStart = position
            if position < count, base[position] == ASCII.plus || base[position] == ASCII.minus {
                position += 1
            }
            guard position < count, isDigit(base[position]) else {
                throw expected("a digit in the exponent")
            }
            while position < count, isDigit(base[position]) { position += 1 }
        }

        if isInteger {
            // "-0" has no Int64 form; as a double it keeps its sign through a
            // parse/serialize round trip.
            if negative, digitsEnd - digitsStart == 1, base[digitsStart] == ASCII.zero {
                return .number(-0.0)
            }
            if let value = integerValue(digitsStart: digitsStart, digitsEnd: digitsEnd, negative: negative) {
                return .integer(value)
            }
            if !approximatesBigIntegers {
                let digits = position - start <= 40 ? "the integer " + text(from: start) : "an integer of \(digitsEnd - digitsStart) digits"
                throw error(.integerOutOfRange, "\(digits) does not fit 64 bits (integers are kept exact from -9223372036854775808 to 9223372036854775807); send it as a string, or with a fraction or exponent for a double", at: start)
            }
        }
        if !isInteger, let value = exactDouble(digitsStart: digitsStart, digitsEnd: digitsEnd, fractionEnd: fractionEnd,
                                               exponentStart: exponentStart, negative: negative) {
            return .number(value)
        }
        let literal = text(from: start)
        guard let value = Double(literal), value.isFinite else {
            throw error("number \(literal) is out of range", at: start)
        }
        return .number(value)
    }

    /// The input from `start` to the current position.
    func text(from start: Int) -> String {
        String(decoding: UnsafeBufferPointer(start: base + start, count: position - start), as: UTF8.self)
    }

    /// The digits as an Int64, or nil when they overflow it. Accumulating
    /// negatively lets Int64.min parse exactly.
    func integerValue(digitsStart: Int, digitsEnd: Int, negative: Bool) -> Int64? {
        var value: Int64 = 0
        if digitsEnd - digitsStart <= 18 {
            // 18 digits always fit, so the checks can be skipped.
            for index in digitsStart..<digitsEnd {
                value = value &* 10 &+ Int64(base[index] &- ASCII.zero)
            }
            return negative ? -value : value
        }
        for index in digitsStart..<digitsEnd {
            let digit = Int64(base[index] &- ASCII.zero)
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowB) = negative
                ? shifted.subtractingReportingOverflow(digit)
                : shifted.addingReportingOverflow(digit)
            if overflowA || overflowB { return nil }
            value = next
        }
        return value
    }

    /// The double a decimal literal stands for, when it can be computed exactly without `strtod`:
    /// a significand of at most 15 digits (below 2^53, so exact as a double) and a power of ten of
    /// at most 22 (exact as well), joined by one multiplication or division, which rounds once,
    /// correctly (Clinger's fast path). Nil otherwise, for the general conversion.
    func exactDouble(digitsStart: Int, digitsEnd: Int, fractionEnd: Int, exponentStart: Int, negative: Bool) -> Double? {
        let fractionDigits = fractionEnd > digitsEnd ? fractionEnd - digitsEnd - 1 : 0
        guard digitsEnd - digitsStart + fractionDigits <= 15 else { return nil }
        var significand: UInt64 = 0
        for index in digitsStart..<digitsEnd { significand = significand &* 10 &+ UInt64(base[index] &- ASCII.zero) }
        if fractionDigits > 0 {
            for index in (digitsEnd + 1)..<fractionEnd { significand = significand &* 10 &+ UInt64(base[index] &- ASCII.zero) }
        }
        var exponent = -fractionDigits
        if exponentStart < position {
            var index = exponentStart
            let negativeExponent = base[index] == ASCII.minus
            if base[index] == ASCII.minus || base[index] == ASCII.plus { index += 1 }
            guard position - index <= 3 else { return nil }
            var written = 0
            while index < position {
                written = written * 10 + Int(base[index] &- ASCII.zero)
                index += 1
            }
            exponent += negativeExponent ? -written : written
        }
        guard exponent >= -22 && exponent <= 22 else { return nil }
        let magnitude = exponent < 0 ? Double(significand) / Self.powersOfTen[-exponent] : Double(significand) * Self.powersOfTen[exponent]
        return negative ? -magnitude : magnitude
    }

    /// 10^0 through 10^22, every one exact as a double.
    static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    @inline(__always)
    func isDigit(_ byte: UInt8) -> Bool {
        byte &- ASCII.zero < 10
    }

    // MARK: Strings

    /// Parses a string starting at its opening quote.
    mutating func parseString() throws(JSONParseError) -> String {
        switch try parseStringContent() {
        case .unescaped(let bytes): string(bytes)
        case .decoded(let string): string
        }
    }

    /// The String of bytes the reader has checked, from this thread's recent ones when it is there.
    @inline(__always)
    mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        threadScratch().pointee.strings.string(bytes)
    }

    @inline(__always)
    mutating func threadScratch() -> UnsafeMutablePointer<JSONParserScratch> {
        if let scratchPointer { return scratchPointer }
        let scratch = JSONParserScratch.current
        scratchPointer = scratch
        stackStart = (scratch.pointee.stack.keyCount, scratch.pointee.stack.valueCount)
        return scratch
    }

    /// Ends a parse, failed or not: drops what a failed one left on the stack, and gives back what
    /// a large document grew it by once no parse is using it.
    mutating func endParse() {
        guard let scratchPointer else { return }
        scratchPointer.pointee.stack.unwind(keysTo: stackStart.keys, valuesTo: stackStart.values)
        scratchPointer.pointee.stack.trimIfEmpty()
    }

    /// A string's content: without escapes, its own bytes between the quotes (checked UTF-8, so
    /// no String need be made to hold them); with escapes, decoded.
    enum StringContent {
        case unescaped(UnsafeBufferPointer<UInt8>)
        case decoded(String)
    }

    @inline(__always)
    mutating func parseStringContent() throws(JSONParseError) -> StringContent {
        let quoteOffset = position
        position += 1
        let start = position
        // Printable ASCII first (the common string is all of it): the loop below then starts at
        // the first byte that needs a look.
        position = plainRunEnd(from: position)
        // Fast path: no escapes, so the bytes between the quotes are the
        // string's UTF-8 as is.
        while position < count {
            let byte = base[position]
            if byte == ASCII.quote {
                let content = UnsafeBufferPointer(start: base + start, count: position - start)
                position += 1
                return .unescaped(content)
            }
            if byte == ASCII.backslash {
                return .decoded(try parseEscapedString(contentStart: start, quoteOffset: quoteOffset))
            }
            if byte < ASCII.space {
                throw controlCharacterError(byte)
            }
            if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw error("unterminated string", at: quoteOffset)
    }

    /// The offset of the first byte at or after `start` that ends a run of plain string content
    /// (printable ASCII but `"` and `\\`), or `count`.
    @inline(__always)
    func plainRunEnd(from start: Int) -> Int {
        ByteScan.firstIndex(
            in: base, from: start, to: count,
            wordStops: { $0.lanes(equalTo: ASCII.quote) | $0.lanes(equalTo: ASCII.backslash) | $0.lanes(below: ASCII.space) | $0.nonASCIILanes },
            // One unsigned compare for both ends: below a space, or not ASCII.
            byteStops: { $0 == ASCII.quote || $0 == ASCII.backslash || $0 &- ASCII.space >= 0x60 })
    }

    /// Slow path: decodes into `scratch`, starting with the plain bytes the
    /// fast path already checked.
    mutating func parseEscapedString(contentStart: Int, quoteOffset: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var runStart = contentStart
        while position < count {
            let byte = base[position]
            if byte == ASCII.quote || byte == ASCII.backslash {
                scratch.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: position - runStart))
                if byte == ASCII.quote {
                    position += 1
                    return String(decoding: scratch, as: UTF8.self)
                }
                try parseEscape()
                runStart = position
            } else if byte < ASCII.space {
                throw controlCharacterError(byte)
            } else if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw error("unterminated string", at: quoteOffset)
    }

    /// Decodes the escape at `position` (a backslash) into `scratch`.
    mutating func parseEscape() throws(JSONParseError) {
        let escapeOffset = position
        guard position + 1 < count else {
            position = count
            throw expected("an escape character after '\\'")
        }
        let escaped = base[position + 1]
        position += 2
        switch escaped {
        case ASCII.quote, ASCII.backslash, ASCII.slash:
            scratch.append(escaped)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case ASCII.lowerU:
            let unit = try parseHexQuad(escapeOffset: escapeOffset)
            let scalarValue: UInt32
            switch unit {
            case 0xD800...0xDBFF:
                let lowOffset = position
                guard position + 1 < count, base[position] == ASCII.backslash, base[position + 1] == ASCII.lowerU else {
                    throw error("unpaired high surrogate \\u\(hex4(unit)) in string", at: escapeOffset)
                }
                position += 2
                let low = try parseHexQuad(escapeOffset: lowOffset)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error("unpaired high surrogate \\u\(hex4(unit)) in string", at: escapeOffset)
                }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            case 0xDC00...0xDFFF:
                throw error("unpaired low surrogate \\u\(hex4(unit)) in string", at: escapeOffset)
            default:
                scalarValue = UInt32(unit)
            }
            // Surrogates were excluded above, so the value is a valid scalar.
            let scalar = Unicode.Scalar(scalarValue)!
            UTF8.encode(scalar) { scratch.append($0) }
        default:
            throw error("invalid escape sequence \(describeEscape(escaped)) in string", at: escapeOffset)
        }
    }

    mutating func parseHexQuad(escapeOffset: Int) throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard position < count, let digit = hexDigitValue(base[position]) else {
                throw error("invalid \\u escape: expected 4 hexadecimal digits", at: escapeOffset)
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case ASCII.zero...ASCII.nine: return byte - ASCII.zero
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Checks one multi-byte UTF-8 sequence at `position` per RFC 3629
    /// (no overlong forms, no surrogates, nothing above U+10FFFF) and skips it.
    mutating func skipUTF8Sequence() throws(JSONParseError) {
        let lead = base[position]
        let length: Int
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF:
            length = 2
        case 0xE0:
            length = 3
            secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF:
            length = 3
        case 0xED:
            length = 3
            secondHigh = 0x9F
        case 0xF0:
            length = 4
            secondLow = 0x90
        case 0xF1...0xF3:
            length = 4
        case 0xF4:
            length = 4
            secondHigh = 0x8F
        default:
            throw error("invalid UTF-8 byte 0x\(hex2(lead)) in string", at: position)
        }
        for offset in 1..<length {
            let index = position + offset
            guard index < count else {
                throw error("truncated UTF-8 sequence in string", at: position)
            }
            let byte = base[index]
            let low = offset == 1 ? secondLow : 0x80
            let high = offset == 1 ? secondHigh : 0xBF
            guard byte >= low, byte <= high else {
                throw error("invalid UTF-8 sequence in string", at: position)
            }
        }
        position += length
    }

    // MARK: Whitespace

    @inline(__always)
    mutating func skipWhitespace() {
        while position < count {
            switch base[position] {
            case ASCII.space, ASCII.newline, ASCII.carriageReturn, ASCII.tab:
                position += 1
            default:
                return
            }
        }
    }

    // MARK: Errors

    /// An error for "wanted X here": at the end of input it says so, since
    /// pointing at a position past the last byte is otherwise confusing.
    func expected(_ what: String) -> JSONParseError {
        if position >= count {
            return error("unexpected end of input, expected \(what)", at: count)
        }
        return error("expected \(what)", at: position)
    }

    func controlCharacterError(_ byte: UInt8) -> JSONParseError {
        error("unescaped control character U+00\(hex2(byte)) in string", at: position)
    }

    /// Line and column are computed only here, on failure, so the hot path
    /// never tracks them.
    func error(_ message: String, at offset: Int) -> JSONParseError {
        error(.syntax, message, at: offset)
    }

    func error(_ kind: JSONParseError.Kind, _ message: String, at offset: Int) -> JSONParseError {
        var line = 1
        var column = 1
        var index = 0
        let end = min(offset, count)
        while index < end {
            let byte = base[index]
            if byte == ASCII.newline {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        return JSONParseError(kind: kind, message: message, offset: offset, line: line, column: column)
    }

    func describeByte(at offset: Int) -> String {
        guard offset < count else { return "end of input" }
        let byte = base[offset]
        if byte > ASCII.space, byte < 0x7F {
            return "character '\(Character(Unicode.Scalar(byte)))'"
        }
        return "byte 0x\(hex2(byte))"
    }

    func describeEscape(_ byte: UInt8) -> String {
        if byte > ASCII.space, byte < 0x7F {
            return "'\\\(Character(Unicode.Scalar(byte)))'"
        }
        return "'\\' followed by byte 0x\(hex2(byte))"
    }
}

private let hexDigits: [Character] = Array("0123456789ABCDEF")

private func hex2(_ byte: UInt8) -> String {
    String([hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
}

private func hex4(_ unit: UInt16) -> String {
    hex2(UInt8(unit >> 8)) + hex2(UInt8(unit & 0xFF))
}

/// The prints of a small object's keys, held in the parser's stack frame: no allocation per object.
struct SmallObjectKeyPrints {
    /// How many members an object gathers in arrays before it becomes a dictionary with a hash table.
    static var capacity: Int { 15 }
    private var prints: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                         UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// Where `key` is among `keys`, whose prints these are: strings are compared only where the
    /// prints are equal, unless they are not exact (a key written with escapes).
    @inline(__always)
    mutating func firstIndex(of key: String, print: UInt64, among keys: UnsafeBufferPointer<String>, printsAreExact: Bool) -> Int? {
        precondition(keys.count <= Self.capacity)
        return withUnsafeMutableBytes(of: &prints) { raw in
            let prints = raw.bindMemory(to: UInt64.self)
            for index in keys.indices where !printsAreExact || prints[index] == print {
                if keys[index] == key { return index }
            }
            return nil
        }
    }

    @inline(__always)
    mutating func set(_ print: UInt64, at index: Int) {
        precondition(index >= 0 && index < Self.capacity)
        withUnsafeMutableBytes(of: &prints) { $0.storeBytes(of: print, toByteOffset: index &* 8, as: UInt64.self) }
    }
}
