@testable import ReactorServer
import XCTest

final class EventStreamIDTests: XCTestCase {
    func testAnSSEEventsIDIsItsVersionAndItsHistory() {
        let message = SubscriberMessage.patch(12, [.remove(path: try! JSONPointer("/a"))], history: "9f2c4e71a0b35d86")
        let text = String(decoding: message.serverSentEvent, as: UTF8.self)
        XCTAssertEqual(text, "id: 12-9f2c4e71a0b35d86\nevent: patch\ndata: {\"type\":\"patch\",\"version\":12,\"ops\":[{\"op\":\"remove\",\"path\":\"/a\"}]}\n\n")
    }

    func testParsesBothForms() {
        XCTAssertEqual(EventStreamID.parse("12-9f2c4e71a0b35d86")?.version, 12)
        XCTAssertEqual(EventStreamID.parse("12-9f2c4e71a0b35d86")?.history, "9f2c4e71a0b35d86")
        XCTAssertEqual(EventStreamID.parse("0")?.version, 0)
        XCTAssertNil(EventStreamID.parse("0")!.history)
        XCTAssertEqual(EventStreamID.parse("\(Int64.max)-e")?.version, UInt64(Int64.max))
        // The first "-" ends the version; a cluster's epoch may hold more.
        XCTAssertEqual(EventStreamID.parse("7-shop-2026")?.history, "shop-2026")
    }

    func testRefusesWhatNoStreamSent() {
        for text in ["", "-", "12-", "-9f2c", "x-9f2c", "+1", " 12", "12 ", "\(UInt64(Int64.max) + 1)", "12-a b", "12-é", "12@9f2c",
                     "12-" + String(repeating: "a", count: 65)] {
            XCTAssertNil(EventStreamID.parse(text), text)
        }
    }

    private func parse(_ target: String, lastEventID: String?) throws -> SubscriptionSelection.Request {
        try SubscriptionSelection.parse(HTTPRequest(target: target), lastEventID: lastEventID).get()
    }

    func testLastEventIDResumesInItsHistoryAndWinsOverTheQuery() throws {
        var request = try parse("/stream", lastEventID: "7-h1")
        XCTAssertEqual(request.since, 7)
        XCTAssertEqual(request.history, "h1")
        request = try parse("/stream?history=h0", lastEventID: "7")
        XCTAssertEqual(request.since, 7)
        XCTAssertEqual(request.history, "h0")
        // An EventSource reconnects to the URL it was opened with: the header is what it took since.
        request = try parse("/stream?since=3&history=h0", lastEventID: "7-h1")
        XCTAssertEqual(request.since, 7)
        XCTAssertEqual(request.history, "h1")
        request = try parse("/stream?since=3&history=h0", lastEventID: nil)
        XCTAssertEqual(request.since, 3)
        XCTAssertEqual(request.history, "h0")
    }

    func testAnIDThisServerCannotReadResumesInNoHistory() throws {
        for id in ["7@h1", "seven", "7-", "-1"] {
            let request = try parse("/stream?since=3", lastEventID: id)
            XCTAssertEqual(request.since, 0, id)
            XCTAssertEqual(request.history, HistoryName.unknown, id)
            XCTAssertFalse(HistoryName.isWellFormed(request.history!), "no server's history")
        }
    }
}
