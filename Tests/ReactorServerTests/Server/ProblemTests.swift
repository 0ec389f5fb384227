@testable import ReactorServer
import XCTest

final class ProblemTests: XCTestCase {
    func testAProblemIsRFC9457JSONWithItsHeaders() throws {
        let problem = Problem.methodNotAllowed(.delete, path: "/state", allowed: [.get, .head])
        let response = problem.response
        XCTAssertEqual(response.status.code, 405)
        XCTAssertEqual(response.contentType?.value, "application/problem+json")
        XCTAssertEqual(response.header("Allow"), "GET, HEAD")
        let body = try JSON(parsing: response.body)
        XCTAssertEqual(body["type"], "/problems/method-not-allowed")
        XCTAssertEqual(body["status"], 405)
        XCTAssertEqual(body["title"], "Method not allowed")
        XCTAssertEqual(body["detail"], "/state does not accept DELETE; it accepts GET, HEAD")
    }

    func testMalformedJSONCarriesLineAndColumn() throws {
        do {
            _ = try JSON(parsing: "{\n  \"a\": tru }")
            XCTFail("parsed")
        } catch {
            let body = try JSON(parsing: Problem.malformedJSON(error).response.body)
            XCTAssertEqual(body["line"], 2)
            XCTAssertEqual(body["column"], 8)
            XCTAssertEqual(body["status"], 400)
        }
    }

    func testEachRejectionMapsToItsStatus() {
        XCTAssertEqual(Problem.forEvent(EventRejection("no"), index: nil).status.code, 422)
        XCTAssertEqual(Problem.forEvent(EventRejection("stale", kind: .conflict), index: 2).status.code, 409)
        XCTAssertEqual(Problem.forEvent(EventRejection("stale", kind: .conflict), index: 2).extensions["index"], 2)
        let unknown = Problem.forEvent(EventDecodingError.unknownType("x", known: ["a"]), index: nil)
        XCTAssertEqual(unknown.type, "/problems/unknown-event-type")
        XCTAssertEqual(unknown.extensions["knownTypes"], ["a"])
        XCTAssertEqual(Problem.forEvent(Problem.forbidden("no"), index: 1).status.code, 403)
    }

    func testContentTypesThatCountAsJSON() {
        func isJSON(_ type: String) -> Bool {
            Array(type.utf8).withUnsafeBufferPointer { EventService<JSONDocument>.isJSON(bytes: $0) }
        }
        for type in ["application/json", "application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json", "application/json "] {
            XCTAssertTrue(isJSON(type), type)
        }
        XCTAssertFalse(EventService<JSONDocument>.isJSON(bytes: nil))
        for type in ["text/plain", "application/x-www-form-urlencoded", "application/jsonx", "application/+json", "text/json"] {
            XCTAssertFalse(isJSON(type), type)
        }
    }

    func testIfNoneMatch() {
        let matches = EntityTag.matches
        XCTAssertTrue(matches("\"3\"", "\"3\""))
        XCTAssertTrue(matches("\"1\", \"3\"", "\"3\""))
        XCTAssertTrue(matches("W/\"3\"", "\"3\""))
        XCTAssertTrue(matches("*", "\"3\""))
        XCTAssertFalse(matches("\"4\"", "\"3\""))
    }
}
