import XCTest

@testable import ReactorServer

/// What one client can make the server buffer is bounded, with the status the server must answer.
final class HTTPRequestLimitTests: XCTestCase, HTTPParserTesting {
    func testHeadersLargerThanTheDefaultLimitAre431() {
        let big = String(repeating: "a", count: 16 * 1024)
        let events = parseAllWays("GET / HTTP/1.1\r\nX-Big: \(big)\r\n\r\n")
        XCTAssertEqual(events, [.error(.headersTooLarge)])
        XCTAssertEqual(HTTPParseError.headersTooLarge.status, 431)
    }

    func testHeaderLimitCountsRequestLineAndHeadersExactly() {
        let limits = HTTPLimits(maxHeaderBytes: 64)
        let head = "GET / HTTP/1.1\r\nX: "  // 19 bytes, plus value, plus "\r\n\r\n"
        let fits = head + String(repeating: "v", count: 64 - 19 - 4) + "\r\n\r\n"
        XCTAssertEqual(fits.utf8.count, 64)
        XCTAssertEqual(requests(parseAllWays(fits, limits: limits)).count, 1)
        let tooBig = head + String(repeating: "v", count: 64 - 19 - 4 + 1) + "\r\n\r\n"
        XCTAssertEqual(parseAllWays(tooBig, limits: limits), [.error(.headersTooLarge)])
    }

    func testHugeTargetIsRefusedWhileStillArriving() {
        // No headers at all, and the head never ends: the limit must still trigger.
        let parser = HTTPRequestParser(limits: HTTPLimits(maxHeaderBytes: 1024))
        var events: [Event] = []
        bytes("GET /" + String(repeating: "x", count: 2000)).withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(events, [.error(.headersTooLarge)])
    }

    func testWhitespaceThatIsNeverStoredStillCounts() {
        let padding = String(repeating: " ", count: 100)
        let events = parseAllWays("GET / HTTP/1.1\r\nX:\(padding)v\r\n\r\n", limits: HTTPLimits(maxHeaderBytes: 64))
        XCTAssertEqual(events, [.error(.headersTooLarge)])
    }

    func testTooManyHeaders() {
        func request(withHeaders count: Int) -> String {
            "GET / HTTP/1.1\r\n" + (0..<count).map { "H\($0): v\r\n" }.joined() + "\r\n"
        }
        XCTAssertEqual(requests(parseAllWays(request(withHeaders: 100))).first?.headers.count, 100)
        XCTAssertEqual(parseAllWays(request(withHeaders: 101)), [.error(.tooManyHeaders)])
        XCTAssertEqual(HTTPParseError.tooManyHeaders.status, 431)
    }

    func testBodyTooLargeByContentLengthIsRefusedBeforeTheBodyArrives() {
        let parser = HTTPRequestParser()
        var events: [Event] = []
        bytes("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1048577\r\n\r\n")
            .withUnsafeBytes { parser.feed($0) { events.append($0) } }
        // No .expectsContinue: the client must get 413 instead of an invitation to send.
        XCTAssertEqual(events, [.error(.bodyTooLarge)])
        XCTAssertEqual(HTTPParseError.bodyTooLarge.status, 413)
    }

    func testBodyAtTheLimitIsAccepted() {
        let limits = HTTPLimits(maxBodyBytes: 10)
        let body = String(repeating: "b", count: 10)
        XCTAssertEqual(requests(parseAllWays("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n" + body, limits: limits)).first?.body.count, 10)
        XCTAssertEqual(
            parseAllWays("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n" + body + "b", limits: limits),
            [.error(.bodyTooLarge)])
    }

    func testChunkedBodyTooLargeIsRefusedAtTheChunkHeader() {
        let limits = HTTPLimits(maxBodyBytes: 10)
        let parser = HTTPRequestParser(limits: limits)
        var events: [Event] = []
        // The second chunk's size alone shows the body will be 12 bytes; its data never comes.
        bytes("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\n")
            .withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(events, [.error(.bodyTooLarge)])

        XCTAssertEqual(
            requests(parseAllWays("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n4\r\nghij\r\n0\r\n\r\n", limits: limits)).first?.body.count,
            10)
    }

