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
}
