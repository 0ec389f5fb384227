import XCTest

@testable import ReactorServer

/// Well-formed requests come out complete and correct, however the input is split.
final class HTTPWellFormedRequestTests: XCTestCase, HTTPParserTesting {
    func testSimpleGet() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays(
            "GET /index.html?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")))
        XCTAssertEqual(request.method, .get)
        XCTAssertEqual(request.target, "/index.html?x=1")
        XCTAssertEqual(request.path, "/index.html")
        XCTAssertEqual(request.version, .http1_1)
        XCTAssertEqual(Array(request.headers.map(\.name)), ["Host", "Accept"])
        XCTAssertEqual(request.headers["host"], "example.com")
        XCTAssertEqual(request.body, [])
        XCTAssertTrue(request.trailers.isEmpty)
        XCTAssertTrue(request.keepAlive)
        XCTAssertFalse(request.expectsContinue)
        XCTAssertFalse(request.isUpgrade)
    }

    func testPostWithContentLength() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays(
            "POST /submit HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"ok\": true}\n")))
        XCTAssertEqual(request.method, .post)
        XCTAssertEqual(request.body, bytes("{\"ok\": true}\n"))
        XCTAssertEqual(request.headers["content-length"], "13")
    }

    func testChunkedBodyWithExtensionsAndTrailers() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays(
            "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;name=value\r\nhello\r\n"
                + "6;flag\r\n world\r\n"
                + "a\r\n, chunked!\r\n"
                + "0\r\nX-Checksum: abc123\r\nX-Note:  trailing space  \r\n\r\n")))
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self), "hello world, chunked!")
        XCTAssertEqual(request.trailers["x-checksum"], "abc123")
        XCTAssertEqual(request.trailers["X-Note"], "trailing space")
        XCTAssertEqual(request.trailers.count, 2)
        XCTAssertNil(request.headers["x-checksum"], "trailers must not be merged into headers")
        XCTAssertEqual(request.headers.count, 2)
    }

    func testChunkedBodyWithoutTrailers() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays(
            "PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")))
        XCTAssertEqual(request.method, .put)
        XCTAssertEqual(request.body, bytes("abc"))
        XCTAssertTrue(request.trailers.isEmpty)
    }

    func testPipelinedRequestsComeOutInOrder() {
        let events = parseAllWays(
            "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
                + "POST /2 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                + "PUT /3 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n"
                + "DELETE /4 HTTP/1.1\r\n\r\n"
                + "HEAD /5 HTTP/1.1\r\n\r\n")
        let all = requests(events)
        XCTAssertEqual(events.count, 5)
        XCTAssertEqual(all.map(\.target), ["/1", "/2", "/3", "/4", "/5"])
        XCTAssertEqual(all.map(\.method), [.get, .post, .put, .delete, .head])
        XCTAssertEqual(all.map(\.body), [[], bytes("abc"), bytes("de"), [], []])
        XCTAssertEqual(all[0].headers["host"], "a")
        XCTAssertNil(all[1].headers["host"], "headers must not leak from one request into the next")
        XCTAssertEqual(all.map(\.trailers.count), [0, 0, 1, 0, 0])
        XCTAssertEqual(all[3].headers.count, 0, "trailers must not leak into the next request")
    }

    func testHeadHasNoBodyAndTheNextRequestFollows() {
        let all = requests(parseAllWays(
            "HEAD /doc HTTP/1.1\r\nHost: a\r\n\r\nGET /doc HTTP/1.1\r\nHost: a\r\n\r\n"))
        XCTAssertEqual(all.map(\.method), [.head, .get])
        XCTAssertEqual(all.map(\.body), [[], []])
    }

    func testIncompleteRequestWaitsForMoreInput() {
        let parser = HTTPRequestParser()
        var events: [Event] = []
        bytes("GET /slow HTTP/1.1\r\nHo").withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(events, [])
        bytes("st: a\r\n\r\n").withUnsafeBytes { parser.feed($0) { events.append($0) } }
        XCTAssertEqual(events.count, 1)
        XCTAssertEqual(requests(events).first?.headers["host"], "a")
    }

    func testNextConsumesOnlyUpToTheEvent() {
        let parser = HTTPRequestParser()
        let first = "GET /1 HTTP/1.1\r\n\r\n"
        let input = bytes(first + "GET /2 HTTP/1.1\r\n\r\n")
        input.withUnsafeBytes { buffer in
            var rest = buffer
            guard case .request(let request)? = parser.next(from: &rest) else { return XCTFail("no request") }
            XCTAssertEqual(request.target, "/1")
            XCTAssertEqual(rest.count, input.count - first.utf8.count)
            guard case .request(let second)? = parser.next(from: &rest) else { return XCTFail("no second request") }
            XCTAssertEqual(second.target, "/2")
            XCTAssertTrue(rest.isEmpty)
            XCTAssertNil(parser.next(from: &rest))
        }
    }

    func testUncommonMethodArrivesAsOther() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays("PROPFIND /dav HTTP/1.1\r\n\r\n")))
        XCTAssertEqual(request.method, .other("PROPFIND"))
        XCTAssertEqual(request.method.name, "PROPFIND")
    }

    func testObsoleteLineFoldingBecomesSpaces() throws {
        // llhttp 8.1 joins a folded line onto the value; RFC 9112 §5.2 allows replacing the fold
        // with spaces, which is what the handler sees.
        let request = try XCTUnwrap(onlyRequest(parseAllWays("GET / HTTP/1.1\r\nX-A: b\r\n  folded\r\n\r\n")))
        XCTAssertEqual(request.headers["x-a"], "b  folded")
    }
}
