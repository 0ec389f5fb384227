import XCTest

@testable import ReactorClient

final class EventStreamParserTests: XCTestCase {
    func testReadsReactordsRecordsAndSkipsRetryAndHeartbeats() throws {
        var parser = EventStreamParser(maximumLineBytes: 1 << 20)
        let stream = """
            retry: 1000

            id: 12
            event: snapshot
            data: {"type":"snapshot","version":12,"state":{}}

            : heartbeat

            id: 13
            event: patch
            data: {"type":"patch","version":13,"ops":[]}


            """
        XCTAssertEqual(try parser.feed(Array(stream.utf8)), [
            .init(event: "snapshot", id: "12", data: #"{"type":"snapshot","version":12,"state":{}}"#),
            .init(event: "patch", id: "13", data: #"{"type":"patch","version":13,"ops":[]}"#),
        ])
    }

    func testARecordSplitAnywhereComesOutWholeOnce() throws {
        let stream = Array("id: 1\r\nevent: patch\r\ndata: {\"a\":1}\r\n\r\ndata:second\r\r".utf8)
        for split in 0...stream.count {
            var parser = EventStreamParser(maximumLineBytes: 1 << 20)
            let records = try parser.feed(stream[..<split]) + parser.feed(stream[split...])
            XCTAssertEqual(records, [.init(event: "patch", id: "1", data: #"{"a":1}"#), .init(event: nil, id: "1", data: "second")],
                           "split at \(split)")
        }
    }

    func testJoinsDataLinesAndKeepsTheValueAfterOneSpace() throws {
        var parser = EventStreamParser(maximumLineBytes: 1 << 20)
        XCTAssertEqual(try parser.feed(Array("data:a\ndata:  b\ndata\n\n".utf8)), [.init(event: nil, id: nil, data: "a\n b\n")])
    }

    func testRefusesALineLongerThanTheLimit() {
        var parser = EventStreamParser(maximumLineBytes: 8)
        XCTAssertThrowsError(try parser.feed(Array("data: 0123456789\n\n".utf8)))
    }
}
