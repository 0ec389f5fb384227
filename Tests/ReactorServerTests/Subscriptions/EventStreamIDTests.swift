@testable import ReactorServer
import XCTest

final class EventStreamIDTests: XCTestCase {
    func testAnSSEEventsIDIsItsVersionAtItsHistory() {
        let message = SubscriberMessage.patch(12, [.remove(path: try! JSONPointer("/a"))], history: "9f2c4e71a0b35d86")
        let text = String(decoding: message.serverSentEvent, as: UTF8.self)
        XCTAssertEqual(text, "id: 12@9f2c4e71a0b35d86\nevent: patch\ndata: {\"type\":\"patch\",\"version\":12,\"ops\":[{\"op\":\"remove\",\"path\":\"/a\"}]}\n\n")
    }

    func testParsesBothForms() {
        XCTAssertEqual(EventStreamID.parse("12@9f2c4e71a0b35d86")?.version, 12)
        XCTAssertEqual(EventStreamID.parse("12@9f2c4e71a0b35d86")?.history, "9f2c4e71a0b35d86")
        XCTAssertEqual(EventStreamID.parse("0")?.version, 0)
        XCTAssertNil(EventStreamID.parse("0")!.history)
        XCTAssertEqual(EventStreamID.parse("\(Int64.max)@e")?.version, UInt64(Int64.max))
    }

    func testRefusesWhatNoStreamSent() {
        for text in ["", "@", "12@", "@9f2c", "x@9f2c", "-1", "+1", " 12", "12 ", "\(UInt64(Int64.max) + 1)", "12@a b", "12@a@b", "12@é",
                     "12@" + String(repeating: "a", count: 65)] {
            XCTAssertNil(EventStreamID.parse(text), text)
        }
    }

    func testLastEventIDResumesInItsHistoryAndTheQueryWins() throws {
        func parse(_ target: String, lastEventID: String?) throws -> SubscriptionSelection.Request {
            try SubscriptionSelection.parse(HTTPRequest(target: target), lastEventID: lastEventID).get()
        }
        var request = try parse("/stream", lastEventID: "7@h1")
        XCTAssertEqual(request.since, 7)
        XCTAssertEqual(request.history, "h1")
        request = try parse("/stream?history=h0", lastEventID: "7@h1")
        XCTAssertEqual(request.history, "h1", "the id's version came with its history")
        request = try parse("/stream?history=h0", lastEventID: "7")
        XCTAssertEqual(request.since, 7)
        XCTAssertEqual(request.history, "h0")
        request = try parse("/stream?since=3&history=h0", lastEventID: "7@h1")
        XCTAssertEqual(request.since, 3)
        XCTAssertEqual(request.history, "h0")
        request = try parse("/stream?since=3", lastEventID: "7@h1")
        XCTAssertNil(request.history, "since in the query wins, and says nothing of a history")
    }

    func testABadLastEventIDIsNamedInTheProblem() {
        guard case .failure(let problem) = SubscriptionSelection.parse(HTTPRequest(target: "/stream"), lastEventID: "7@") else {
            return XCTFail("7@ was taken")
        }
        XCTAssertEqual(problem.status, .badRequest)
        XCTAssertEqual(problem.extensions["parameter"], "Last-Event-ID")
    }
}
