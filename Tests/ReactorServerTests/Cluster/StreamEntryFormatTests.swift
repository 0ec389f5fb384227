@testable import ReactorServer
import TestSupport
import XCTest

/// How the cluster's stream holds events (`StreamEntryFormat`): one entry per append, its ID the
/// version of its last event, its records length-prefixed in `g`; entries of one record in `e`
/// read as well; anything else refused, never skipped.
final class StreamEntryFormatTests: XCTestCase {
    private func records(_ payloads: [String], last: UInt64) -> [LogRecord] {
        let first = last - UInt64(payloads.count) + 1
        return payloads.enumerated().map { LogRecord(version: first + UInt64($0.offset), payload: Array($0.element.utf8)) }
    }

    private func entry(_ id: String, _ fields: [(String, [UInt8])]) -> RedisReply {
        .array([.bulk(Array(id.utf8)), .array(fields.flatMap { [RedisReply.bulk(Array($0.0.utf8)), .bulk($0.1)] })])
    }

    func testAGroupIsItsRecordsLengthPrefixedAndReadableInRedisCli() {
        let group = StreamEntryFormat.group(records(["{\"type\":\"increment\"}", "{\"a\": 1}"], last: 8))
        XCTAssertEqual(String(decoding: group, as: UTF8.self), "20 {\"type\":\"increment\"}\n8 {\"a\": 1}\n")
    }

    func testRecordsHoldingSpacesNewlinesOrNothingComeBackWithTheVersionsBeforeTheLast() throws {
        let kept = records(["{\n  \"type\": \"set\",\n  \"value\": \"a b\\n\"\n}", "", " \n", "12 {}\n"], last: 41)
        let read = try XCTUnwrap(StreamEntryFormat.records(ofGroup: StreamEntryFormat.group(kept), lastVersion: 41))
        XCTAssertEqual(read, kept)
        XCTAssertEqual(read.map(\.version), [38, 39, 40, 41])
    }

    func testAnEntrysIdentityIsItsVersionNodeAndRecords() {
        let entry = RedisReply.array([.bulk(Array("7-0".utf8)), .array([.bulk(Array("n".utf8)), .bulk(Array("a".utf8)),
                                                                         .bulk(Array("g".utf8)), .bulk(Array("2 {}\n".utf8))])])
        XCTAssertEqual(StreamEntryFormat.Identity(entry: entry), StreamEntryFormat.Identity(version: 7, node: Array("a".utf8), records: Array("2 {}\n".utf8)))
        // The same records appended by another node, or others at that version: another entry.
        XCTAssertNotEqual(StreamEntryFormat.Identity(entry: entry), StreamEntryFormat.Identity(version: 7, node: Array("b".utf8), records: Array("2 {}\n".utf8)))
        XCTAssertNotEqual(StreamEntryFormat.Identity(entry: entry), StreamEntryFormat.Identity(version: 7, node: Array("a".utf8), records: Array("2 []\n".utf8)))
        XCTAssertNil(StreamEntryFormat.Identity(entry: .array([.bulk(Array("7-1".utf8)), .array([])])))
    }

    func testWhatGroupDoesNotWriteIsRefused() {
        let damaged: [String] = [
            "",                // no record
            "3 abc",           // no newline after the record
            "3 ab\n",          // shorter than it says
            "3 abcd\n",        // the newline is not where the length says
            "x abc\n",         // not a length
            " abc\n",          // no digits
            "3abc\n",          // no space
            "-3 abc\n",
            "99999999999 a\n", // eleven digits
            "2000000000 a\n",  // longer than any record read
            "1 a\n1 b",        // the second one cut short
        ]
        for bytes in damaged {
            XCTAssertNil(StreamEntryFormat.records(ofGroup: Array(bytes.utf8), lastVersion: 100), bytes)
        }
        // More records than there are versions up to the entry's.
        XCTAssertNil(StreamEntryFormat.records(ofGroup: Array("1 a\n1 b\n".utf8), lastVersion: 1))
        XCTAssertNotNil(StreamEntryFormat.records(ofGroup: Array("1 a\n1 b\n".utf8), lastVersion: 2))
    }

