@testable import ReactorServer
import XCTest

/// `RawBytes.equal` compares eight bytes at a time, then the rest one by one: every length up to
/// three words, equal, and differing at each position in turn (words and tail alike).
final class RawBytesTests: XCTestCase {
    func testEveryLengthAndEveryDifferingPosition() {
        for count in 0...24 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            bytes.withUnsafeBytes { a in
                let same = Array(bytes)
                same.withUnsafeBytes { b in XCTAssertTrue(RawBytes.equal(a, b), "length \(count)") }
                for position in 0..<count {
                    var other = bytes
                    other[position] ^= 0x80
                    other.withUnsafeBytes { b in XCTAssertFalse(RawBytes.equal(a, b), "length \(count), byte \(position)") }
                }
                let longer = bytes + [0]
                longer.withUnsafeBytes { b in XCTAssertFalse(RawBytes.equal(a, b), "length \(count) against one more") }
            }
        }
    }

    func testAgainstStaticText() {
        XCTAssertTrue(Array("application/json".utf8).withUnsafeBytes { RawBytes.equal($0, "application/json") })
        XCTAssertFalse(Array("application/jsoN".utf8).withUnsafeBytes { RawBytes.equal($0, "application/json") })
        XCTAssertFalse(Array("application/json ".utf8).withUnsafeBytes { RawBytes.equal($0, "application/json") })
        XCTAssertTrue(RawBytes.equal(UnsafeRawBufferPointer(start: nil, count: 0), ""))
        XCTAssertFalse(RawBytes.equal(UnsafeRawBufferPointer(start: nil, count: 0), "x"))
    }
}
