import XCTest

@testable import ReactorServer

/// Header lookup: case-insensitive, ordered, whitespace-trimmed, no surprises with duplicates.
final class HTTPHeadersTests: XCTestCase, HTTPParserTesting {
    private func request() throws -> HTTPRequest {
        try XCTUnwrap(onlyRequest(parseAllWays(
            "GET / HTTP/1.1\r\nHost: example.com\r\nX-Multi: one\r\nCONTENT-type: text/plain \t\r\n"
                + "x-multi:two\r\nConnection: keep-alive, Upgrade\r\nX-Empty:\r\nX-Caret^: c\r\n\r\n")))
    }

    func testLookupIgnoresCase() throws {
        let headers = try request().headers
        XCTAssertEqual(headers["host"], "example.com")
        XCTAssertEqual(headers["HOST"], "example.com")
        XCTAssertEqual(headers["Content-Type"], "text/plain")
        XCTAssertNil(headers["Hos"])
        XCTAssertNil(headers["Hostx"])
        XCTAssertTrue(headers.contains("x-EMPTY"))
        XCTAssertFalse(headers.contains("x-missing"))
    }

    func testCaseFoldingIsOnlyForLetters() throws {
        // '^' and '~' differ only in bit 0x20, like 'a' and 'A'; they must not match.
        let headers = try request().headers
        XCTAssertEqual(headers["x-caret^"], "c")
        XCTAssertNil(headers["x-caret~"])
    }

    func testOrderDuplicatesAndTrimming() throws {
        let headers = try request().headers
        XCTAssertEqual(headers.map(\.name), ["Host", "X-Multi", "CONTENT-type", "x-multi", "Connection", "X-Empty", "X-Caret^"])
        XCTAssertEqual(headers.values(for: "X-MULTI"), ["one", "two"])
        XCTAssertEqual(headers["x-multi"], "one")
        XCTAssertEqual(headers["x-empty"], "")
        XCTAssertEqual(headers.firstValueBytes("content-type").map(Array.init), bytes("text/plain"))
    }

    func testTokenLists() throws {
        let headers = try request().headers
        XCTAssertTrue(headers.containsToken("upgrade", in: "connection"))
        XCTAssertTrue(headers.containsToken("Keep-Alive", in: "Connection"))
        XCTAssertFalse(headers.containsToken("close", in: "connection"))
        XCTAssertFalse(headers.containsToken("websocket", in: "connection"))
    }

    func testBuiltHeadersEqualParsedOnes() throws {
        let built = HTTPHeaders([("Host", "a"), ("X", "1")])
        let parsed = try XCTUnwrap(onlyRequest(parseAllWays("GET / HTTP/1.1\r\nHost: a\r\nX:  1 \r\n\r\n"))).headers
        XCTAssertEqual(built, parsed)
        XCTAssertNotEqual(HTTPHeaders([("Host", "a"), ("X", "2")]), parsed)
        XCTAssertNotEqual(HTTPHeaders([("host", "a"), ("X", "1")]), parsed)
    }

    func testHostCountAndContentTypeAreNotedAsTheHeadIsReadAndAsFieldsAreAdded() throws {
        let parsed = try request().headers
        XCTAssertEqual(parsed.hostCount, 1)
        XCTAssertEqual(parsed.withContentType { $0.map(Array.init) }, bytes("text/plain"))
        let twice = try XCTUnwrap(onlyRequest(parseAllWays(
            "POST / HTTP/1.1\r\nhOsT: a\r\nContent-Type: application/json\r\nHost: b\r\ncontent-types: text/plain\r\n"
                + "Hosts: c\r\nContent-Length: 0\r\n\r\n"))).headers
        XCTAssertEqual(twice.hostCount, 2, "Hosts is another field")
        XCTAssertEqual(twice.withContentType { $0.map(Array.init) }, bytes("application/json"), "Content-Types is another field")
        let none = try XCTUnwrap(onlyRequest(parseAllWays("GET / HTTP/1.0\r\nX: 1\r\n\r\n"))).headers
        XCTAssertEqual(none.hostCount, 0)
        XCTAssertNil(none.withContentType { $0.map(Array.init) })
        var built = HTTPHeaders([("X", "1"), ("HOST", "a")])
        built.append(name: "Content-TYPE", value: "application/x+json")
        XCTAssertEqual(built.hostCount, 1)
        XCTAssertEqual(built.withContentType { $0.map(Array.init) }, bytes("application/x+json"))
        // Trailers are not headers: a Host trailer counts for neither.
        let chunked = try XCTUnwrap(onlyRequest(parseAllWays(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nHost: b\r\nContent-Type: t\r\n\r\n")))
        XCTAssertEqual(chunked.headers.hostCount, 1)
        XCTAssertNil(chunked.headers.withContentType { $0.map(Array.init) })
    }

    func testFieldNamesAreComparedIgnoringCaseAWordAtATime() {
        func isName(_ text: String, _ name: StaticString) -> Bool {
            Array(text.utf8).withUnsafeBufferPointer { HTTPASCII.isFieldName($0, name) }
        }
        for spelling in ["content-type", "Content-Type", "CONTENT-TYPE", "cOnTeNt-TyPe"] {
            XCTAssertTrue(isName(spelling, "content-type"), spelling)
        }
        XCTAssertTrue(isName("HOST", "host"))
        // A difference in either word of twelve bytes, in the separator, or in the length.
        for other in ["xontent-type", "content-typo", "content_type", "content-typ", "content-types", "contenttype!"] {
            XCTAssertFalse(isName(other, "content-type"), other)
        }
        XCTAssertFalse(isName("hosts", "host"))
        XCTAssertFalse(isName("", "host"))
    }
}
