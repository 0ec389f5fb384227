import Reactor
import ReactorServer
import XCTest

/// A JSONDocument hosted by a `Core`, as reactord runs it.
final class JSONDocumentCoreTests: XCTestCase {
    func testEventsAdvanceTheVersionAndTheState() async throws {
        let core = Core(state: JSONDocument())
        let events: [DocumentEvent] = [
            .set(path: try documentPointer("/title"), value: "Todo"),
            .append(path: try documentPointer("/items"), value: ["text": "milk"]),
            .increment(path: try documentPointer("/count")),
            .set(path: try documentPointer("/items/0/done"), value: true),
        ]
        var versions: [UInt64] = []
        for event in events {
            versions.append(try await core.fireAndWait(event: event))
        }
        XCTAssertEqual(versions, [1, 2, 3, 4])
        let snapshot = await core.snapshot()
        XCTAssertEqual(snapshot.version, 4)
        XCTAssertEqual(snapshot.state.root.jsonString, #"{"title":"Todo","items":[{"text":"milk","done":true}],"count":1}"#)
    }

    func testARejectedEventLeavesVersionAndStateUnchanged() async throws {
        let core = Core(state: JSONDocument(root: try documentJSON(#"{"counter":"ten","list":[1]}"#)))
        _ = try await core.fireAndWait(event: DocumentEvent.append(path: try documentPointer("/list"), value: 2))
        let before = await core.snapshot()
        XCTAssertEqual(before.version, 1)

        do {
            _ = try await core.fireAndWait(event: DocumentEvent.increment(path: try documentPointer("/counter")))
            XCTFail("expected the increment to be rejected")
        } catch let rejection as EventRejection {
            XCTAssertEqual(rejection, EventRejection("cannot increment /counter: it is a string, not a number"))
        }
        let after = await core.snapshot()
        XCTAssertEqual(after.version, 1)
        XCTAssertEqual(after.state, before.state)
        XCTAssertEqual(after.state.root.jsonBytes, before.state.root.jsonBytes)
        XCTAssertEqual(after.state.root.jsonString, #"{"counter":"ten","list":[1,2]}"#)
    }

    func testAFailedPatchTestIsAConflictThroughTheCore() async throws {
        let core = Core(state: JSONDocument(root: ["rev": 3, "body": "old"]))
        let stale = DocumentEvent.patch([
            .test(path: try documentPointer("/rev"), value: 2),
            .replace(path: try documentPointer("/body"), value: "new"),
        ])
        do {
            _ = try await core.fireAndWait(event: stale)
            XCTFail("expected a conflict")
        } catch let rejection as EventRejection {
            XCTAssertEqual(rejection.kind, .conflict)
            XCTAssertEqual(rejection.reason, "patch operation 0 (test): test failed at /rev: expected 2, found 3")
        }
        let fresh = DocumentEvent.patch([
            .test(path: try documentPointer("/rev"), value: 3),
            .replace(path: try documentPointer("/body"), value: "new"),
            .replace(path: try documentPointer("/rev"), value: 4),
        ])
        let version = try await core.fireAndWait(event: fresh)
        XCTAssertEqual(version, 1)
        let state = await core.snapshot().state
        XCTAssertEqual(state.root.jsonString, #"{"rev":4,"body":"new"}"#)
    }

    func testDecodedWireEventsThroughTheCore() async throws {
        let core = Core(state: JSONDocument())
        let registry = JSONDocument.eventRegistry
        _ = try await core.fireAndWait(event: try registry.decode(try documentJSON(#"{"type":"increment","path":"/hits","by":2}"#)))
        let version = try await core.fireAndWait(event: try registry.decode(try documentJSON(#"{"type":"increment","path":"/hits"}"#)))
        XCTAssertEqual(version, 2)
        let state = await core.snapshot().state
        XCTAssertEqual(state.root.jsonString, #"{"hits":3}"#)
    }
}
