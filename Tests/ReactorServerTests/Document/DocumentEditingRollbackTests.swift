@testable import ReactorServer
import XCTest

/// The objects an edit creates on its way down are removed again if the edit then fails. No
/// `DocumentEvent` fails below a created object today (their checks come first), so this drives the
/// path walker directly with an edit that fails at the bottom.
final class DocumentEditingRollbackTests: XCTestCase {
    private struct Failure: Error {}

    func testCreatedIntermediateObjectsAreRemovedWhenTheEditFails() throws {
        let original = try documentJSON(#"{"a":{"x":1},"z":2}"#)
        var root = original
        let edit = DocumentEdit(action: "test", pointer: try documentPointer("/a/b/c/d"))
        XCTAssertThrowsError(
            try root.withDocumentTarget(of: edit, createsMissing: true) { (target: inout JSON, existed: Bool) throws(EventRejection) in
                XCTAssertFalse(existed)
                target = 1
                throw EventRejection("failing at the bottom")
            })
        XCTAssertEqual(root.jsonBytes, original.jsonBytes)
        XCTAssertEqual(root, original)
    }

    func testTheWalkerSeesTheCreatedObjects() throws {
        var root = try documentJSON(#"{"a":{}}"#)
        let edit = DocumentEdit(action: "test", pointer: try documentPointer("/a/b/c"))
        try root.withDocumentTarget(of: edit, createsMissing: true) { (target: inout JSON, existed: Bool) in
            XCTAssertFalse(existed)
            target = "made"
        }
        XCTAssertEqual(root.jsonString, #"{"a":{"b":{"c":"made"}}}"#)
    }

    func testAnExistingTargetIsNotRemovedWhenTheEditFails() throws {
        let original = try documentJSON(#"{"a":{"b":1,"c":2}}"#)
        var root = original
        let edit = DocumentEdit(action: "test", pointer: try documentPointer("/a/b"))
        XCTAssertThrowsError(
            try root.withDocumentTarget(of: edit, createsMissing: true) { (target: inout JSON, existed: Bool) throws(EventRejection) in
                XCTAssertTrue(existed)
                throw EventRejection("no")
            })
        XCTAssertEqual(root.jsonBytes, original.jsonBytes)
    }
}
