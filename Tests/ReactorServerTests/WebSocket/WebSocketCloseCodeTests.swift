import XCTest

@testable import ReactorServer

/// Which close codes a peer may send (RFC 6455 §7.4), over the whole 16-bit range.
final class WebSocketCloseCodeTests: XCTestCase {
    func testValidityOverEveryCode() {
        let named: Set<UInt16> = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011]
        for raw in UInt16.min...UInt16.max {
            let expected = named.contains(raw) || (3000...4999).contains(raw)
            XCTAssertEqual(WebSocketCloseCode(raw).isValidOnWire, expected, "\(raw)")
        }
    }

    func testNamedCodes() {
        XCTAssertEqual(WebSocketCloseCode.normalClosure.rawValue, 1000)
        XCTAssertEqual(WebSocketCloseCode.goingAway.rawValue, 1001)
        XCTAssertEqual(WebSocketCloseCode.protocolError.rawValue, 1002)
        XCTAssertEqual(WebSocketCloseCode.unsupportedData.rawValue, 1003)
        XCTAssertEqual(WebSocketCloseCode.invalidPayload.rawValue, 1007)
        XCTAssertEqual(WebSocketCloseCode.policyViolation.rawValue, 1008)
        XCTAssertEqual(WebSocketCloseCode.messageTooBig.rawValue, 1009)
        XCTAssertEqual(WebSocketCloseCode.internalError.rawValue, 1011)
        XCTAssertEqual(WebSocketCloseCode.slowConsumer.rawValue, 4008)
        XCTAssertTrue(WebSocketCloseCode.slowConsumer.isValidOnWire)
        XCTAssertFalse(WebSocketCloseCode.noStatusReceived.isValidOnWire)
        XCTAssertFalse(WebSocketCloseCode.abnormalClosure.isValidOnWire)
        XCTAssertEqual(WebSocketCloseCode.messageTooBig.description, "1009 (message too big)")
        XCTAssertEqual(WebSocketCloseCode(4321).description, "4321")
    }
}
