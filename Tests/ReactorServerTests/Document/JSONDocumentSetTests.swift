import Reactor
import ReactorServer
import XCTest

final class JSONDocumentSetTests: XCTestCase {
    private func set(_ path: String, _ value: JSON) throws -> DocumentEvent {
        .set(path: try documentPointer(path), value: value)
    }

    func testANewDocumentIsAnEmptyObject() {
        XCTAssertEqual(JSONDocument().root.jsonString, "{}")
        XCTAssertEqual(JSONDocument().jsonValue(), [:])
    }

    func testSetAddsAMember() throws {
        try assertDocumentEvent(try set("/a", 1), on: "{}", gives: #"{"a":1}"#)
        try assertDocumentEvent(try set("/b", "x"), on: #"{"a":1}"#, gives: #"{"a":1,"b":"x"}"#)
    }

    func testSetReplacesAMemberWhereItStands() throws {
        try assertDocumentEvent(try set("/a", [true]), on: #"{"a":1,"b":2}"#, gives: #"{"a":[true],"b":2}"#)
    }

    func testSetStoresNull() throws {
        try assertDocumentEvent(try set("/a", nil), on: #"{"a":1}"#, gives: #"{"a":null}"#)
    }

    func testSetCreatesMissingIntermediateObjects() throws {
        try assertDocumentEvent(try set("/a/b/c", 1), on: "{}", gives: #"{"a":{"b":{"c":1}}}"#)
        try assertDocumentEvent(
            try set("/a/b/c", 1), on: #"{"a":{"x":0},"z":0}"#, gives: #"{"a":{"x":0,"b":{"c":1}},"z":0}"#)
    }

    func testSetWithEscapedAndEmptyTokens() throws {
        try assertDocumentEvent(try set("/a~1b/~0", 1), on: "{}", gives: #"{"a/b":{"~":1}}"#)
        try assertDocumentEvent(try set("/", 1), on: #"{"a":0}"#, gives: #"{"a":0,"":1}"#)
    }

    func testSetTheRootReplacesTheDocumentWithAnyValue() throws {
        try assertDocumentEvent(try set("", 5), on: #"{"a":1}"#, gives: "5")
        try assertDocumentEvent(try set("", ["x"]), on: #"{"a":1}"#, gives: #"["x"]"#)
        try assertDocumentEvent(try set("", nil), on: "[]", gives: "null")
        try assertDocumentEvent(try set("", ["k": 1]), on: "null", gives: #"{"k":1}"#)
    }

    func testSetReplacesAnArrayElement() throws {
        try assertDocumentEvent(try set("/list/1", "B"), on: #"{"list":["a","b","c"]}"#, gives: #"{"list":["a","B","c"]}"#)
        try assertDocumentEvent(try set("/0", 9), on: "[1,2]", gives: "[9,2]")
    }

    func testSetAppendsWithDashOrTheLength() throws {
        try assertDocumentEvent(try set("/list/-", 3), on: #"{"list":[1,2]}"#, gives: #"{"list":[1,2,3]}"#)
        try assertDocumentEvent(try set("/list/2", 3), on: #"{"list":[1,2]}"#, gives: #"{"list":[1,2,3]}"#)
        try assertDocumentEvent(try set("/list/0", 1), on: #"{"list":[]}"#, gives: #"{"list":[1]}"#)
    }

    func testSetGoesThroughExistingArrayElements() throws {
        try assertDocumentEvent(
            try set("/users/1/name", "Bo"), on: #"{"users":[{"name":"A"},{}]}"#,
            gives: #"{"users":[{"name":"A"},{"name":"Bo"}]}"#)
        try assertDocumentEvent(
            try set("/users/0/address/city", "Oslo"), on: #"{"users":[{}]}"#,
            gives: #"{"users":[{"address":{"city":"Oslo"}}]}"#)
    }

    func testSetRejectsAnIndexPastTheEnd() throws {
        try assertDocumentRejects(
            try set("/list/3", 0), on: #"{"list":[1,2]}"#,
            reason: #"cannot set /list/3: index 3 is out of bounds for /list, which has 2 elements; use 2 or "-" to append"#)
        try assertDocumentRejects(
            try set("/5", 0), on: "[1]",
            reason: #"cannot set /5: index 5 is out of bounds for the document, which has 1 element; use 1 or "-" to append"#)
    }

    func testSetRejectsATokenThatIsNotAnIndexInAnArray() throws {
        try assertDocumentRejects(
            try set("/list/x", 0), on: #"{"list":[1]}"#,
            reason: #"cannot set /list/x: /list is an array and "x" is not an index (use 0, 1, ...)"#)
        try assertDocumentRejects(
            try set("/list/01", 0), on: #"{"list":[1,2]}"#,
            reason: #"cannot set /list/01: /list is an array and "01" is not an index (use 0, 1, ...)"#)
    }

    func testSetDoesNotCreateArrayElementsOnTheWay() throws {
        try assertDocumentRejects(
            try set("/list/2/name", "x"), on: #"{"list":[{},{}]}"#,
            reason: "cannot set /list/2/name: index 2 is out of bounds for /list, which has 2 elements")
        try assertDocumentRejects(
            try set("/list/-/name", "x"), on: #"{"list":[]}"#,
            reason: #"cannot set /list/-/name: "-" designates no existing element of /list"#)
    }

    func testSetRejectsAPathThroughAScalar() throws {
        try assertDocumentRejects(
            try set("/a/b", 1), on: #"{"a":1}"#,
            reason: "cannot set /a/b: /a is a number, not an object or array")
        try assertDocumentRejects(
            try set("/a/b/c/d", 1), on: #"{"a":{"b":"text"}}"#,
            reason: "cannot set /a/b/c/d: /a/b is a string, not an object or array")
        try assertDocumentRejects(
            try set("/a/b", 1), on: #"{"a":null}"#,
            reason: "cannot set /a/b: /a is null, not an object or array")
        try assertDocumentRejects(
            try set("/a", 1), on: "true",
            reason: "cannot set /a: the document is a boolean, not an object or array")
    }
}