    func testEndlessChunkExtensionIsRefused() {
        // Chunk extensions are skipped without being stored; the wire count still ends them.
        let limits = HTTPLimits(maxHeaderBytes: 256, maxBodyBytes: 64)
        let events = parseAllWays(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 1000) + "\r\nx\r\n0\r\n\r\n",
            limits: limits)
        XCTAssertEqual(events, [.error(.bodyTooLarge)])
    }

    func testTooLargeAndTooManyTrailers() {
        let limits = HTTPLimits(maxHeaderBytes: 128, maxHeaderCount: 3)
        let head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"
        XCTAssertEqual(
            parseAllWays(head + "T: " + String(repeating: "t", count: 200) + "\r\n\r\n", limits: limits),
            [.error(.headersTooLarge)])
        XCTAssertEqual(
            parseAllWays(head + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits: limits),
            [.error(.tooManyHeaders)])
        XCTAssertEqual(requests(parseAllWays(head + "A: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits)).first?.trailers.count, 3)
    }

    func testOversizedTrailersAfterOversizedFramingGiveOneAnswer() {
        // Both the trailer budget (48) and the body framing budget (2 * 4 + 48) run out near the
        // same byte; the error must not depend on where reads happened to end.
        let limits = HTTPLimits(maxHeaderBytes: 48, maxBodyBytes: 4)
        let events = parseAllWays(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n" + String(repeating: "T", count: 50) + ": v\r\n\r\n",
            limits: limits)
        XCTAssertEqual(events, [.error(.bodyTooLarge)])
    }

    func testBodyIsNotReservedAtItsAnnouncedSizeNorKeptAfterHandOut() {
        let parser = HTTPRequestParser()
        bytes("POST / HTTP/1.1\r\nContent-Length: 1000000\r\n\r\nab").withUnsafeBytes { parser.feed($0) { _ in } }
        XCTAssertLessThanOrEqual(parser.bufferedCapacity, 32 * 1024)

        var events: [Event] = []
        Array(repeating: UInt8(ascii: "z"), count: 999_998).withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(requests(events).first?.body.count, 1_000_000)
        XCTAssertEqual(parser.bufferedCapacity, 0, "the parser must not hold on to a handed-out body")
    }

    /// The server hands each request back once handled: its small buffers serve the next request,
    /// emptied; a large body is not kept.
    func testRecycledBuffersAreEmptiedAndOnlySmallOnesAreKept() throws {
        let parser = HTTPRequestParser()
        func next(_ text: String) throws -> HTTPRequest {
            var events: [Event] = []
            bytes(text).withUnsafeBytes { parser.feed($0) { events.append($0) } }
            return try XCTUnwrap(onlyRequest(events))
        }
        let first = try next("POST /a HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nX-Long: " + String(repeating: "v", count: 100) + "\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(first.body, bytes("hello"))
        parser.recycle(first)
        XCTAssertGreaterThan(parser.bufferedCapacity, 0, "small buffers are kept for the next request")
        let second = try next("GET /b HTTP/1.1\r\nHost: i\r\n\r\n")
        XCTAssertEqual(second.target, "/b")
        XCTAssertEqual(second.headers.map(\.name), ["Host"])
        XCTAssertEqual(second.headers["host"], "i")
        XCTAssertNil(second.headers.withContentType { $0.map(Array.init) })
        XCTAssertEqual(second.body, [], "nothing of the first request's body is left")
        parser.recycle(second)
        let large = try next("POST /c HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "x", count: 5000))
        XCTAssertEqual(large.body.count, 5000)
        parser.recycle(large)
        XCTAssertLessThanOrEqual(parser.bufferedCapacity, 4096, "a large body is not kept")
    }
}
