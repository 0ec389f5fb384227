@testable import ReactorServer
import XCTest

/// The answer to every accepted event, written digit by digit on the stack.
final class VersionBodyTests: XCTestCase {
    func testTheBodyIsTheVersionAsJSON() {
        for version: UInt64 in [0, 1, 9, 10, 99, 100, 12_345, 1 << 32, UInt64(Int64.max), .max] {
            let body = EventPath<JSONDocument>.withVersionBody(version) { [UInt8]($0) }
            XCTAssertEqual(String(decoding: body, as: UTF8.self), #"{"version":\#(version)}"#)
        }
    }
}
