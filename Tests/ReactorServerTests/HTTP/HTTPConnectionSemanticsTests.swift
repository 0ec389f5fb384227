import XCTest

@testable import ReactorServer

/// Keep-alive, `Expect: 100-continue` and upgrades: what the server needs to manage the connection.
final class HTTPConnectionSemanticsTests: XCTestCase, HTTPParserTesting {
    // MARK: Keep-alive

    func testKeepAliveDefaultsAndConnectionHeader() throws {
        let cases: [(String, HTTPVersion, Bool)] = [
            ("GET / HTTP/1.1\r\n\r\n", .http1_1, true),
            ("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", .http1_1, false),
            ("GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", .http1_1, true),
            ("GET / HTTP/1.0\r\n\r\n", .http1_0, false),
            ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", .http1_0, true),
            ("GET / HTTP/1.0\r\nConnection: close\r\n\r\n", .http1_0, false),
        ]
        for (input, version, keepAlive) in cases {
            let request = try XCTUnwrap(onlyRequest(parseAllWays(input)), input)
            XCTAssertEqual(request.version, version, input)
            XCTAssertEqual(request.keepAlive, keepAlive, input)
        }
    }

    func testNothingIsParsedAfterARequestWithoutKeepAlive() {
        let events = parseAllWays(
            "GET /1 HTTP/1.1\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\n\r\n", atEOF: true)
        XCTAssertEqual(requests(events).map(\.target), ["/1"])
        XCTAssertEqual(events.count, 1)

        let parser = HTTPRequestParser()
        bytes("GET / HTTP/1.0\r\n\r\n").withUnsafeBytes { parser.feed($0) { _ in } }
        XCTAssertEqual(parser.phase, .closed)
    }

    // MARK: Expect: 100-continue

    func testExpectContinueIsReportedBeforeTheBody() throws {
        let head = "POST /big HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        let parser = HTTPRequestParser()
        var events: [Event] = []
        bytes(head).withUnsafeBytes { parser.feed($0) { events.append($0) } }
        guard events.count == 1, case .expectsContinue(let early) = events[0] else {
            return XCTFail("expected .expectsContinue alone, got \(events)")
        }
        XCTAssertEqual(early.target, "/big")
        XCTAssertTrue(early.expectsContinue)
        XCTAssertEqual(early.body, [])

        events = []
        bytes("hello").withUnsafeBytes { parser.feed($0) { events.append($0) } }
        let request = try XCTUnwrap(onlyRequest(events))
        XCTAssertEqual(request.body, bytes("hello"))
        XCTAssertTrue(request.expectsContinue)

        // All at once (or split anywhere) the same two events come out, in that order.
        let all = parseAllWays(head + "hello")
        XCTAssertEqual(all, [.expectsContinue(early), .request(request)])
    }

    func testWithAnnouncedBodiesAHeadWhoseBodyIsStillToComeComesFirst() throws {
        let head = "POST /events HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"
        let parser = HTTPRequestParser(announcesBodies: true)
        var events: [Event] = []
        bytes(head + "he").withUnsafeBytes { parser.feed($0) { events.append($0) } }
        guard events.count == 1, case .bodyFollows(let early) = events[0] else {
            return XCTFail("expected .bodyFollows alone, got \(events)")
        }
        XCTAssertEqual(early.target, "/events")
        XCTAssertEqual(early.body, [])
        events = []
        bytes("llo").withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(try XCTUnwrap(onlyRequest(events)).body, bytes("hello"))

        // A body that came whole with its head, or no body: nothing announced.
        let whole = HTTPRequestParser(announcesBodies: true)
        events = []
        bytes(head + "hello" + "GET / HTTP/1.1\r\nHost: a\r\n\r\n").withUnsafeBytes { whole.feed($0) { events.append($0) } }
        XCTAssertEqual(requests(events).map(\.target), ["/events", "/"])
        XCTAssertEqual(events.count, 2)

        // A chunked body's length is not known ahead: announced. Stopped there, nothing more is read.
        let chunked = HTTPRequestParser(announcesBodies: true)
        events = []
        bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n").withUnsafeBytes { input in
            chunked.feed(input) { event in
                events.append(event)
                if case .bodyFollows = event { chunked.stop() }
            }
        }
        XCTAssertEqual(events.count, 1)
        XCTAssertEqual(chunked.phase, .closed)

