import Reactor
import ReactorServer
import XCTest

final class DocumentEventDecodingTests: XCTestCase {
    /// Decodes an event from its JSON text through the registry the server uses.
    private func decode(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> DocumentEvent {
        let event = try JSONDocument.eventRegistry.decode(try documentJSON(text, file: file, line: line))
        return try XCTUnwrap(event as? DocumentEvent, "decoded \(type(of: event)), not a DocumentEvent", file: file, line: line)
    }

    /// The error decoding `text` must throw.
    private func decodingError(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> EventDecodingError? {
        let json = try documentJSON(text, file: file, line: line)
        do {
            let event = try JSONDocument.eventRegistry.decode(json)
            XCTFail("expected \(text) to be rejected, got \(event)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func assertInvalid(_ text: String, type: String, reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try decodingError(text, file: file, line: line), .invalidFields(type: type, reason: reason), file: file, line: line)
    }

    func testTheRegistryKnowsEveryType() {
        XCTAssertEqual(JSONDocument.eventRegistry.knownTypes, ["append", "increment", "merge", "patch", "remove", "set"])
    }

    func testDecodeEveryType() throws {
        XCTAssertEqual(
            try decode(#"{"type":"set","path":"/a/b","value":{"x":[1]}}"#),
            .set(path: try documentPointer("/a/b"), value: ["x": [1]]))
        XCTAssertEqual(
            try decode(#"{"type":"merge","path":"","value":{"x":null}}"#),
            .merge(path: .root, value: ["x": nil]))
        XCTAssertEqual(try decode(#"{"path":"/a~1b","type":"remove"}"#), .remove(path: JSONPointer(tokens: ["a/b"])))
        XCTAssertEqual(try decode(#"{"type":"increment","path":"/n"}"#), .increment(path: try documentPointer("/n"), by: 1))
        XCTAssertEqual(try decode(#"{"type":"increment","path":"/n","by":-3}"#), .increment(path: try documentPointer("/n"), by: .integer(-3)))
        XCTAssertEqual(try decode(#"{"type":"increment","path":"/n","by":0.25}"#), .increment(path: try documentPointer("/n"), by: .number(0.25)))
        XCTAssertEqual(try decode(#"{"type":"append","path":"/log","value":"x"}"#), .append(path: try documentPointer("/log"), value: "x"))
        XCTAssertEqual(
            try decode(#"{"type":"patch","ops":[{"op":"test","path":"/v","value":1},{"op":"remove","path":"/v"}]}"#),
            .patch([.test(path: try documentPointer("/v"), value: 1), .remove(path: try documentPointer("/v"))]))
    }

    func testNullIsAValueNotAMissingMember() throws {
        XCTAssertEqual(try decode(#"{"type":"set","path":"/a","value":null}"#), .set(path: try documentPointer("/a"), value: nil))
        XCTAssertEqual(try decode(#"{"type":"append","path":"/a","value":null}"#), .append(path: try documentPointer("/a"), value: nil))
        try assertInvalid(#"{"type":"set","path":"/a"}"#, type: "set", reason: #"missing "value" (any JSON value; null counts)"#)
        try assertInvalid(#"{"type":"merge","path":"/a"}"#, type: "merge", reason: #"missing "value" (any JSON value; null counts)"#)
        try assertInvalid(#"{"type":"append","path":"/a"}"#, type: "append", reason: #"missing "value" (any JSON value; null counts)"#)
    }

    func testPathIsRequiredAndMustBeAValidPointerString() throws {
        for type in ["set", "merge", "remove", "increment", "append"] {
            try assertInvalid(
                #"{"type":"\#(type)"}"#, type: type,
                reason: #"missing "path" (a JSON Pointer such as "/counter", or "" for the whole document)"#)
        }
        try assertInvalid(
            #"{"type":"remove","path":3}"#, type: "remove",
            reason: #""path" must be a string (a JSON Pointer such as "/counter"), not number"#)
        try assertInvalid(
            #"{"type":"remove","path":null}"#, type: "remove",
            reason: #""path" must be a string (a JSON Pointer such as "/counter"), not null"#)
        try assertInvalid(
            #"{"type":"set","path":"counter","value":1}"#, type: "set",
            reason: #""path" is not a valid JSON Pointer: JSON pointer "counter" must be empty or start with '/'"#)
        try assertInvalid(
            #"{"type":"increment","path":"/a~2"}"#, type: "increment",
            reason: #""path" is not a valid JSON Pointer: JSON pointer "/a~2" has an invalid escape: '~' must be followed by '0' or '1'"#)
    }

    func testByMustBeANumber() throws {
        for (by, found) in [(#""2""#, "string"), ("null", "null"), ("true", "boolean"), ("[1]", "array")] {
            try assertInvalid(
                #"{"type":"increment","path":"/n","by":\#(by)}"#, type: "increment",
                reason: #""by" must be a number, not \#(found)"#)
        }
    }

    func testOpsIsARequiredArrayOfValidOperations() throws {
        try assertInvalid(#"{"type":"patch"}"#, type: "patch", reason: #"missing "ops" (an array of JSON Patch operations)"#)
        try assertInvalid(
            #"{"type":"patch","ops":{"op":"add"}}"#, type: "patch",
            reason: #""ops" must be an array of JSON Patch operations, not object"#)
        try assertInvalid(
            #"{"type":"patch","ops":[{"op":"remove","path":"/a"},{"op":"add","path":"/b"}]}"#, type: "patch",
            reason: #"in "ops": operation 1: "add" operation is missing "value""#)
        try assertInvalid(
            #"{"type":"patch","ops":[{"op":"frob","path":"/a"}]}"#, type: "patch",
            reason: #"in "ops": operation 0: unknown op "frob""#)
    }

    func testUnknownMembersAreRejectedByName() throws {
        try assertInvalid(
            #"{"type":"set","path":"/a","valeu":1}"#, type: "set",
            reason: #"unknown member "valeu"; expected path, value"#)
        try assertInvalid(
            #"{"type":"increment","path":"/a","amount":2,"step":1}"#, type: "increment",
            reason: #"unknown members "amount", "step"; expected path, by"#)
        try assertInvalid(
            #"{"type":"remove","path":"/a","value":1}"#, type: "remove",
            reason: #"unknown member "value"; expected path"#)
        try assertInvalid(
            #"{"type":"patch","ops":[],"path":""}"#, type: "patch",
            reason: #"unknown member "path"; expected ops"#)
        let error = try decodingError(#"{"type":"set","path":"/a","valeu":1}"#)
        XCTAssertEqual(error?.description, #"invalid "set" event: unknown member "valeu"; expected path, value"#)
    }

    func testTheRegistryNamesDocumentEventsByTheirWireType() throws {
        let path = try documentPointer("/a")
        let events: [DocumentEvent] = [
            .set(path: path, value: 1), .merge(path: path, value: 1), .remove(path: path),
            .increment(path: path), .append(path: path, value: 1), .patch([]),
        ]
        XCTAssertEqual(
            events.map { JSONDocument.eventRegistry.typeName(of: $0) },
            ["set", "merge", "remove", "increment", "append", "patch"])
        for event in events {
            XCTAssertEqual(event.json["type"], .string(event.eventType))
        }
    }

    func testUnknownTypesListTheKnownOnes() throws {
        let error = try decodingError(#"{"type":"add","path":"/a","value":1}"#)
        XCTAssertEqual(error, .unknownType("add", known: ["append", "increment", "merge", "patch", "remove", "set"]))
        XCTAssertEqual(error?.description, "unknown event type \"add\"; known types: append, increment, merge, patch, remove, set")
    }

    func testMalformedEnvelopes() throws {
        XCTAssertEqual(try decodingError("[1]"), .notAnObject(found: "array"))
        XCTAssertEqual(try decodingError(#"{"path":"/a"}"#), .missingType)
        XCTAssertEqual(try decodingError(#"{"type":1}"#), .typeNotAString(found: "number"))
    }

    func testEncodingThenDecodingGivesTheSameEvent() throws {
        let events: [DocumentEvent] = [
            .set(path: try documentPointer("/a~1b/~0c/0"), value: ["x": [1, 2.5, nil, true]]),
            .set(path: .root, value: nil),
            .merge(path: try documentPointer("/m"), value: ["k": nil]),
            .remove(path: try documentPointer("/r/-")),
            .increment(path: try documentPointer("/n")),
            .increment(path: try documentPointer("/n"), by: .number(-0.5)),
            .append(path: try documentPointer("/l"), value: []),
            .patch([.move(from: try documentPointer("/a"), path: try documentPointer("/b")), .test(path: .root, value: [:])]),
        ]
        for event in events {
            let text = event.json.jsonString
            XCTAssertEqual(try decode(text), event, text)
        }
        XCTAssertEqual(DocumentEvent.increment(path: try documentPointer("/n")).json.jsonString, #"{"type":"increment","path":"/n","by":1}"#)
    }

    func testADecodedEventAppliesToADocument() throws {
        var document = JSONDocument()
        for text in [
            #"{"type":"set","path":"/user/name","value":"Al"}"#,
            #"{"type":"increment","path":"/user/visits"}"#,
            #"{"type":"append","path":"/user/tags","value":"new"}"#,
            #"{"type":"merge","path":"/user","value":{"name":"Bo","tags":null}}"#,
            #"{"type":"patch","ops":[{"op":"add","path":"/user/visits","value":10}]}"#,
            #"{"type":"remove","path":"/user/name"}"#,
        ] {
            try document.apply(try JSONDocument.eventRegistry.decode(try documentJSON(text)))
        }
        XCTAssertEqual(document.root.jsonString, #"{"user":{"visits":10}}"#)
    }
}
