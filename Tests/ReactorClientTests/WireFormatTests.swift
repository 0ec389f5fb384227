import Foundation
import XCTest

@testable import ReactorClient

final class WireFormatTests: XCTestCase {
    func testAnEventGoesOutAsItsMembersAfterItsType() throws {
        XCTAssertEqual(try Increment(path: "/counter", by: 2).wireJSON(encoder: JSONEncoder()),
                       ["type": "increment", "path": "/counter", "by": 2])
    }

    func testAnEventThatEncodesAnotherTypeOrNoObjectIsRefused() {
        struct Mislabelled: RemoteEvent {
            static let eventType = "increment"
            var type = "set"
        }
        struct Scalar: RemoteEvent {
            static let eventType = "increment"
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(1)
            }
        }
        XCTAssertThrowsError(try Mislabelled().wireJSON(encoder: JSONEncoder()))
        XCTAssertThrowsError(try Scalar().wireJSON(encoder: JSONEncoder()))
    }

    func testReadsEveryServerMessage() throws {
        XCTAssertEqual(try ServerMessage(text: #"{"type":"snapshot","version":12,"state":{"a":1}}"#), .snapshot(version: 12, state: ["a": 1]))
        XCTAssertEqual(try ServerMessage(text: #"{"type":"snapshot","version":12,"state":{"a":1},"history":"h1"}"#),
                       .snapshot(version: 12, state: ["a": 1], history: "h1"))
        XCTAssertEqual(try ServerMessage(text: #"{"type":"patch","version":13,"ops":[{"op":"replace","path":"/a","value":2}]}"#),
                       .patch(version: 13, operations: [.replace(path: try JSONPointer("/a"), value: 2)]))
        XCTAssertEqual(try ServerMessage(text: #"{"type":"state","version":13,"state":2}"#), .state(version: 13, state: 2))
        XCTAssertEqual(try ServerMessage(text: #"{"type":"ack","id":"f-1","version":14}"#), .ack(id: "f-1", version: 14))
        let problem: JSON = ["type": "/problems/event-rejected", "title": "Event rejected by the state", "status": 422, "detail": "no"]
        XCTAssertEqual(try ServerMessage(text: #"{"type":"error","id":"f-2","problem":\#(problem)}"#),
                       .error(id: "f-2", problem: RemoteProblem(json: problem)))
        XCTAssertEqual(try ServerMessage(text: #"{"type":"hello"}"#), .unknown(type: "hello"))
        XCTAssertThrowsError(try ServerMessage(text: "not json"))
        XCTAssertThrowsError(try ServerMessage(text: #"{"type":"patch","ops":[]}"#))
        XCTAssertThrowsError(try ServerMessage(text: #"{"type":"patch","version":3,"ops":{}}"#))
    }

    func testAProblemReadsItsMembersAndAnyOtherBodyBecomesOne() {
        let body = Data(#"{"type":"/problems/unauthorized","title":"Unauthorized","status":401,"detail":"a bearer token is required"}"#.utf8)
        let problem = RemoteProblem(httpStatus: 401, body: body)
        XCTAssertEqual(problem.type, "/problems/unauthorized")
        XCTAssertEqual(problem.title, "Unauthorized")
        XCTAssertEqual(problem.status, 401)
        XCTAssertEqual(problem.detail, "a bearer token is required")
        XCTAssertFalse(problem.isWorthRetrying)

        let proxied = RemoteProblem(httpStatus: 502, body: Data("<html>Bad Gateway</html>".utf8))
        XCTAssertEqual(proxied.type, "about:blank")
        XCTAssertEqual(proxied.status, 502)
        XCTAssertEqual(proxied.detail, "<html>Bad Gateway</html>")
        XCTAssertTrue(proxied.isWorthRetrying)
    }

    func testEndpointsKeepAPrefixEncodeThePathAndCarryTheToken() throws {
        let endpoints = RemoteEndpoints(base: URL(string: "https://example.com/reactor/")!, token: "s3cret",
                                        path: JSONPointer(tokens: ["a b", "c+d&e=f", "x/y"]))
        let subscribe = endpoints.subscribe(since: ResumePoint(version: 7, history: "9f2c4e71a0b35d86"))
        XCTAssertEqual(subscribe.url?.absoluteString, "wss://example.com/reactor/subscribe?path=/a%20b/c%2Bd%26e%3Df/x~1y&since=7&history=9f2c4e71a0b35d86")
        XCTAssertEqual(endpoints.stream(since: ResumePoint(version: 7, history: nil)).value(forHTTPHeaderField: "Last-Event-ID"), "7")
        XCTAssertEqual(endpoints.stream(since: ResumePoint(version: 7, history: "9f2c4e71a0b35d86")).value(forHTTPHeaderField: "Last-Event-ID"),
                       "7-9f2c4e71a0b35d86")
        XCTAssertEqual(subscribe.value(forHTTPHeaderField: "Sec-WebSocket-Protocol"), "reactor.v1")
        XCTAssertEqual(subscribe.value(forHTTPHeaderField: "Authorization"), "Bearer s3cret")
        let stream = endpoints.stream(since: nil)
        XCTAssertEqual(stream.url?.absoluteString, "https://example.com/reactor/stream?path=/a%20b/c%2Bd%26e%3Df/x~1y")
        XCTAssertNil(stream.value(forHTTPHeaderField: "Last-Event-ID"))
        let fire = endpoints.fire(["type": "increment", "path": "/n"])
        XCTAssertEqual(fire.url?.absoluteString, "https://example.com/reactor/events")
        XCTAssertEqual(fire.httpMethod, "POST")
    }

    func testBackoffDoublesWithinItsCeilingAndDrawsFromTheUpperHalf() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        for failures in 0..<40 {
            let ceiling = min(Duration.seconds(1), .milliseconds(100) * (1 << min(failures, 30)))
            let delay = backoff.delay(afterFailures: failures)
            XCTAssertGreaterThanOrEqual(delay, ceiling / 2, "after \(failures) failures")
            XCTAssertLessThanOrEqual(delay, ceiling, "after \(failures) failures")
        }
    }
}