        // Without announcesBodies (the default) a body still to come is not announced.
        events = []
        bytes(head + "he").withUnsafeBytes { HTTPRequestParser().feed($0) { events.append($0) } }
        XCTAssertEqual(events, [])
    }

    func testExpectContinueWithChunkedBody() {
        let events = parseAllWays(
            "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n")
        XCTAssertEqual(events.count, 2)
        guard case .expectsContinue? = events.first else { return XCTFail("got \(events)") }
    }

    func testExpectContinueIsNotReportedWithoutABodyOrFromHTTP10() throws {
        let noBody = try XCTUnwrap(onlyRequest(parseAllWays(
            "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n")))
        XCTAssertTrue(noBody.expectsContinue)

        // RFC 9110 §10.1.1: a server must ignore 100-continue from an HTTP/1.0 client.
        let old = try XCTUnwrap(onlyRequest(parseAllWays(
            "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx")))
        XCTAssertFalse(old.expectsContinue)
    }

    func testOnlyThe100ContinueExpectationCountsAndOnlyForItsOwnRequest() {
        let all = requests(parseAllWays(
            "POST /1 HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"
                + "POST /2 HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"
                + "POST /3 HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx"
                + "POST /4 HTTP/1.1\r\nX-Expect: 100-continue\r\nContent-Length: 1\r\n\r\nx"))
        XCTAssertEqual(all.map(\.expectsContinue), [true, false, false, false])
    }

    // MARK: Upgrade

    func testWebSocketUpgradeHandsBackTheFollowingBytes() {
        let frame: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        let handshake = bytes(
            "GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        // Bytes that look like HTTP after the frame must not be parsed as a request either.
        let trailing = bytes("GET /not-http HTTP/1.1\r\n\r\n")
        let events = parseAllWays(handshake + frame + trailing)
        guard events.count == 1, case .upgrade(let request, let leftover) = events[0] else {
            return XCTFail("expected one .upgrade, got \(events)")
        }
        XCTAssertTrue(request.isUpgrade)
        XCTAssertEqual(request.path, "/chat")
        XCTAssertTrue(request.headers.containsToken("upgrade", in: "connection"))
        XCTAssertEqual(request.headers["sec-websocket-key"], "dGhlIHNhbXBsZSBub25jZQ==")
        XCTAssertEqual(leftover, frame + trailing)
    }

    func testUpgradeWithNothingAfterItHasEmptyLeftover() {
        let parser = HTTPRequestParser()
        var events: [Event] = []
        bytes("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n")
            .withUnsafeBytes { parser.feed($0) { events.append($0) } }
        guard case .upgrade(_, let leftover)? = events.first else { return XCTFail("got \(events)") }
        XCTAssertEqual(leftover, [])
        XCTAssertEqual(parser.phase, .upgraded)
    }

    func testDeclinedUpgradeContinuesAsHTTP() {
        let parser = HTTPRequestParser()
        var events: [Event] = []
        bytes("GET /a HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
            .withUnsafeBytes { parser.feed($0) { events.append($0) } }
        guard events.count == 1, case .upgrade(let request, let leftover) = events[0] else {
            return XCTFail("expected one .upgrade, got \(events)")
        }
        XCTAssertEqual(request.target, "/a")
        parser.declineUpgrade()
        events = []
        leftover.withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(requests(events).map(\.target), ["/b"])
    }

    func testDeclinedUpgradeWithConnectionCloseEndsTheConnection() {
        let parser = HTTPRequestParser()
        var events: [Event] = []
        bytes("GET /a HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade, close\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
            .withUnsafeBytes { parser.feed($0) { events.append($0) } }
        guard events.count == 1, case .upgrade(let request, let leftover) = events[0] else {
            return XCTFail("expected one .upgrade, got \(events)")
        }
        XCTAssertFalse(request.keepAlive)
        parser.declineUpgrade()
        XCTAssertEqual(parser.phase, .closed)
        events = []
        leftover.withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(events, [])
    }

    func testUpgradeHeaderWithoutConnectionUpgradeIsAPlainRequest() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays("GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n")))
        XCTAssertFalse(request.isUpgrade)
    }

    func testConnectIsAnUpgrade() {
        let events = parseAllWays("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n\u{16}\u{03}\u{01}")
        guard case .upgrade(let request, let leftover)? = events.first else { return XCTFail("got \(events)") }
        XCTAssertEqual(request.method, .connect)
        XCTAssertEqual(request.target, "example.com:443")
        XCTAssertEqual(leftover, [0x16, 0x03, 0x01])
    }
}
