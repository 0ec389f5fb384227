import Reactor
import ReactorServer
import XCTest

final class JSONDocumentMergeTests: XCTestCase {
    private func merge(_ path: String, _ patch: String) throws -> DocumentEvent {
        .merge(path: try documentPointer(path), value: try documentJSON(patch))
    }

    func testMergeSetsReplacesAndDeletesMembersKeepingOrder() throws {
        try assertDocumentEvent(
            try merge("/user", #"{"name":"Bo","age":null,"tags":["x"]}"#),
            on: #"{"user":{"name":"Al","age":3,"city":"Oslo"},"n":1}"#,
            gives: #"{"user":{"name":"Bo","city":"Oslo","tags":["x"]},"n":1}"#)
    }

    func testMergeRecursesIntoNestedObjects() throws {
        try assertDocumentEvent(
            try merge("", #"{"a":{"b":{"c":null,"d":2}}}"#),
            on: #"{"a":{"b":{"c":1,"e":3}},"z":0}"#,
            gives: #"{"a":{"b":{"e":3,"d":2}},"z":0}"#)
    }

    func testMergeIntoAMissingTargetCreatesItAndItsParents() throws {
        // The missing value counts as null; nulls inside a new object disappear, as in RFC 7386.
        try assertDocumentEvent(
            try merge("/a/b", #"{"x":1,"y":null,"z":{"w":null}}"#), on: #"{"k":0}"#,
            gives: #"{"k":0,"a":{"b":{"x":1,"z":{}}}}"#)
    }

    func testMergeOfANonObjectReplacesTheTarget() throws {
        try assertDocumentEvent(try merge("/a", "5"), on: #"{"a":{"x":1},"b":0}"#, gives: #"{"a":5,"b":0}"#)
        try assertDocumentEvent(try merge("/a", "[1]"), on: #"{"a":{"x":1}}"#, gives: #"{"a":[1]}"#)
        // Literal RFC 7386: null replaces the target rather than deleting it.
        try assertDocumentEvent(try merge("/a", "null"), on: #"{"a":{"x":1},"b":0}"#, gives: #"{"a":null,"b":0}"#)
        try assertDocumentEvent(try merge("/a", "null"), on: "{}", gives: #"{"a":null}"#)
    }

    func testMergeAnObjectIntoAScalarReplacesIt() throws {
        try assertDocumentEvent(try merge("/a", #"{"x":1,"y":null}"#), on: #"{"a":"s"}"#, gives: #"{"a":{"x":1}}"#)
    }

    func testMergeIntoTheRoot() throws {
        try assertDocumentEvent(try merge("", #"{"b":2,"a":null}"#), on: #"{"a":1}"#, gives: #"{"b":2}"#)
        try assertDocumentEvent(try merge("", "7"), on: #"{"a":1}"#, gives: "7")
    }

    func testMergeIntoAnArrayElement() throws {
        try assertDocumentEvent(
            try merge("/list/1", #"{"done":true}"#), on: #"{"list":[{},{"id":2}]}"#,
            gives: #"{"list":[{},{"id":2,"done":true}]}"#)
    }

    func testMergeRejections() throws {
        try assertDocumentRejects(
            try merge("/a/b", #"{"x":1}"#), on: #"{"a":3}"#,
            reason: "cannot merge into /a/b: /a is a number, not an object or array")
        try assertDocumentRejects(
            try merge("/list/2", #"{"x":1}"#), on: #"{"list":[{},{}]}"#,
            reason: "cannot merge into /list/2: index 2 is out of bounds for /list, which has 2 elements")
        try assertDocumentRejects(
            try merge("/list/-", #"{"x":1}"#), on: #"{"list":[]}"#,
            reason: #"cannot merge into /list/-: "-" designates no existing element of /list"#)
    }
}
