import Reactor
@testable import ReactorServer
import XCTest

/// An event too large for an existential's inline buffer: it is boxed, and read through a copy.
private struct LargeEvent: Event, Equatable {
    var a = 1, b = 2, c = 3, d = 4
    var name = "large"
}

private struct OtherEvent: Event {}

private final class Listener: Sendable {}

/// Small enough to be inline, but a weak reference makes it not bitwise takable: it is boxed.
private struct WeakEvent: Event {
    weak var listener: Listener?
    var count = 0
}

/// `withEvent(_:as:)` reads an event where its existential holds it. That rests on Swift's
/// existential layout, so every kind of `DocumentEvent` is read back through it here.
final class EventCastTests: XCTestCase {
    private var everyKindOfDocumentEvent: [DocumentEvent] {
        get throws {
            let path = try JSONPointer("/a/b")
            return [
                .set(path: path, value: ["x": [1, 2, "three"]]),
                .merge(path: path, value: ["y": nil]),
                .remove(path: path),
                .increment(path: path, by: 1),
                .increment(path: path, by: 2.5),
                .append(path: path, value: "item"),
                .patch([.add(path: path, value: true), .test(path: path, value: true)]),
            ]
        }
    }

    func testEveryDocumentEventIsReadInPlaceAsItWas() throws {
        for original in try everyKindOfDocumentEvent {
            let event: any Event = original
            XCTAssertEqual(withEvent(event, as: DocumentEvent.self) { $0 }, original)
            XCTAssertEqual(JSONDocument.eventType(of: event), original.eventType)
        }
    }

    func testAnEventOfAnotherTypeIsNotRead() throws {
        let event: any Event = OtherEvent()
        XCTAssertNil(withEvent(event, as: DocumentEvent.self) { $0 })
        XCTAssertNil(JSONDocument.eventType(of: event))
    }

    func testAnEventTooLargeToBeInlineIsReadThroughACopy() {
        XCTAssertGreaterThan(MemoryLayout<LargeEvent>.size, 3 * MemoryLayout<Int>.size)
        let event: any Event = LargeEvent(name: "a name long enough to live on the heap")
        XCTAssertEqual(withEvent(event, as: LargeEvent.self) { $0 }, LargeEvent(name: "a name long enough to live on the heap"))
        XCTAssertNil(withEvent(event, as: DocumentEvent.self) { $0 })
    }

    func testAnEventWithAWeakReferenceIsReadThroughACopy() {
        let listener = Listener()
        let event: any Event = WeakEvent(listener: listener, count: 7)
        XCTAssertLessThanOrEqual(MemoryLayout<WeakEvent>.size, 3 * MemoryLayout<Int>.size)
        XCTAssertEqual(withEvent(event, as: WeakEvent.self) { $0.count }, 7)
        let read = withEvent(event, as: WeakEvent.self) { $0.listener }
        XCTAssertTrue(read! === listener)
    }

    func testTheBodysErrorIsThrownThrough() throws {
        let event: any Event = DocumentEvent.remove(path: try JSONPointer("/a"))
        XCTAssertThrowsError(try withEvent(event, as: DocumentEvent.self) { (_) throws(EventRejection) in
            throw EventRejection("refused")
        }) { error in
            XCTAssertEqual(error as? EventRejection, EventRejection("refused"))
        }
    }

    /// The value lent to the body owns nothing: reading an event many times (keeping a copy now and
    /// then, and throwing now and then) leaves its references exactly as owned as before.
    func testAnEventLentManyTimesKeepsItsReferences() throws {
        // Tokens long enough to live on the heap, so that a release too many would free them.
        let path = try JSONPointer("/" + String(repeating: "a", count: 40) + "/" + String(repeating: "b", count: 40))
        var event: any Event = DocumentEvent.set(path: path, value: ["k": [.string(String(repeating: "v", count: 50))]])
        var kept: [DocumentEvent] = []
        for round in 0..<1000 {
            if round % 100 == 0, let copy = withEvent(event, as: DocumentEvent.self, { $0 }) { kept.append(copy) }
            XCTAssertEqual(withEvent(event, as: DocumentEvent.self) { $0.eventType }, "set")
            if round % 10 == 0 {
                XCTAssertThrowsError(try withEvent(event, as: DocumentEvent.self) { (_) throws(EventRejection) in throw EventRejection("no") })
            }
        }
        let expected = DocumentEvent.set(path: path, value: ["k": [.string(String(repeating: "v", count: 50))]])
        event = OtherEvent()
        XCTAssertEqual(kept.count, 10)
        for copy in kept { XCTAssertEqual(copy, expected) }
        kept.removeAll()
        XCTAssertEqual(path.tokens, [String(repeating: "a", count: 40), String(repeating: "b", count: 40)])
    }
}