    func testEntriesOfGroupsAndOfSingleRecordsReadInOrder() throws {
        let entries: [RedisReply] = [
            entry("1-0", [("n", Array("a".utf8)), ("e", Array("{\"one\":1}".utf8))]),
            entry("4-0", [("n", Array("b".utf8)), ("g", StreamEntryFormat.group(records(["x", "y", "z"], last: 4)))]),
            entry("5-0", [("g", StreamEntryFormat.group(records(["w"], last: 5))), ("n", Array("a".utf8))]),
        ]
        let read = try StreamEntryFormat.records(of: entries)
        XCTAssertEqual(read.map(\.version), [1, 2, 3, 4, 5])
        XCTAssertEqual(read.map { String(decoding: $0.payload, as: UTF8.self) }, ["{\"one\":1}", "x", "y", "z", "w"])
    }

    /// A page of records: those after a version, at most so many, and no entry decoded past them
    /// (here a damaged one, which would fail the read if it were).
    func testAPageStopsDecodingOnceItHasItsRecords() throws {
        let entries: [RedisReply] = [
            entry("3-0", [("g", StreamEntryFormat.group(records(["a", "b", "c"], last: 3)))]),
            entry("6-0", [("g", StreamEntryFormat.group(records(["d", "e", "f"], last: 6)))]),
            entry("9-0", [("g", Array("1 a".utf8))]),
        ]
        let page = try StreamEntryFormat.records(of: entries, after: 2, limit: 3)
        XCTAssertEqual(page.map(\.version), [3, 4, 5])
        XCTAssertEqual(page.map { String(decoding: $0.payload, as: UTF8.self) }, ["c", "d", "e"])
        XCTAssertEqual(try StreamEntryFormat.records(of: entries, after: 0, limit: 1).map(\.version), [1])
        XCTAssertThrowsError(try StreamEntryFormat.records(of: entries, after: 2, limit: 5), "the damaged entry is reached")
    }

    func testAnEntryReactordDoesNotWriteFailsTheReadNamingIt() {
        let unreadable: [RedisReply] = [
            entry("7-1", [("e", Array("{}".utf8))]),                      // not <version>-0
            entry("7-0", [("n", Array("a".utf8))]),                        // no records
            entry("7-0", [("g", Array("1 a".utf8))]),                      // a damaged group
            .array([.bulk(Array("7-0".utf8))]),                            // no fields
            .bulk(Array("7-0".utf8)),
        ]
        for bad in unreadable {
            XCTAssertThrowsError(try StreamEntryFormat.records(of: [bad])) { error in
                XCTAssertEqual((error as? EventLogError)?.kind, .damaged, "\(bad)")
            }
        }
        // Versions that go back: two entries overlapping.
        let overlapping = [
            entry("4-0", [("g", StreamEntryFormat.group(records(["x", "y"], last: 4)))]),
            entry("5-0", [("g", StreamEntryFormat.group(records(["z", "w"], last: 5)))]),
        ]
        XCTAssertThrowsError(try StreamEntryFormat.records(of: overlapping))
    }

    /// Random records survive the trip; random bytes are read or refused, never a crash, and what
    /// is read is at most one record per version.
    func testRandomGroupsRoundTripAndRandomBytesNeverCrash() {
        var random = SeededRandom(seed: 20)
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...6, using: &random)
            let last = UInt64.random(in: UInt64(count)...1_000_000, using: &random)
            let kept = (0..<count).map { offset in
                LogRecord(version: last - UInt64(count - 1 - offset),
                          payload: (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            }
            XCTAssertEqual(StreamEntryFormat.records(ofGroup: StreamEntryFormat.group(kept), lastVersion: last), kept)

            var bytes = StreamEntryFormat.group(kept)
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                switch Int.random(in: 0...2, using: &random) {
                case 0 where !bytes.isEmpty: bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                case 1 where !bytes.isEmpty: bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
                default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
                }
            }
            if let read = StreamEntryFormat.records(ofGroup: bytes, lastVersion: last) {
                XCTAssertLessThanOrEqual(UInt64(read.count), last)
                XCTAssertEqual(read.last?.version, last)
            }
        }
    }
}
