import Reactor
import ReactorServer
import XCTest

final class JSONDocumentAppendTests: XCTestCase {
    private func append(_ path: String, _ value: JSON) throws -> DocumentEvent {
        .append(path: try documentPointer(path), value: value)
    }

    func testAppendToAnExistingArray() throws {
        try assertDocumentEvent(try append("/tags", "b"), on: #"{"tags":["a"],"n":0}"#, gives: #"{"tags":["a","b"],"n":0}"#)
        try assertDocumentEvent(try append("/tags", nil), on: #"{"tags":[]}"#, gives: #"{"tags":[null]}"#)
    }

    func testAnAppendedArrayIsOneElement() throws {
        try assertDocumentEvent(try append("/m", [1, 2]), on: #"{"m":[[0]]}"#, gives: #"{"m":[[0],[1,2]]}"#)
    }

    func testAppendToTheRootAndToANestedArray() throws {
        try assertDocumentEvent(try append("", 3), on: "[1,2]", gives: "[1,2,3]")
        try assertDocumentEvent(try append("/0", 3), on: "[[1]]", gives: "[[1,3]]")
    }

    func testAppendToAMissingTargetCreatesTheArrayAndItsParents() throws {
        try assertDocumentEvent(try append("/log", ["at": 1]), on: "{}", gives: #"{"log":[{"at":1}]}"#)
        try assertDocumentEvent(try append("/a/b/log", 1), on: #"{"a":{}}"#, gives: #"{"a":{"b":{"log":[1]}}}"#)
    }

    func testAppendRejectsANonArray() throws {
        try assertDocumentRejects(
            try append("/tags", 1), on: #"{"tags":{"a":1}}"#, reason: "cannot append to /tags: it is an object, not an array")
        try assertDocumentRejects(
            try append("/tags", 1), on: #"{"tags":null}"#, reason: "cannot append to /tags: it is null, not an array")
        try assertDocumentRejects(
            try append("", 1), on: #"{"a":[]}"#, reason: "cannot append to the document: it is an object, not an array")
        try assertDocumentRejects(
            try append("/a/b", 1), on: #"{"a":[]}"#,
            reason: #"cannot append to /a/b: /a is an array and "b" is not an index (use 0, 1, ...)"#)
    }
}
