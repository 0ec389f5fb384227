@testable import ReactorServer
import XCTest

final class RecentRecordsTests: XCTestCase {
    private func record(_ version: UInt64, bytes: Int) -> LogRecord {
        LogRecord(version: version, payload: [UInt8](repeating: 0x31, count: bytes))
    }

    func testTheNewestAreKeptWithinTheCountAndTheBytes() {
        var recent = RecentRecords(maxCount: 4, maxBytes: 1_000)
        for version: UInt64 in 1...6 { recent.append(record(version, bytes: 10)) }
        XCTAssertEqual(recent.after(2, limit: 10)?.map(\.version), [3, 4, 5, 6])
        XCTAssertNil(recent.after(1, limit: 10), "version 2 is no longer held")
        for version: UInt64 in 7...9 { recent.append(record(version, bytes: 400)) }
        // 400 × 3 is past 1,000 bytes: two of the large ones stay.
        XCTAssertEqual(recent.after(7, limit: 10)?.map(\.version), [8, 9])
        XCTAssertNil(recent.after(6, limit: 10))
        XCTAssertEqual(recent.after(8, limit: 1)?.map(\.version), [9])
        XCTAssertNil(recent.after(9, limit: 1), "nothing after the newest")
    }

    func testOneRecordLargerThanTheBytesIsStillKept() {
        var recent = RecentRecords(maxCount: 4, maxBytes: 100)
        recent.append(record(1, bytes: 10))
        recent.append(record(2, bytes: 5_000))
        XCTAssertEqual(recent.after(1, limit: 10)?.map(\.version), [2])
        recent.removeAll()
        XCTAssertNil(recent.first)
    }
}
