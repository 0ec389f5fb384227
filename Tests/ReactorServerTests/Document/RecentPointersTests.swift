import Dispatch
@testable import ReactorServer
import XCTest

/// The reader's per-thread cache of parsed pointers gives what parsing gives, on any thread.
final class RecentPointersTests: XCTestCase {
    func testCachedPointersAreTheParsedOnesWhateverTheOrder() throws {
        // More paths than the table has slots: some share a slot and replace each other.
        let texts = (0..<20).map { "/p\($0)/x~1y" } + ["", "/", "/a~0b", "/counter"] + (0..<300).map { "/player\($0)" }
        for round in 0..<3 {
            for text in (round == 1 ? texts.reversed() : texts) {
                XCTAssertEqual(RecentPointers.pointer(text), try JSONPointer(text), text)
            }
        }
        XCTAssertNil(RecentPointers.pointer("no-slash"))
        XCTAssertNil(RecentPointers.pointer("/bad~2"))
        XCTAssertEqual(RecentPointers.pointer("/counter")?.tokens, ["counter"])
    }

    func testALongPathIsParsedButNotKept() throws {
        let long = "/" + String(repeating: "k", count: 100_000)
        let before = RecentPointers.keptBytes
        XCTAssertEqual(RecentPointers.pointer(long), try JSONPointer(long))
        XCTAssertEqual(RecentPointers.keptBytes, before)
        let short = "/" + String(repeating: "k", count: RecentPointers.longestKept - 1)
        XCTAssertEqual(RecentPointers.pointer(short), try JSONPointer(short))
        XCTAssertGreaterThan(RecentPointers.keptBytes, before)
    }

    func testEveryThreadHasItsOwn() {
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for step in 0..<2_000 {
                let text = "/w\(worker)/\(step % 11)"
                XCTAssertEqual(RecentPointers.pointer(text)?.tokens, ["w\(worker)", "\(step % 11)"])
            }
        }
    }
}
