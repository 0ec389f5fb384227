@testable import ReactorServer
import XCTest

/// An idempotency key's entry in Redis: what it holds while its request runs (a claim of its own)
/// and once answered, as text an operator can read with redis-cli.
final class SharedIdempotencyEntryTests: XCTestCase {
    func testEntriesReadBackAsWritten() {
        let entries: [SharedIdempotencyEntry] = [
            .inFlight(fingerprint: "f1", claim: "0a1b"),
            .answered(fingerprint: "f1", status: 200, body: Array(#"{"version":3}"#.utf8)),
            .answered(fingerprint: "f1", status: 422, body: Array("a body with spaces".utf8)),
        ]
        for entry in entries {
            XCTAssertEqual(SharedIdempotencyEntry(bytes: entry.bytes), entry)
        }
        XCTAssertEqual(String(decoding: entries[0].bytes, as: UTF8.self), "p f1 0a1b")
    }

    func testAClaimAnOlderReactordMadeHasNoClaimOfItsOwn() {
        XCTAssertEqual(SharedIdempotencyEntry(bytes: Array("p f1".utf8)), .inFlight(fingerprint: "f1", claim: ""))
        XCTAssertEqual(String(decoding: SharedIdempotencyEntry.inFlight(fingerprint: "f1", claim: "").bytes, as: UTF8.self), "p f1")
    }

    func testEachNewClaimIsItsOwn() {
        let claims = (0..<100).map { _ in SharedIdempotencyEntry.newClaim(fingerprint: "f") }
        XCTAssertEqual(Set(claims.map(\.bytes)).count, 100)
        guard case .inFlight("f", let claim) = claims[0] else { return XCTFail("\(claims[0])") }
        XCTAssertEqual(claim.count, 32)
        XCTAssertNotEqual(claims[0], .inFlight(fingerprint: "f", claim: ""))
    }

    func testWhatReactordNeverWritesIsNotAnEntry() {
        for text in ["", "p", "x f1", "d f1 200", "d f1 ok body", "p f1  "] {
            XCTAssertNil(SharedIdempotencyEntry(bytes: Array(text.utf8)), text)
        }
    }
}
