import Reactor
import ReactorServer
import XCTest

/// An event that is not a `DocumentEvent`.
private struct UnrelatedEvent: Event {}

/// JSONDocument as a `State` and `HostedState`: what it does with foreign events, `react(to:)`,
/// `jsonValue()`.
final class JSONDocumentStateTests: XCTestCase {
    func testApplyRejectsForeignEvents() throws {
        var document = JSONDocument(root: try documentJSON(#"{"a":1}"#))
        XCTAssertThrowsError(try document.apply(UnrelatedEvent() as any Event)) { error in
            XCTAssertEqual(error as? EventRejection, EventRejection("JSONDocument does not handle events of type UnrelatedEvent"))
        }
        XCTAssertEqual(document.root.jsonString, #"{"a":1}"#)
    }

    func testReactIgnoresForeignAndRejectedEvents() throws {
        var document = JSONDocument(root: try documentJSON(#"{"a":"x"}"#))
        document.react(to: UnrelatedEvent())
        document.react(to: DocumentEvent.increment(path: try documentPointer("/a")))
        XCTAssertEqual(document.root.jsonString, #"{"a":"x"}"#)
    }

    func testReactAppliesDocumentEvents() throws {
        var document = JSONDocument()
        document.react(to: DocumentEvent.increment(path: try documentPointer("/n"), by: 2))
        document.react(to: DocumentEvent.set(path: try documentPointer("/s"), value: "x"))
        XCTAssertEqual(document.root.jsonString, #"{"n":2,"s":"x"}"#)
    }

    func testTheTypedApplyThrowsEventRejection() throws {
        var document = JSONDocument()
        let event = DocumentEvent.remove(path: try documentPointer("/x"))
        // `do throws(EventRejection)` compiles only if the typed overload is the one chosen.
        do throws(EventRejection) {
            try document.apply(event)
            XCTFail("expected a rejection")
        } catch {
            XCTAssertEqual(error.reason, "cannot remove /x: no such member")
        }
    }

    func testJSONValueIsTheRoot() throws {
        let root = try documentJSON(#"{"b":[1,{"c":null}],"a":2.5}"#)
        XCTAssertEqual(JSONDocument(root: root).jsonValue().jsonBytes, root.jsonBytes)
        XCTAssertEqual(JSONDocument(root: root), JSONDocument(root: root))
        XCTAssertNotEqual(JSONDocument(root: root), JSONDocument())
    }

    /// A document keeps its root and changes behind one reference: copies must still be values.
    func testCopiesAreIndependentWhateverChangesThem() throws {
        var original = JSONDocument(root: try documentJSON(#"{"n":1}"#))
        try original.apply(.increment(path: documentPointer("/n"), by: 1))
        let applied = original.lastChanges
        let copy = original
        try original.apply(.set(path: documentPointer("/s"), value: "x"))
        XCTAssertEqual(copy.root.jsonString, #"{"n":2}"#, "an event on the original leaves the copy as it was")
        XCTAssertEqual(copy.lastChanges, applied)
        XCTAssertEqual(original.root.jsonString, #"{"n":2,"s":"x"}"#)

        var edited = copy
        edited.root = ["replaced": true]
        XCTAssertNil(edited.lastChanges)
        XCTAssertEqual(copy.root.jsonString, #"{"n":2}"#, "setting a copy's root leaves the copy it came from as it was")
        XCTAssertEqual(copy.lastChanges, applied)
        XCTAssertNotEqual(edited, copy)
        XCTAssertEqual(copy, JSONDocument(root: try documentJSON(#"{"n":2}"#)), "equal by content, not by storage")
    }

    /// Firing an increment or a remove as `any Event` must not allocate a box for it: the event has
    /// to fit in an existential's three inline words (its JSON-carrying cases are `indirect`).
    func testEventsWithoutAValueFitInAnExistentialsInlineBuffer() {
        XCTAssertLessThanOrEqual(MemoryLayout<DocumentEvent>.size, 3 * MemoryLayout<Int>.size)
        XCTAssertLessThanOrEqual(MemoryLayout<DocumentEvent>.alignment, MemoryLayout<Int>.alignment)
    }
}
