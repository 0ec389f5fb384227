@testable import ReactorJSON
import XCTest

final class JSONValueTests: XCTestCase {
    func testNumbersCompareByValueAcrossIntegerAndDouble() {
        XCTAssertEqual(JSON.integer(1), JSON.number(1.0))
        XCTAssertEqual(JSON.number(-0.0), JSON.integer(0))
        XCTAssertNotEqual(JSON.integer(1), JSON.number(1.5))
        XCTAssertNotEqual(JSON.integer(1), JSON.string("1"))
        XCTAssertNotEqual(JSON.integer(1), JSON.bool(true))
    }

    func testLargeIntegersAreNotEqualToTheirRoundedDouble() {
        let twoTo53: Int64 = 9_007_199_254_740_992
        XCTAssertEqual(JSON.integer(twoTo53), JSON.number(9_007_199_254_740_992.0))
        XCTAssertNotEqual(JSON.integer(twoTo53 + 1), JSON.number(9_007_199_254_740_992.0))
        XCTAssertNotEqual(JSON.integer(.max), JSON.number(9_223_372_036_854_775_808.0))
    }

    func testObjectsCompareByKeyWhetherTheirMembersSharePlacesOrNot() throws {
        // Compared place by place where the keys line up, by lookup where they do not.
        let a = try parsedJSON(#"{"k":0,"x":1,"y":2,"z":{"p":1,"q":2}}"#)
        XCTAssertEqual(a, try parsedJSON(#"{"k":0,"y":2,"x":1,"z":{"q":2,"p":1}}"#))
        XCTAssertNotEqual(a, try parsedJSON(#"{"k":0,"y":2,"x":3,"z":{"q":2,"p":1}}"#), "a value differs at a key out of place")
        XCTAssertNotEqual(a, try parsedJSON(#"{"k":0,"x":1,"y":2,"z":{"p":1,"q":3}}"#), "a value differs at a key in place")
        XCTAssertNotEqual(a, try parsedJSON(#"{"k":0,"x":1,"w":2,"z":{"p":1,"q":2}}"#), "a key differs")
    }

    func testObjectEqualityIgnoresMemberOrder() throws {
        let a = try parsedJSON(#"{"x":1,"y":[1,2]}"#)
        let b = try parsedJSON(#"{"y":[1,2],"x":1}"#)
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        XCTAssertNotEqual(a, try parsedJSON(#"{"x":1,"y":[2,1]}"#), "array order matters")
        XCTAssertNotEqual(a, try parsedJSON(#"{"x":1}"#))
        XCTAssertNotEqual(a, try parsedJSON(#"{"x":1,"z":[1,2]}"#))
    }

    func testEqualValuesHashEqually() {
        let pairs: [(JSON, JSON)] = [
            (.integer(3), .number(3.0)),
            (.number(-0.0), .integer(0)),
            (["a": 1, "b": 2.0], ["b": 2, "a": 1.0]),
            ([1, [2.0]], [1.0, [2]]),
        ]
        for (a, b) in pairs {
            XCTAssertEqual(a, b)
            XCTAssertEqual(a.hashValue, b.hashValue, "\(a) and \(b)")
        }
        let set: Set<JSON> = [.integer(3), .number(3.0), .number(3.5)]
        XCTAssertEqual(set.count, 2)
    }

    func testAccessors() throws {
        let value = try parsedJSON(#"{"b":true,"i":5,"d":2.5,"whole":4.0,"s":"x","a":[1],"o":{},"n":null}"#)
        XCTAssertEqual(value["b"]?.boolValue, true)
        XCTAssertEqual(value["i"]?.int64Value, 5)
        XCTAssertEqual(value["whole"]?.int64Value, 4)
        XCTAssertNil(value["d"]?.int64Value)
        XCTAssertEqual(value["d"]?.doubleValue, 2.5)
        XCTAssertEqual(value["i"]?.doubleValue, 5)
        XCTAssertEqual(value["s"]?.stringValue, "x")
        XCTAssertEqual(value["a"]?.arrayValue, [1])
        XCTAssertEqual(value["o"]?.objectValue?.count, 0)
        XCTAssertEqual(value["n"]?.isNull, true)
        XCTAssertNil(value["missing"])
        XCTAssertEqual(value["a"]?[0], 1)
        XCTAssertNil(value["a"]?[1])
        XCTAssertNil(value["a"]?[-1])
        XCTAssertNil(value["s"]?["x"])
        XCTAssertNil(value["s"]?.boolValue)
        XCTAssertEqual(value.typeName, "object")
        XCTAssertEqual(value["d"]?.typeName, "number")
    }

    func testIdenticalIsTheSameTextNotMerelyAnEqualValue() throws {
        let nfc = "\u{E9}", nfd = "e\u{301}"
        XCTAssertEqual(JSON.string(nfc), JSON.string(nfd), "Swift takes canonically equivalent strings for equal")
        for (a, b) in [(JSON.integer(1), JSON.number(1.0)), (.number(-0.0), .number(0.0)), (.string(nfc), .string(nfd)),
                       (["a": 1, "b": 2], ["b": 2, "a": 1]), ([.string(nfc)], [.string(nfd)]), ([nfc: 1], [nfd: 1]),
                       (["x": ["y": 1]], ["x": ["y": 1.0]])] as [(JSON, JSON)] {
            XCTAssertEqual(a, b)
            XCTAssertFalse(a.isIdentical(to: b), "\(a.jsonString) and \(b.jsonString)")
        }
        let value = try JSON(parsing: #"{"a":[1,2.5,"\u00e9",null,true,{"b":-0.0}],"c":{}}"#)
        XCTAssertTrue(value.isIdentical(to: value))
        XCTAssertTrue(value.isIdentical(to: try JSON(parsing: value.jsonBytes)))
        XCTAssertFalse(value.isIdentical(to: ["a": [1, 2.5, .string(nfd), nil, true, ["b": -0.0]], "c": [:]]))
    }

    func testADiffReplacesWhatChangedOnlyItsSpelling() throws {
        let nfc = "\u{E9}", nfd = "e\u{301}"
        XCTAssertEqual(JSONPatch.diff(from: ["n": 1, "s": .string(nfc)], to: ["n": 1.0, "s": .string(nfc)]),
                       [.replace(path: try JSONPointer("/n"), value: 1.0)])
        XCTAssertEqual(JSONPatch.diff(from: [1, .string(nfc), 3], to: [1, .string(nfd), 3]), [.replace(path: try JSONPointer("/1"), value: .string(nfd))])
        // A member name spelled otherwise is another member to JSON.
        let from: JSON = ["k": 1, .init(stringLiteral: nfc): ["x": 1]], to: JSON = ["k": 1, .init(stringLiteral: nfd): ["x": 1]]
        let operations = JSONPatch.diff(from: from, to: to)
        XCTAssertEqual(operations, [.remove(path: JSONPointer(tokens: [nfc])), .add(path: JSONPointer(tokens: [nfd]), value: ["x": 1])])
        XCTAssertTrue(try JSONPatch.applying(operations, to: from).isIdentical(to: to))
        XCTAssertEqual(JSONPatch.diff(from: ["a": [1, 2]], to: ["a": [1, 2]]), [])
    }

    func testLiterals() {
        let value: JSON = ["n": nil, "b": false, "i": 1, "d": 1.5, "s": "t", "a": [1, "2"]]
        XCTAssertEqual(value.jsonString, #"{"n":null,"b":false,"i":1,"d":1.5,"s":"t","a":[1,"2"]}"#)
    }
}
