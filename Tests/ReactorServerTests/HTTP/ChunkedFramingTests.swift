@testable import ReactorServer
import XCTest

final class ChunkedFramingTests: XCTestCase {
    /// The reason `body` is refused, fed in two pieces split at `split`.
    private func check(_ body: String, split: Int) -> String? {
        let bytes = Array(body.utf8)
        var framing = ChunkedFraming()
        return bytes.withUnsafeBytes { raw in
            framing.consume(UnsafeRawBufferPointer(rebasing: raw[..<split])) ?? framing.consume(UnsafeRawBufferPointer(rebasing: raw[split...]))
        }
    }

    func testWellFramedBodiesPassHoweverTheyAreSplit() {
        let bodies = [
            "0\r\n\r\n",
            "5\r\nhello\r\n0\r\n\r\n",
            "A;name=\"v;x\"\r\n0123456789\r\n1\r\n\r\r\n0\r\nX-Trailer: done\r\nY: 2\r\n\r\n",
            "1a\r\n" + String(repeating: "z", count: 26) + "\r\n0;ext\r\n\r\n",
        ]
        for body in bodies {
            for split in 0...body.utf8.count {
                XCTAssertNil(check(body, split: split), "\(body.debugDescription) split at \(split)")
            }
        }
    }

    func testLineEndsOtherThanCRLFAreRefusedHoweverTheyAreSplit() {
        let bodies = [
            "2\r\n{}XX0\r\n\r\n",  // two other bytes after the data
            "2\r\n{}\n0\r\n\r\n",  // LF alone after the data
            "20\rX" + String(repeating: "d", count: 32) + "\r\n0\r\n\r\n",  // CR and another byte ending a size line
            "2\n{}\r\n0\r\n\r\n",  // LF alone ending a size line
            "2\r\n{}\r\n0\rX\r\n",  // the last chunk's line
            "2\r\n{}\r\n0\r\n\rX",  // the blank line that ends the body
            "2\r\n{}\r\n0\r\nX-T: 1\n\r\n",  // a trailer line
        ]
        for body in bodies {
            for split in 0...body.utf8.count {
                XCTAssertNotNil(check(body, split: split), "\(body.debugDescription) split at \(split)")
            }
        }
    }
}
