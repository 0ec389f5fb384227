import Reactor
import ReactorServer
import XCTest

final class JSONDocumentPatchTests: XCTestCase {
    private func patch(_ operations: String) throws -> DocumentEvent {
        .patch(try JSONPatch.operations(from: try documentJSON(operations)))
    }

    func testAPatchAppliesEveryOperationInOrder() throws {
        try assertDocumentEvent(
            try patch(#"""
                [{"op":"test","path":"/v","value":1},
                 {"op":"replace","path":"/v","value":2},
                 {"op":"add","path":"/list/-","value":"c"},
                 {"op":"move","from":"/old","path":"/new"},
                 {"op":"copy","from":"/v","path":"/w"},
                 {"op":"remove","path":"/list/0"}]
                """#),
            on: #"{"v":1,"list":["a","b"],"old":true}"#,
            gives: #"{"v":2,"list":["b","c"],"new":true,"w":2}"#)
    }

    func testAnEmptyPatchChangesNothing() throws {
        try assertDocumentEvent(.patch([]), on: #"{"a":1}"#, gives: #"{"a":1}"#)
    }

    func testAFailedOperationUndoesTheEarlierOnes() throws {
        try assertDocumentRejects(
            try patch(#"""
                [{"op":"add","path":"/a/x","value":1},
                 {"op":"remove","path":"/b"},
                 {"op":"remove","path":"/nope"}]
                """#),
            on: #"{"a":{"y":0},"b":[1,2]}"#,
            reason: "patch operation 2 (remove): path /nope does not exist")
    }

    func testAFailedTestIsAConflict() throws {
        try assertDocumentRejects(
            try patch(#"""
                [{"op":"replace","path":"/version","value":8},
                 {"op":"test","path":"/owner","value":"al"}]
                """#),
            on: #"{"version":7,"owner":"bo"}"#,
            reason: #"patch operation 1 (test): test failed at /owner: expected "al", found "bo""#,
            kind: .conflict)
    }

    func testATestOfAMissingPathIsInvalidNotAConflict() throws {
        // The JSON layer reports a missing path as such, whatever the operation.
        try assertDocumentRejects(
            try patch(#"[{"op":"test","path":"/missing","value":1}]"#), on: "{}",
            reason: "patch operation 0 (test): path /missing does not exist")
    }
}
