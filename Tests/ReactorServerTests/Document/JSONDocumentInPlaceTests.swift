import Reactor
import ReactorServer
import XCTest

/// Events change the document in place: on the server's hot path, touching a counter must not copy
/// a big array or object that sits beside it or on the way to it. Buffer addresses reveal copies.
final class JSONDocumentInPlaceTests: XCTestCase {
    private let size = 100_000

    private func bigArray() -> JSON {
        .array((0..<size).map { .integer(Int64($0)) })
    }

    private func bigArrayOfObjects() -> JSON {
        .array((0..<size).map { _ in ["n": 0] })
    }

    private func bigObject() -> JSON {
        var members = JSON.Object()
        members.reserveCapacity(size)
        for index in 0..<size { members["k\(index)"] = .integer(Int64(index)) }
        return .object(members)
    }

    func testIncrementBesideABigArrayCopiesNothing() throws {
        var document = JSONDocument(root: ["counter": 0, "big": bigArray()])
        let arrayBuffer = documentArrayBuffer(document.root["big"])
        let rootBuffer = documentObjectBuffer(document.root)
        XCTAssertNotNil(arrayBuffer)
        XCTAssertNotNil(rootBuffer)

        // Checked after every event: a copy frees the old buffer, so two copies in a row can land
        // back on the first address and hide each other.
        let increment = DocumentEvent.increment(path: try documentPointer("/counter"))
        for round in 1...100 {
            try document.apply(increment)
            XCTAssertEqual(documentObjectBuffer(document.root), rootBuffer, "the root object was copied in round \(round)")
            XCTAssertEqual(documentArrayBuffer(document.root["big"]), arrayBuffer, "the array was copied in round \(round)")
        }
        XCTAssertEqual(document.root["counter"], 100)
    }

    func testEventsThroughABigArrayCopyNothing() throws {
        var document = JSONDocument(root: ["items": bigArrayOfObjects()])
        let itemsBuffer = documentArrayBuffer(document.root["items"])
        XCTAssertNotNil(itemsBuffer)

        let events: [DocumentEvent] = [
            .increment(path: try documentPointer("/items/99999/n"), by: 5),
            .set(path: try documentPointer("/items/5/label"), value: "x"),
            .merge(path: try documentPointer("/items/6"), value: ["done": true]),
            .append(path: try documentPointer("/items/7/log"), value: 1),
            .remove(path: try documentPointer("/items/8/n")),
            .patch([.replace(path: try documentPointer("/items/9/n"), value: 9)]),
        ]
        for event in events {
            try document.apply(event)
            XCTAssertEqual(documentArrayBuffer(document.root["items"]), itemsBuffer, "\(event.eventType) copied the array")
        }
        XCTAssertEqual(document.root[try documentPointer("/items/99999/n")], 5)
        XCTAssertEqual(document.root[try documentPointer("/items/6")]?.jsonString, #"{"n":0,"done":true}"#)
    }

    func testEventsThroughABigObjectCopyNothing() throws {
        var document = JSONDocument(root: ["map": bigObject()])
        let mapBuffer = documentObjectBuffer(document.root["map"])
        XCTAssertNotNil(mapBuffer)
        let events: [DocumentEvent] = [
            .increment(path: try documentPointer("/map/k500")),
            .set(path: try documentPointer("/map/k501"), value: "s"),
            .merge(path: try documentPointer("/map"), value: ["k502": nil]),
            .remove(path: try documentPointer("/map/k503")),
        ]
        for event in events {
            try document.apply(event)
            XCTAssertEqual(documentObjectBuffer(document.root["map"]), mapBuffer, "\(event.eventType) copied the object")
        }
        XCTAssertEqual(document.root[try documentPointer("/map/k500")], 501)
        XCTAssertNil(document.root[try documentPointer("/map/k502")])
    }

    func testARejectedEventCopiesNothing() throws {
        var document = JSONDocument(root: ["items": bigArrayOfObjects()])
        let itemsBuffer = documentArrayBuffer(document.root["items"])
        XCTAssertThrowsError(try document.apply(DocumentEvent.append(path: try documentPointer("/items/3/n"), value: 1)))
        XCTAssertEqual(documentArrayBuffer(document.root["items"]), itemsBuffer)
    }

    /// The control: with a second owner (a snapshot a subscriber kept), the same event must copy the
    /// containers on its path, and the addresses show it. Without this, the tests above could pass
    /// on a measure that never changes.
    func testTheAddressesDoRevealACopy() throws {
        var document = JSONDocument(root: ["items": bigArrayOfObjects()])
        let snapshot = document
        let itemsBuffer = documentArrayBuffer(document.root["items"])
        try document.apply(DocumentEvent.increment(path: try documentPointer("/items/0/n")))
        XCTAssertNotEqual(documentArrayBuffer(document.root["items"]), itemsBuffer)
        XCTAssertEqual(documentArrayBuffer(snapshot.root["items"]), itemsBuffer)
        XCTAssertEqual(snapshot.root[try documentPointer("/items/0/n")], 0, "the snapshot changed")
        XCTAssertEqual(document.root[try documentPointer("/items/0/n")], 1)
    }
}
