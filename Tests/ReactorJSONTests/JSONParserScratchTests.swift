import TestSupport
import XCTest

@testable import ReactorJSON

/// What a parser keeps per thread between parses: the recent strings it hands out again, and the
/// stack it gathers containers' members on, which every parse, failed or nested, leaves as it found it.
final class JSONParserScratchTests: XCTestCase {
    private var stackLevel: (keys: Int, values: Int) {
        let stack = JSONParserScratch.current.pointee.stack
        return (stack.keyCount, stack.valueCount)
    }

    func testARecentStringIsTheStringOfItsBytesWhateverSharedItsSlot() {
        var random = SeededRandom(seed: 0x5157)
        let alphabet = Array("aé-Z0_😀".unicodeScalars)
        // Far more distinct strings than slots, each asked for twice, so slots are taken over.
        var texts: [String] = [""]
        for _ in 0..<3000 {
            var text = ""
            for _ in 0..<Int.random(in: 1...9, using: &random) { text.unicodeScalars.append(alphabet.randomElement(using: &random)!) }
            texts.append(text)
        }
        let strings = JSONParserScratch.current.pointee.strings
        for text in texts + texts.reversed() + texts {
            var text = text
            let made = text.withUTF8 { strings.string($0) }
            XCTAssertEqual(made, text)
            XCTAssertEqual(Array(made.utf8), Array(text.utf8), "the same bytes, not only an equivalent string")
        }
    }

    func testStringsOfEveryShortLengthAreTold() throws {
        // Lengths 0 to 16 around the two words a short string is known by: each differs from the
        // next only in its last byte.
        for length in 0...16 {
            let base = String(repeating: "k", count: length)
            let document = #"{"\#(base)":1,"\#(base)x":2,"\#(base)y":3}"#
            let parsed = try JSONParser().parse(document)
            XCTAssertEqual(parsed, .object([base: .number(1), base + "x": .number(2), base + "y": .number(3)]))
        }
    }

    func testAFailedParseLeavesTheStackAsItFoundIt() throws {
        let before = stackLevel
        let truncated = [
            #"{"a":[1,2,{"b":[true,{"c":"#, #"[[[{"k":1,"l":[1,2"#, #"{"a":1,"a":2,"#, #"[1,2,3,{"x":nul]"#,
        ]
        for text in truncated {
            XCTAssertThrowsError(try JSONParser().parse(text), text)
            XCTAssertTrue(stackLevel == before, "after \(text)")
        }
        XCTAssertThrowsError(try JSONParser(duplicateKeys: .reject).parse(#"{"a":{"b":[1,2]},"a":3}"#))
        XCTAssertTrue(stackLevel == before)
        // And the next parse reads as if nothing had happened.
        XCTAssertEqual(try JSONParser().parse(#"{"a":[1,{"b":2}],"c":"d"}"#), .object(["a": .array([.number(1), .object(["b": .number(2)])]), "c": .string("d")]))
    }

    func testAParseInsideAMemberCallbackStartsAboveTheOuterOne() throws {
        let before = stackLevel
        var inner: [JSON] = []
        let outer = #"{"first":{"x":[1,2,3]},"second":[{"y":1},{"z":[4,5]}],"third":"t"}"#
        var values: [JSON] = []
        let reading = try Array(outer.utf8).withUnsafeBytes { bytes in
            try JSONParser().forEachMember(in: bytes) { _, value in
                inner.append((try? JSONParser().parse(#"{"n":[{"m":[1,2,{"o":3}]}],"p":{"q":"r"}}"#)) ?? .null)
                values.append(value.json)
                return true
            }
        }
        XCTAssertEqual(reading, .finished)
        XCTAssertEqual(values, [.object(["x": [1, 2, 3]]), [["y": 1], ["z": [4, 5]]], .string("t")])
        XCTAssertEqual(inner.count, 3)
        for value in inner { XCTAssertEqual(value["p"]?["q"], .string("r")) }
        XCTAssertTrue(stackLevel == before)
    }

    func testTheStackGrowsForLargeAndDeepDocuments() throws {
        var members: [String] = []
        var expected = JSON.Object()
        for index in 0..<40 {
            let items = (0..<index).map { "\($0)" }.joined(separator: ",")
            members.append(#""member\#(index)":{"items":[\#(items)],"nested":{"deeper":[[\#(items)]]}}"#)
            let numbers = JSON.array((0..<index).map { .number(Double($0)) })
            expected["member\(index)"] = .object(["items": numbers, "nested": .object(["deeper": .array([numbers])])])
        }
        let wide = "[" + Array(repeating: "{" + members.joined(separator: ",") + "}", count: 50).joined(separator: ",") + "]"
        XCTAssertEqual(try JSONParser().parse(wide), .array(Array(repeating: .object(expected), count: 50)))
        XCTAssertTrue(stackLevel == (0, 0), "nothing left on the stack")
    }

    func testALargeDocumentGivesBackWhatItGrewTheStackBy() throws {
        let long = "[" + (0..<5000).map { #"{"k":\#($0)}"# }.joined(separator: ",") + "]"
        let parsed = try JSONParser().parse(long)
        XCTAssertEqual(parsed[4999]?["k"], .integer(4999))
        let stack = JSONParserScratch.current.pointee.stack
        XCTAssertLessThanOrEqual(stack.valueCapacity, JSONParseStack.keptValues)
        XCTAssertLessThanOrEqual(stack.keyCapacity, JSONParseStack.keptKeys)
        // Failed half-way, the same.
        XCTAssertThrowsError(try JSONParser().parse(String(long.dropLast())))
        XCTAssertLessThanOrEqual(JSONParserScratch.current.pointee.stack.valueCapacity, JSONParseStack.keptValues)
    }
}
