import Reactor
import ReactorServer
import XCTest

final class JSONDocumentRemoveTests: XCTestCase {
    private func remove(_ path: String) throws -> DocumentEvent {
        .remove(path: try documentPointer(path))
    }

    func testRemoveAMemberKeepsTheOthersInOrder() throws {
        try assertDocumentEvent(try remove("/b"), on: #"{"a":1,"b":2,"c":3}"#, gives: #"{"a":1,"c":3}"#)
        try assertDocumentEvent(try remove("/a/x"), on: #"{"a":{"x":null,"y":1}}"#, gives: #"{"a":{"y":1}}"#)
        try assertDocumentEvent(try remove("/"), on: #"{"":1,"a":2}"#, gives: #"{"a":2}"#)
    }

    func testRemoveAnArrayElementShiftsTheRest() throws {
        try assertDocumentEvent(try remove("/list/0"), on: #"{"list":[1,2,3]}"#, gives: #"{"list":[2,3]}"#)
        try assertDocumentEvent(try remove("/1/k"), on: #"[{},{"k":1,"j":2}]"#, gives: #"[{},{"j":2}]"#)
    }

    func testRemoveRejectsAMissingMember() throws {
        try assertDocumentRejects(try remove("/a/x"), on: #"{"a":{"y":1}}"#, reason: "cannot remove /a/x: no such member")
        try assertDocumentRejects(
            try remove("/a/x/y"), on: #"{"a":{}}"#, reason: "cannot remove /a/x/y: /a/x does not exist")
    }

    func testRemoveRejectsAMissingElement() throws {
        try assertDocumentRejects(
            try remove("/list/2"), on: #"{"list":[1,2]}"#,
            reason: "cannot remove /list/2: index 2 is out of bounds for /list, which has 2 elements")
        try assertDocumentRejects(
            try remove("/list/-"), on: #"{"list":[1]}"#,
            reason: #"cannot remove /list/-: "-" designates no existing element of /list"#)
        try assertDocumentRejects(
            try remove("/list/first"), on: #"{"list":[1]}"#,
            reason: #"cannot remove /list/first: /list is an array and "first" is not an index (use 0, 1, ...)"#)
    }

    func testRemoveRejectsAPathThroughAScalar() throws {
        try assertDocumentRejects(
            try remove("/a/b"), on: #"{"a":"s"}"#, reason: "cannot remove /a/b: /a is a string, not an object or array")
    }

    func testRemoveRejectsTheWholeDocument() throws {
        try assertDocumentRejects(
            try remove(""), on: #"{"a":1}"#, reason: #"cannot remove the whole document; set "" to replace it"#)
    }
}
