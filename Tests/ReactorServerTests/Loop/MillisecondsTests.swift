@testable import ReactorServer
import XCTest

final class MillisecondsTests: XCTestCase {
    func testAnyDurationAHostConfiguresBecomesTimerMilliseconds() {
        XCTAssertEqual(milliseconds(seconds: 2.5), 2_500)
        XCTAssertEqual(milliseconds(seconds: 0.0004), 1)
        XCTAssertEqual(milliseconds(seconds: 0), 1)
        XCTAssertEqual(milliseconds(seconds: -3), 1)
        XCTAssertEqual(milliseconds(seconds: .nan), 1)
        // Once a trap converting to UInt64; now a year, the longest a timer waits.
        XCTAssertEqual(milliseconds(seconds: .infinity), 365 * 86_400_000)
        XCTAssertEqual(milliseconds(seconds: 1e30), 365 * 86_400_000)
    }
}
