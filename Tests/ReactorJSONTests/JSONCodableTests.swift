import Foundation
@testable import ReactorJSON
import XCTest

final class JSONCodableTests: XCTestCase {
    private struct Envelope: Codable, Equatable {
        var id: Int
        var payload: JSON
    }

    func testJSONRoundTripsThroughFoundationCoders() throws {
        let payload = try parsedJSON(#"{"n":null,"b":true,"i":-5,"d":2.5,"s":"é\n","a":[1,[2]],"o":{"k":{}}}"#)
        let data = try JSONEncoder().encode(Envelope(id: 7, payload: payload))
        let decoded = try JSONDecoder().decode(Envelope.self, from: data)
        XCTAssertEqual(decoded, Envelope(id: 7, payload: payload))
        guard case .integer(-5) = decoded.payload["i"] else {
            return XCTFail("integers must decode as integers, got \(String(describing: decoded.payload["i"]))")
        }
    }

    func testInitEncodingGoesThroughTheParser() throws {
        struct State: Codable {
            var name: String
            var count: Int
            var tags: [String]
            var ratio: Double
        }
        let value = try JSON(encoding: State(name: "r", count: 3, tags: ["x"], ratio: 0.5))
        XCTAssertEqual(value, ["name": "r", "count": 3, "tags": ["x"], "ratio": 0.5])
    }

    func testDecodeToTypedValue() throws {
        struct Point: Codable, Equatable {
            var x: Int
            var y: Int
        }
        let value: JSON = ["x": 1, "y": 2]
        XCTAssertEqual(try value.decode(Point.self), Point(x: 1, y: 2))
        XCTAssertThrowsError(try JSON.object(["x": 1]).decode(Point.self))
    }

    func testNonFiniteDoublesEncodeAsNull() throws {
        let data = try JSONEncoder().encode(JSON.array([.number(.nan)]))
        XCTAssertEqual(String(decoding: data, as: UTF8.self), "[null]")
    }
}
