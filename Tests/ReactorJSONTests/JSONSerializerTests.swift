@testable import ReactorJSON
import XCTest

final class JSONSerializerTests: XCTestCase {
    func testWritesCompactOutputInInsertionOrder() {
        let value: JSON = ["z": [1, true, nil], "a": ["k": "v"], "m": [:], "e": []]
        XCTAssertEqual(value.jsonString, #"{"z":[1,true,null],"a":{"k":"v"},"m":{},"e":[]}"#)
    }

    func testAppendsToAnExistingBuffer() {
        var buffer = Array("data: ".utf8)
        JSON.array([1, "x"]).write(into: &buffer)
        XCTAssertEqual(String(decoding: buffer, as: UTF8.self), #"data: [1,"x"]"#)
    }

    func testEscapesQuotesBackslashesAndControlCharacters() {
        let value = JSON.string("\"\\/\u{8}\u{C}\n\r\t\u{0}\u{1}\u{1F}\u{7F}é😀\u{2028}")
        XCTAssertEqual(value.jsonString, #""\"\\/\b\f\n\r\t\u0000\u0001\u001f"# + "\u{7F}é😀\u{2028}\"")
    }

    func testEscapesKeys() {
        let value: JSON = ["a\"b\n": 1]
        XCTAssertEqual(value.jsonString, #"{"a\"b\n":1}"#)
    }

    func testWritesIntegersExactly() {
        XCTAssertEqual(JSON.integer(0).jsonString, "0")
        XCTAssertEqual(JSON.integer(-7).jsonString, "-7")
        XCTAssertEqual(JSON.integer(.max).jsonString, "9223372036854775807")
        XCTAssertEqual(JSON.integer(.min).jsonString, "-9223372036854775808")
    }

    func testWritesDoublesInShortestRoundTripForm() throws {
        XCTAssertEqual(JSON.number(0.1).jsonString, "0.1")
        XCTAssertEqual(JSON.number(1.0).jsonString, "1.0")
        XCTAssertEqual(JSON.number(-0.0).jsonString, "-0.0")
        XCTAssertEqual(JSON.number(1e300).jsonString, "1e+300")
        XCTAssertEqual(JSON.number(.leastNonzeroMagnitude).jsonString, "5e-324")
        for value in [0.1, 1.0 / 3.0, 1e300, .leastNonzeroMagnitude, -2.5e-7, .greatestFiniteMagnitude] {
            let parsed = try JSON(parsing: JSON.number(value).jsonString)
            XCTAssertEqual(parsed.doubleValue, value)
        }
    }

    func testWritesNonFiniteDoublesAsNull() {
        XCTAssertEqual(JSON.array([.number(.nan), .number(.infinity), .number(-.infinity)]).jsonString, "[null,null,null]")
    }

    func testDescriptionIsTheJSONText() {
        let value: JSON = ["a": [1.5, "s"]]
        XCTAssertEqual("\(value)", #"{"a":[1.5,"s"]}"#)
    }
}
