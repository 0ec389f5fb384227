@testable import ReactorJSON
import XCTest

final class JSONParserTests: XCTestCase {
    // MARK: Accepted documents

    func testParsesScalarsAtTopLevel() throws {
        XCTAssertEqual(try JSON(parsing: "null"), .null)
        XCTAssertEqual(try JSON(parsing: "true"), .bool(true))
        XCTAssertEqual(try JSON(parsing: "false"), .bool(false))
        XCTAssertEqual(try JSON(parsing: "\"x\""), .string("x"))
        XCTAssertEqual(try JSON(parsing: "42"), .integer(42))
        XCTAssertEqual(try JSON(parsing: " \t\r\n 7 \n"), .integer(7))
    }

    func testParsesNestedStructure() throws {
        let value = try JSON(parsing: #"{"a":[1,{"b":null,"c":[true,false]}],"d":{},"e":[],"":0}"#)
        let expected: JSON = [
            "a": [1, ["b": nil, "c": [true, false]]],
            "d": [:],
            "e": [],
            "": 0,
        ]
        XCTAssertEqual(value, expected)
        XCTAssertEqual(value.objectValue.map { Array($0.keys) }, ["a", "d", "e", ""])
    }

    func testParsesFromRawBuffer() throws {
        let bytes = Array(#"{"k":[1,2]}"#.utf8)
        let value = try bytes.withUnsafeBytes { raw in try JSON(parsing: raw) }
        XCTAssertEqual(value, ["k": [1, 2]])
    }

    func testKeepsInsertionOrderOfMembers() throws {
        let value = try JSON(parsing: #"{"z":1,"a":2,"m":3}"#)
        XCTAssertEqual(value.objectValue.map { Array($0.keys) }, ["z", "a", "m"])
    }

    func testDuplicateKeysKeepLastValueAtFirstPositionByDefault() throws {
        let value = try JSON(parsing: #"{"a":1,"b":2,"a":3}"#)
        XCTAssertEqual(value.jsonString, #"{"a":3,"b":2}"#)
    }

    /// Keys written with escapes, keys of eight bytes and more (whose prints may collide), and
    /// objects past the small-object limit (inserted with hashing) all find their duplicates.
    func testDuplicateKeysAreFoundHoweverTheyAreWrittenAndHoweverLargeTheObject() throws {
        let escaped = try JSON(parsing: #"{"ab":1,"player100":2,"a\u0062":3,"player101":4,"player100":5}"#)
        XCTAssertEqual(escaped.jsonString, #"{"ab":3,"player100":5,"player101":4}"#)
        let sameEnds = try JSON(parsing: #"{"abcdefgh-1-abcdefgh":1,"abcdefgh-2-abcdefgh":2,"abcdefgh-1-abcdefgh":3}"#)
        XCTAssertEqual(sameEnds.jsonString, #"{"abcdefgh-1-abcdefgh":3,"abcdefgh-2-abcdefgh":2}"#)
        for size in [14, 15, 16, 40] {
            let members = (0..<size).map { "\"k\($0)\":\($0)" } + ["\"k0\":\"first\"", "\"k\(size - 1)\":\"last\""]
            let value = try JSON(parsing: "{" + members.joined(separator: ",") + "}")
            let object = try XCTUnwrap(value.objectValue)
            XCTAssertEqual(Array(object.keys), (0..<size).map { "k\($0)" }, "\(size) members")
            XCTAssertEqual(object["k0"], "first")
            XCTAssertEqual(object["k\(size - 1)"], "last")
            let strict = expectParseError("{" + members.joined(separator: ",") + "}", parser: JSONParser(duplicateKeys: .reject))
            XCTAssertEqual(strict?.message, #"duplicate key "k0" in object"#, "\(size) members")
        }
        // Keys the dictionary takes for one (canonically equivalent) are one, written raw as escaped:
        // an object never holds two keys it cannot tell apart.
        for text in ["{\"\u{C5}\":1,\"A\u{30A}\":2}", #"{"\u00c5":1,"A\u030a":2}"#, "{\"k\":0,\"caf\u{E9}\":1,\"cafe\u{301}\":2}"] {
            let object = try XCTUnwrap(JSON(parsing: text).objectValue, text)
            XCTAssertEqual(object.count, text.hasPrefix("{\"k\"") ? 2 : 1, text)
            XCTAssertEqual(object.values.last, 2, text)
        }
        let nested = try JSON(parsing: #"{"a":{"a":1,"b":{"a":2,"a":3}},"b":4,"a":5}"#)
        XCTAssertEqual(nested.jsonString, #"{"a":5,"b":4}"#)
        let inner = try JSON(parsing: #"{"x":{"a":1,"b":{"a":2,"a":3}},"y":{"a":4}}"#)
        XCTAssertEqual(inner.jsonString, #"{"x":{"a":1,"b":{"a":3}},"y":{"a":4}}"#)
    }

    /// Random objects whose keys repeat, some written with escapes, some sharing their first and
    /// last eight bytes: each parses as members inserted one by one would make it.
    func testRandomObjectsWithRepeatedKeysParseAsMembersInsertedOneByOne() throws {
        var generator = SystemRandomNumberGenerator()
        let names = ["a", "b", "ab", "name", "player-1-of-many-x", "player-2-of-many-x", "abcdefgh", "abcdefgi", "", "é"]
        for _ in 0..<500 {
            var expected = JSON.Object()
            var members: [String] = []
            for index in 0..<Int.random(in: 1...40, using: &generator) {
                let name = names.randomElement(using: &generator)!
                // Every other occurrence of an ASCII letter written as an escape.
                let written = Bool.random(using: &generator) && name.first?.isASCII == true && !name.isEmpty
                    ? String(format: "\\u%04x", name.unicodeScalars.first!.value) + name.dropFirst()
                    : name
                members.append("\"\(written)\":\(index)")
                expected.updateValue(JSON.integer(Int64(index)), forKey: name)
            }
            let text = "{" + members.joined(separator: ",") + "}"
            let parsed = try JSON(parsing: text)
            XCTAssertEqual(parsed, .object(expected), text)
            XCTAssertEqual(parsed.objectValue.map { Array($0.keys) }, Array(expected.keys), text)
        }
    }

    func testDuplicateKeysCanBeRejected() throws {
        let error = expectParseError(#"{"a":1,"a":2}"#, parser: JSONParser(duplicateKeys: .reject))
        XCTAssertEqual(error?.message, #"duplicate key "a" in object"#)
        XCTAssertEqual(error?.offset, 7)
    }

    // MARK: Numbers

    /// Decimals read without `strtod` where that is exact (at most 15 significant digits, a power
    /// of ten up to 22) give the very double `strtod` gives, bit for bit; the rest go through it.
    func testDecimalsGiveTheSameDoubleAsTheGeneralConversion() throws {
        var random = SystemRandomNumberGenerator()
        func digits(_ count: Int) -> String {
            String((0..<count).map { _ in Character(String(Int.random(in: 0...9, using: &random))) })
        }
        var literals = ["0.0", "-0.0", "0.1", "0.2", "0.3", "1.5", "-2.25", "123456789012345.6", "1.7976931348623157e308",
                        "4.9e-324", "2.2250738585072014e-308", "1e22", "1e23", "1.0e-22", "9007199254740993.0", "0.000001",
                        "123.456e-5", "5E+2", "5e-0", "1.000000000000001", "0.1e0000001"]
        for _ in 0..<20_000 {
            let whole = Int.random(in: 1...12, using: &random)
            let fraction = Int.random(in: 0...(18 - whole), using: &random)
            var literal = (Bool.random(using: &random) ? "-" : "") + String(Int.random(in: 1...9, using: &random)) + digits(whole - 1)
            if fraction > 0 { literal += "." + digits(fraction) }
            if fraction == 0 || Bool.random(using: &random) { literal += "e" + String(Int.random(in: -30...30, using: &random)) }
            literals.append(literal)
        }
        for literal in literals {
            let parsed = try JSON(parsing: literal)
            let expected = try XCTUnwrap(Double(literal))
            guard case .number(let value) = parsed else { return XCTFail("\(literal) parsed as \(parsed)") }
            XCTAssertEqual(value.bitPattern, expected.bitPattern, "\(literal): \(value) against \(expected)")
        }
    }

    func testIntegersThatFitInt64AreExact() throws {
        XCTAssertEqual(try JSON(parsing: "0"), .integer(0))
        XCTAssertEqual(try JSON(parsing: "-1"), .integer(-1))
        XCTAssertEqual(try JSON(parsing: "123456789012345678"), .integer(123_456_789_012_345_678))
        XCTAssertEqual(try JSON(parsing: "9223372036854775807"), .integer(.max))
        XCTAssertEqual(try JSON(parsing: "-9223372036854775808"), .integer(.min))
        guard case .integer = try JSON(parsing: "9223372036854775807") else {
            return XCTFail("Int64.max must stay an integer")
        }
    }

    func testIntegersBeyondInt64AreRefusedSoThatIntegersStayExact() {
        for text in ["9223372036854775808", "-9223372036854775809", "18446744073709551616", "1" + String(repeating: "0", count: 100), "[1, 99999999999999999999]"] {
            XCTAssertThrowsError(try JSON(parsing: text), text) { error in
                XCTAssertEqual((error as? JSONParseError)?.kind, .integerOutOfRange, text)
            }
        }
        // A fraction or an exponent makes a double, however large.
        XCTAssertEqual(try JSON(parsing: "18446744073709551616.0"), .number(18_446_744_073_709_551_616.0))
        XCTAssertEqual(try JSON(parsing: "1e100"), .number(1e100))
    }

    func testIntegersBeyondInt64BecomeDoublesWhenAskedTo() throws {
        let parser = JSONParser(integersBeyond64Bits: .approximate)
        guard case .number(let above) = try parser.parse("9223372036854775808") else {
            return XCTFail("expected a double")
        }
        XCTAssertEqual(above, 9_223_372_036_854_775_808.0)
        guard case .number(let below) = try parser.parse("-9223372036854775809") else {
            return XCTFail("expected a double")
        }
        XCTAssertEqual(below, -9_223_372_036_854_775_809.0)
        guard case .number(let huge) = try parser.parse("1" + String(repeating: "0", count: 30)) else {
            return XCTFail("expected a double")
        }
        XCTAssertEqual(huge, 1e30)
    }

    func testFractionsAndExponentsAreDoubles() throws {
        XCTAssertEqual(try JSON(parsing: "1.5"), .number(1.5))
        XCTAssertEqual(try JSON(parsing: "-123.456e-7"), .number(-123.456e-7))
        XCTAssertEqual(try JSON(parsing: "1E2"), .number(100))
        XCTAssertEqual(try JSON(parsing: "1e+2"), .number(100))
        XCTAssertEqual(try JSON(parsing: "0.1"), .number(0.1))
        guard case .number(let value) = try JSON(parsing: "1.0") else {
            return XCTFail("1.0 must stay a double, so it serializes back as 1.0")
        }
        XCTAssertEqual(value, 1.0)
    }

    func testNegativeZeroKeepsItsSign() throws {
        guard case .number(let value) = try JSON(parsing: "-0") else {
            return XCTFail("-0 must be a double")
        }
        XCTAssertEqual(value, 0)
        XCTAssertEqual(value.sign, .minus)
        XCTAssertEqual(try JSON(parsing: "-0"), .integer(0), "-0 equals 0 by value")
    }

    func testOverflowingNumbersAreRejected() {
        let error = expectParseError("[1e400]")
        XCTAssertEqual(error?.message, "number 1e400 is out of range")
        XCTAssertEqual(error?.offset, 1)
        XCTAssertEqual(expectParseError("-1e309")?.message, "number -1e309 is out of range")
    }

    func testUnderflowingNumbersBecomeZero() throws {
        XCTAssertEqual(try JSON(parsing: "1e-400"), .number(0))
    }

    // MARK: Strings

    func testDecodesEscapes() throws {
        let value = try JSON(parsing: #""a\"b\\c\/d\be\ff\ng\rh\ti\u0041\u00e9\u20AC""#)
        XCTAssertEqual(value, .string("a\"b\\c/d\u{8}e\u{C}f\ng\rh\tiAé€"))
    }

    func testDecodesEscapedNul() throws {
        XCTAssertEqual(try JSON(parsing: #""\u0000""#), .string("\u{0}"))
    }

    func testDecodesSurrogatePairs() throws {
        XCTAssertEqual(try JSON(parsing: #""\uD834\uDD1E""#), .string("𝄞"))
        XCTAssertEqual(try JSON(parsing: #""x\ud83d\ude00y""#), .string("x😀y"))
        XCTAssertEqual(try JSON(parsing: #""\uDBFF\uDFFF""#), .string("\u{10FFFF}"))
    }

    func testAcceptsRawMultibyteUTF8() throws {
        XCTAssertEqual(try JSON(parsing: "\"é€😀\u{2028}\u{7F}\""), .string("é€😀\u{2028}\u{7F}"))
        XCTAssertEqual(try JSON(parsing: "{\"ключ\":\"значение\"}"), ["ключ": "значение"])
    }

    func testEscapesMixedWithRawText() throws {
        XCTAssertEqual(try JSON(parsing: #""héllo\nwörld\t😀 \"q\"""#), .string("héllo\nwörld\t😀 \"q\""))
    }

    // MARK: Rejected documents (in the spirit of JSONTestSuite's n_ cases)

    /// Plain runs of a string are read eight bytes at a time: each byte that ends one (quote,
    /// backslash, control character, byte above 0x7F) must be found at every place in a word,
    /// with plain bytes of every kind on both sides of it.
    func testEveryKindOfSpecialByteIsFoundWhereverItFalls() throws {
        let filler = Array("az ~!#[]{}09".utf8)
        for length in 1...20 {
            for position in 0..<length {
                var plain = (0..<length).map { filler[($0 + position) % filler.count] }
                let text = String(decoding: plain, as: UTF8.self)
                XCTAssertEqual(try JSON(parsing: Array("\"\(text)\"".utf8)), .string(text))
                let (keyReading, keys, _) = try JSONMemberReaderTests.members(Array("{\"\(text)\":1}".utf8))
                XCTAssertEqual(keyReading, .finished)
                XCTAssertEqual(keys, [text])

                plain[position] = UInt8(ascii: "\"")
                let cut = String(decoding: plain[..<position], as: UTF8.self)
                XCTAssertThrowsError(try JSON(parsing: [UInt8(ascii: "\"")] + plain + [UInt8(ascii: "\"")]), "quote at \(position) of \(length)")
                XCTAssertEqual(try JSON(parsing: [UInt8(ascii: "\"")] + plain[...position]), .string(cut))

                plain[position] = 0x1F
                XCTAssertThrowsError(try JSON(parsing: [UInt8(ascii: "\"")] + plain + [UInt8(ascii: "\"")]), "control byte at \(position) of \(length)")

                var escaped = plain
                escaped.replaceSubrange(position...position, with: Array("\\n".utf8))
                let decoded = try JSON(parsing: [UInt8(ascii: "\"")] + escaped + [UInt8(ascii: "\"")])
                XCTAssertEqual(decoded.stringValue?.utf8.filter { $0 == 0x0A }.count, 1, "escape at \(position) of \(length)")

                var accented = plain
                accented.replaceSubrange(position...position, with: Array("é".utf8))
                let expected = String(decoding: accented, as: UTF8.self)
                XCTAssertEqual(try JSON(parsing: [UInt8(ascii: "\"")] + accented + [UInt8(ascii: "\"")]), .string(expected))
                let (reading, keys2, _) = try JSONMemberReaderTests.members(Array("{\"".utf8) + accented + Array("\":1}".utf8))
                XCTAssertEqual(reading, .finished)
                XCTAssertEqual(keys2, [expected])
            }
        }
    }

    func testRejectsInvalidDocuments() {
        let cases: [(input: [UInt8], message: String)] = [
            (bytes("[1,]"), "trailing comma before ']' is not allowed"),
            (bytes(#"{"a":1,}"#), "trailing comma before '}' is not allowed"),
            (bytes("[01]"), "leading zeros are not allowed in numbers"),
            (bytes("[-01]"), "leading zeros are not allowed in numbers"),
            (bytes("[00.5]"), "leading zeros are not allowed in numbers"),
            (bytes("[\"a\tb\"]"), "unescaped control character U+0009 in string"),
            (bytes("[\"a\nb\"]"), "unescaped control character U+000A in string"),
            ([0x22, 0x00, 0x22], "unescaped control character U+0000 in string"),
            (bytes(#"["\x"]"#), #"invalid escape sequence '\x' in string"#),
            (bytes(#"["\'"]"#), #"invalid escape sequence '\'' in string"#),
            (bytes(#"["\u12"]"#), #"invalid \u escape: expected 4 hexadecimal digits"#),
            (bytes(#"["\uZZZZ"]"#), #"invalid \u escape: expected 4 hexadecimal digits"#),
            (bytes(#"["\uD800"]"#), #"unpaired high surrogate \uD800 in string"#),
            (bytes(#"["\uD800\u0041"]"#), #"unpaired high surrogate \uD800 in string"#),
            (bytes(#"["\uD800\n"]"#), #"unpaired high surrogate \uD800 in string"#),
            (bytes(#"["\uDC00"]"#), #"unpaired low surrogate \uDC00 in string"#),
            ([0x22, 0xFF, 0x22], "invalid UTF-8 byte 0xFF in string"),
            ([0x22, 0x80, 0x22], "invalid UTF-8 byte 0x80 in string"),
            ([0x22, 0xC0, 0x80, 0x22], "invalid UTF-8 byte 0xC0 in string"),
            ([0x22, 0xE0, 0x80, 0x80, 0x22], "invalid UTF-8 sequence in string"),
            ([0x22, 0xED, 0xA0, 0x80, 0x22], "invalid UTF-8 sequence in string"),
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], "invalid UTF-8 sequence in string"),
            ([0x22, 0xE2, 0x82], "truncated UTF-8 sequence in string"),
            ([0x22, 0xC3, 0x22], "invalid UTF-8 sequence in string"),
            ([0xFF], "unexpected byte 0xFF, expected a JSON value"),
            (bytes("[1] x"), "unexpected character 'x' after the JSON value"),
            (bytes("{} {}"), "unexpected character '{' after the JSON value"),
            (bytes("[1]]"), "unexpected character ']' after the JSON value"),
            ([0x5B, 0x31, 0x5D, 0x00], "unexpected byte 0x00 after the JSON value"),
            (bytes(""), "unexpected end of input, expected a JSON value"),
            (bytes("   "), "unexpected end of input, expected a JSON value"),
            (bytes("[1 2]"), "expected ',' or ']' after array element"),
            (bytes(#"{"a" 1}"#), "expected ':' after object key"),
            (bytes(#"{"a":1 "b":2}"#), "expected ',' or '}' after object member"),
            (bytes("{a:1}"), "expected '\"' to start an object key"),
            (bytes("{'a':1}"), "expected '\"' to start an object key"),
            (bytes("[,1]"), "unexpected character ',', expected a JSON value"),
            (bytes(#"{"a":1,,"b":2}"#), "expected '\"' to start an object key"),
            (bytes("[.5]"), "unexpected character '.', expected a JSON value"),
            (bytes("[+1]"), "unexpected character '+', expected a JSON value"),
            (bytes("[1.]"), "expected a digit after the decimal point"),
            (bytes("[1.e5]"), "expected a digit after the decimal point"),
            (bytes("[1e]"), "expected a digit in the exponent"),
            (bytes("[1e+]"), "expected a digit in the exponent"),
            (bytes("[-]"), "expected a digit after '-'"),
            (bytes("[-a]"), "expected a digit after '-'"),
            (bytes("[0x10]"), "expected ',' or ']' after array element"),
            (bytes("[NaN]"), "unexpected character 'N', expected a JSON value"),
            (bytes("[Infinity]"), "unexpected character 'I', expected a JSON value"),
            (bytes("[tru]"), "invalid literal, expected 'true'"),
            (bytes("[nul]"), "invalid literal, expected 'null'"),
            (bytes("[fals"), "invalid literal, expected 'false'"),
            (bytes("[True]"), "unexpected character 'T', expected a JSON value"),
            (bytes("\"abc"), "unterminated string"),
            (bytes("\"abc\\"), "unexpected end of input, expected an escape character after '\\'"),
            (bytes("["), "unexpected end of input, expected a JSON value"),
            (bytes("[1"), "unexpected end of input, expected ',' or ']' after array element"),
            (bytes(#"{"a":1"#), "unexpected end of input, expected ',' or '}' after object member"),
            (bytes(#"{"a""#), "unexpected end of input, expected ':' after object key"),
            (bytes("{"), "unexpected end of input, expected '\"' to start an object key"),
            (bytes("/* comment */ []"), "unexpected character '/', expected a JSON value"),
            (bytes("[1]\u{0C}"), "unexpected byte 0x0C after the JSON value"),
            ([0xEF, 0xBB, 0xBF] + bytes("[]"), "a byte order mark is not allowed"),
        ]
        XCTAssertGreaterThanOrEqual(cases.count, 30)
        for (input, message) in cases {
            let error = expectParseError(input)
            XCTAssertEqual(error?.message, message, "input \(String(decoding: input, as: UTF8.self).debugDescription)")
        }
    }

    // MARK: Error positions

    func testReportsLineAndColumnOfMissingColon() {
        let error = expectParseError("{\n  \"a\": 1,\n  \"b\" 2\n}")
        XCTAssertEqual(error?.description, "expected ':' after object key at line 3, column 7")
        XCTAssertEqual(error?.offset, 18)
    }

    func testReportsLineAndColumnOfMissingComma() {
        let error = expectParseError("{\n  \"a\": 1\n  \"b\": 2\n}")
        XCTAssertEqual(error?.description, "expected ',' or '}' after object member at line 3, column 3")
    }

    func testReportsTrailingCommaAtTheComma() {
        let error = expectParseError("[\n  1,\n  2,\n]")
        XCTAssertEqual(error?.description, "trailing comma before ']' is not allowed at line 3, column 4")
    }

    func testCountsColumnsInScalarsNotBytes() {
        let error = expectParseError("[\"é€\", x]")
        XCTAssertEqual(error?.line, 1)
        XCTAssertEqual(error?.column, 8)
        XCTAssertEqual(error?.offset, 10)
    }

    func testReportsEndOfInputPosition() {
        let error = expectParseError("[1,\n")
        XCTAssertEqual(error?.description, "unexpected end of input, expected a JSON value at line 2, column 1")
        XCTAssertEqual(error?.offset, 4)
    }

    func testReportsUnterminatedStringAtItsOpeningQuote() {
        let error = expectParseError("{\"a\":\n  \"never closed}")
        XCTAssertEqual(error?.description, "unterminated string at line 2, column 3")
    }

    // MARK: Nesting

    func testAcceptsNestingUpToTheLimit() throws {
        let depth = 512
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var value = try JSON(parsing: text)
        var levels = 0
        while case .array(let elements) = value {
            levels += 1
            value = elements.first ?? .null
        }
        XCTAssertEqual(levels, depth)
    }

    func testRejectsNestingBeyondTheLimit() {
        let text = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let error = expectParseError(text)
        XCTAssertEqual(error?.message, "nesting depth exceeds the maximum of 512")
        XCTAssertEqual(error?.offset, 512)
    }

    func testDepthLimitIsConfigurableAndCountsObjects() throws {
        let parser = JSONParser(maxDepth: 3)
        XCTAssertEqual(try parser.parse(#"{"a":[{}]}"#), ["a": [[:]]])
        let error = expectParseError(#"{"a":[{"b":[]}]}"#, parser: parser)
        XCTAssertEqual(error?.message, "nesting depth exceeds the maximum of 3")
        XCTAssertEqual(error?.offset, 11)
    }

    func testDeepDocumentWithinLimitDoesNotOverflowTheStack() throws {
        let text = String(repeating: #"{"a":["#, count: 256) + String(repeating: "]}", count: 256)
        let value = try JSON(parsing: text)
        XCTAssertEqual(try JSON(parsing: value.jsonString), value)
    }

    // MARK: Round trip

    func testParseSerializeParseRoundTrip() throws {
        let texts = [
            #"{"name":"reactor","version":3,"ratio":0.25,"tags":["a","b"],"nested":{"deep":[null,true,false,-0.0]}}"#,
            #"["\u0000\u001f\"\\/\b\f\n\r\t","é😀\u2028"]"#,
            "[1e300,-1e-300,123456789.123,9223372036854775807,-9223372036854775808,1.0]",
        ]
        for text in texts {
            let first = try JSON(parsing: text)
            let serialized = first.jsonBytes
            let second = try JSON(parsing: serialized)
            XCTAssertEqual(first, second)
            XCTAssertEqual(second.jsonBytes, serialized, "serialization must be stable")
        }
    }

    private func bytes(_ text: String) -> [UInt8] {
        Array(text.utf8)
    }
}

final class JSONMemberReaderTests: XCTestCase {
    private func members(_ text: String, stopAfter limit: Int = .max) throws -> (JSONMemberReading, [String], [JSON]) {
        try Self.members(Array(text.utf8), stopAfter: limit)
    }

    static func members(_ text: [UInt8], stopAfter limit: Int = .max) throws -> (JSONMemberReading, [String], [JSON]) {
        var keys: [String] = []
        var values: [JSON] = []
        let reading = try text.withUnsafeBytes { bytes throws(JSONParseError) in
            try JSONParser().forEachMember(in: bytes) { key, value in
                keys.append(String(decoding: key, as: UTF8.self))
                values.append(value.json)
                return keys.count < limit
            }
        }
        return (reading, keys, values)
    }

    func testMembersComeInOrderWithDecodedKeysAndRepeatsKept() throws {
        let (reading, keys, values) = try members(#" {"b": 1, "a\u00e9\n": [true], "b": {"c": null}} "#)
        XCTAssertEqual(reading, .finished)
        XCTAssertEqual(keys, ["b", "aé\n", "b"])
        XCTAssertEqual(values, [1, [true], ["c": nil]])
        XCTAssertEqual(try members("{}").0, .finished)
    }

    func testStringsWithoutEscapesComeAsTheirBytesOthersParsed() throws {
        var seen: [String: String] = [:]
        let text = #"{"plain": "caf\u00e9?", "raw": "café", "n": 1, "list": ["x"]}"#
        _ = try Array(text.utf8).withUnsafeBytes { bytes throws(JSONParseError) in
            try JSONParser().forEachMember(in: bytes) { key, value in
                switch value {
                case .unescapedString(let content): seen[String(decoding: key, as: UTF8.self)] = "bytes " + String(decoding: content, as: UTF8.self)
                case .parsed(let json): seen[String(decoding: key, as: UTF8.self)] = "parsed " + json.jsonString
                }
                return true
            }
        }
        XCTAssertEqual(seen, ["plain": #"parsed "café?""#, "raw": "bytes café", "n": "parsed 1", "list": #"parsed ["x"]"#])
        XCTAssertEqual(JSONMemberValue.unescapedString(UnsafeRawBufferPointer(start: nil, count: 0)).json, "")
    }

    func testStoppingAndNonObjects() throws {
        let (reading, keys, _) = try members(#"{"a": 1, "b": 2, "c": 3}"#, stopAfter: 2)
        XCTAssertEqual(reading, .stopped)
        XCTAssertEqual(keys, ["a", "b"])
        for text in ["[1]", "1", "\"s\"", "null", " true "] {
            XCTAssertEqual(try members(text).0, .notAnObject, text)
        }
    }

    func testMalformedDocumentsFailWithTheParsersOwnError() {
        for text in [#"{"a" 1}"#, #"{"a": 1,}"#, #"{"a": 1} x"#, #"{"a": [1,}"#, #"{"a": "\x"}"#, #"{a: 1}"#, "{", "",
                     "\u{FEFF}{}", #"{"a": 01}"#, #"{"a": 1"#, "{\"\u{1}\": 1}"] {
            var parseError: JSONParseError?
            do { _ = try JSON(parsing: text) } catch { parseError = error }
            var readError: JSONParseError?
            do { _ = try members(text) } catch { readError = error as? JSONParseError }
            XCTAssertNotNil(parseError, text)
            XCTAssertEqual(readError, parseError, text)
        }
    }
}
