@testable import ReactorJSON
import XCTest

/// RFC 6902 Appendix A, every example.
final class JSONPatchRFCTests: XCTestCase {
    private func assertPatch(
        _ document: String, _ patch: String, gives expected: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        var value = try parsedJSON(document, file: file, line: line)
        let operations = try JSONPatch.operations(from: try parsedJSON(patch, file: file, line: line))
        try JSONPatch.apply(operations, to: &value)
        XCTAssertEqual(value, try parsedJSON(expected, file: file, line: line), file: file, line: line)
    }

    private func assertPatchFails(
        _ document: String, _ patch: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> JSONPatchError? {
        let value = try parsedJSON(document, file: file, line: line)
        let operations = try JSONPatch.operations(from: try parsedJSON(patch, file: file, line: line))
        return expectPatchFailure(operations, on: value, file: file, line: line)
    }

    func testA1AddingAnObjectMember() throws {
        try assertPatch(
            #"{ "foo": "bar"}"#,
            #"[ { "op": "add", "path": "/baz", "value": "qux" } ]"#,
            gives: #"{ "baz": "qux", "foo": "bar" }"#)
    }

    func testA2AddingAnArrayElement() throws {
        try assertPatch(
            #"{ "foo": [ "bar", "baz" ] }"#,
            #"[ { "op": "add", "path": "/foo/1", "value": "qux" } ]"#,
            gives: #"{ "foo": [ "bar", "qux", "baz" ] }"#)
    }

    func testA3RemovingAnObjectMember() throws {
        try assertPatch(
            #"{ "baz": "qux", "foo": "bar" }"#,
            #"[ { "op": "remove", "path": "/baz" } ]"#,
            gives: #"{ "foo": "bar" }"#)
    }

    func testA4RemovingAnArrayElement() throws {
        try assertPatch(
            #"{ "foo": [ "bar", "qux", "baz" ] }"#,
            #"[ { "op": "remove", "path": "/foo/1" } ]"#,
            gives: #"{ "foo": [ "bar", "baz" ] }"#)
    }

    func testA5ReplacingAValue() throws {
        try assertPatch(
            #"{ "baz": "qux", "foo": "bar" }"#,
            #"[ { "op": "replace", "path": "/baz", "value": "boo" } ]"#,
            gives: #"{ "baz": "boo", "foo": "bar" }"#)
    }

    func testA6MovingAValue() throws {
        try assertPatch(
            #"{ "foo": { "bar": "baz", "waldo": "fred" }, "qux": { "corge": "grault" } }"#,
            #"[ { "op": "move", "from": "/foo/waldo", "path": "/qux/thud" } ]"#,
            gives: #"{ "foo": { "bar": "baz" }, "qux": { "corge": "grault", "thud": "fred" } }"#)
    }

    func testA7MovingAnArrayElement() throws {
        try assertPatch(
            #"{ "foo": [ "all", "grass", "cows", "eat" ] }"#,
            #"[ { "op": "move", "from": "/foo/1", "path": "/foo/3" } ]"#,
            gives: #"{ "foo": [ "all", "cows", "eat", "grass" ] }"#)
    }

    func testA8TestingAValueSuccess() throws {
        try assertPatch(
            #"{ "baz": "qux", "foo": [ "a", 2, "c" ] }"#,
            #"[ { "op": "test", "path": "/baz", "value": "qux" }, { "op": "test", "path": "/foo/1", "value": 2 } ]"#,
            gives: #"{ "baz": "qux", "foo": [ "a", 2, "c" ] }"#)
    }

    func testA9TestingAValueError() throws {
        let error = try assertPatchFails(
            #"{ "baz": "qux" }"#,
            #"[ { "op": "test", "path": "/baz", "value": "bar" } ]"#)
        XCTAssertEqual(error?.kind, .testFailed)
        XCTAssertEqual(error?.index, 0)
        XCTAssertEqual(error?.reason, #"test failed at /baz: expected "bar", found "qux""#)
    }

    func testA10AddingANestedMemberObject() throws {
        try assertPatch(
            #"{ "foo": "bar" }"#,
            #"[ { "op": "add", "path": "/child", "value": { "grandchild": { } } } ]"#,
            gives: #"{ "foo": "bar", "child": { "grandchild": { } } }"#)
    }

    func testA11IgnoringUnrecognizedElements() throws {
        try assertPatch(
            #"{ "foo": "bar" }"#,
            #"[ { "op": "add", "path": "/baz", "value": "qux", "xyz": 123 } ]"#,
            gives: #"{ "foo": "bar", "baz": "qux" }"#)
    }

    func testA12AddingToANonexistentTarget() throws {
        let error = try assertPatchFails(
            #"{ "foo": "bar" }"#,
            #"[ { "op": "add", "path": "/baz/bat", "value": "qux" } ]"#)
        XCTAssertEqual(error?.kind, .pathNotFound)
        XCTAssertEqual(error?.description, "operation 0: path /baz/bat does not exist")
    }

    func testA13InvalidJSONPatchDocument() throws {
        let patch = #"[ { "op": "add", "path": "/baz", "value": "qux", "op": "remove" } ]"#
        // A parser that rejects duplicate members rejects the patch outright.
        let strict = JSONParser(duplicateKeys: .reject)
        XCTAssertEqual(expectParseError(patch, parser: strict)?.message, #"duplicate key "op" in object"#)
        // With the default last-wins parsing, the operation is a "remove" of
        // a member that does not exist, which fails too.
        let error = try assertPatchFails(#"{ "foo": "bar" }"#, patch)
        XCTAssertEqual(error?.reason, "path /baz does not exist")
    }

    func testA14TildeEscapeOrdering() throws {
        try assertPatch(
            #"{ "/": 9, "~1": 10 }"#,
            #"[ {"op": "test", "path": "/~01", "value": 10} ]"#,
            gives: #"{ "/": 9, "~1": 10 }"#)
    }

    func testA15ComparingStringsAndNumbers() throws {
        let error = try assertPatchFails(
            #"{ "/": 9, "~1": 10 }"#,
            #"[ {"op": "test", "path": "/~01", "value": "10"} ]"#)
        XCTAssertEqual(error?.kind, .testFailed)
        XCTAssertEqual(error?.reason, #"test failed at /~01: expected "10", found 10"#)
    }

    func testA16AddingAnArrayValue() throws {
        try assertPatch(
            #"{ "foo": ["bar"] }"#,
            #"[ { "op": "add", "path": "/foo/-", "value": ["abc", "def"] } ]"#,
            gives: #"{ "foo": ["bar", ["abc", "def"]] }"#)
    }
}
