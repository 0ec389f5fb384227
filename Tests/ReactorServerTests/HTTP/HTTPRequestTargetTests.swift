import XCTest

@testable import ReactorServer

/// Path and query as handlers see them.
final class HTTPRequestTargetTests: XCTestCase, HTTPParserTesting {
    func testQueryItemsArePercentDecodedWithPlusAsSpace() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays(
            "GET /search?q=caf%C3%A9+au+lait&empty=&flag&&a=1&a=2&sp%20ace=x%2By HTTP/1.1\r\n\r\n")))
        XCTAssertEqual(request.path, "/search")
        XCTAssertEqual(request.query, "q=caf%C3%A9+au+lait&empty=&flag&&a=1&a=2&sp%20ace=x%2By")
        XCTAssertEqual(request.queryItems, [
            HTTPQueryItem(name: "q", value: "café au lait"),
            HTTPQueryItem(name: "empty", value: ""),
            HTTPQueryItem(name: "flag", value: ""),
            HTTPQueryItem(name: "a", value: "1"),
            HTTPQueryItem(name: "a", value: "2"),
            HTTPQueryItem(name: "sp ace", value: "x+y"),
        ])
        XCTAssertEqual(request.queryValue("a"), "1")
        XCTAssertNil(request.queryValue("missing"))
    }

    func testAMalformedPercentEscapeAnywhereInTheTargetIsRefused() {
        for target in ["/state?path=/a%2", "/state?path=/a%zz", "/a%", "/%G0", "/ok?x=%4"] {
            let events = parseAllWays("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            guard events.count == 1, case .error(.malformed(let name, _)) = events[0] else {
                XCTFail("\(target): \(events)")
                continue
            }
            XCTAssertEqual(name, "target", target)
        }
        XCTAssertNotNil(onlyRequest(parseAllWays("GET /state?path=%2Fa%2fb HTTP/1.1\r\nHost: x\r\n\r\n")))
    }

    func testValueMayContainEquals() {
        XCTAssertEqual(HTTPRequest(target: "/?k=a=b").queryItems, [HTTPQueryItem(name: "k", value: "a=b")])
    }

    func testAParameterGivenTwiceIsFoundHoweverItIsSpelled() {
        XCTAssertFalse(HTTPRequest(target: "/state").queryRepeats("path"))
        XCTAssertFalse(HTTPRequest(target: "/state?path=/a&version=3&&mode=").queryRepeats("path"))
        XCTAssertTrue(HTTPRequest(target: "/state?path=/a&version=3&path=/b").queryRepeats("path"))
        XCTAssertFalse(HTTPRequest(target: "/state?path=/a&version=3&path=/b").queryRepeats("version"))
        // The same name however it is spelled, and with or without a value.
        XCTAssertTrue(HTTPRequest(target: "/s?m%6Fde=a&mode").queryRepeats("mode"))
        XCTAssertTrue(HTTPRequest(target: "/s?a+b=1&a%20b=2").queryRepeats("a b"))
    }

    func testPathStaysEncoded() {
        let request = HTTPRequest(target: "/files/a%2Fb%20c?x=1")
        XCTAssertEqual(request.path, "/files/a%2Fb%20c")
        XCTAssertEqual(HTTPPercentDecoding.decode(request.path, plusAsSpace: false), "/files/a/b c")
    }

    func testEscapedUnreservedCharactersAreTheCharactersForRouting() {
        XCTAssertEqual(HTTPPercentDecoding.decodingUnreserved("/%73tate"), "/state")
        XCTAssertEqual(HTTPPercentDecoding.decodingUnreserved("/st%61%54e%2d%5F%7e%2E%30"), "/staTe-_~.0")
        // Reserved and other characters stay escaped: `%2F` is not a `/`, nor `%20` a space.
        XCTAssertEqual(HTTPPercentDecoding.decodingUnreserved("/a%2Fb%73%20"), "/a%2Fbs%20")
        XCTAssertNil(HTTPPercentDecoding.decodingUnreserved("/a%2Fb%20c"))
        XCTAssertNil(HTTPPercentDecoding.decodingUnreserved("/plain"))
        XCTAssertNil(HTTPPercentDecoding.decodingUnreserved("/cut%7"))
    }

    func testNoQuery() {
        let request = HTTPRequest(target: "/plain")
        XCTAssertEqual(request.path, "/plain")
        XCTAssertNil(request.query)
        XCTAssertEqual(request.queryItems, [])
        XCTAssertEqual(HTTPRequest(target: "/plain?").query, "")
    }

    func testAbsoluteAsteriskAndAuthorityForms() {
        XCTAssertEqual(HTTPRequest(target: "http://example.com/a/b?c=d").path, "/a/b")
        XCTAssertEqual(HTTPRequest(target: "http://example.com/a/b?c=d").queryValue("c"), "d")
        XCTAssertEqual(HTTPRequest(target: "HTTPS://example.com").path, "/")
        XCTAssertEqual(HTTPRequest(target: "http://example.com?x").path, "/")
        XCTAssertEqual(HTTPRequest(target: "*").path, "*")
        XCTAssertEqual(HTTPRequest(target: "example.com:443").path, "example.com:443")
        XCTAssertEqual(HTTPRequest(target: "/redirect?to=http://x/").path, "/redirect")
    }

    func testNonASCIITargetBytesSurvive() throws {
        let request = try XCTUnwrap(onlyRequest(parseAllWays(Array("GET /caf".utf8) + [0xC3, 0xA9] + Array(" HTTP/1.1\r\n\r\n".utf8))))
        XCTAssertEqual(request.path, "/café")
    }

    /// A parsed request keeps its target among the head's bytes: replacing or editing the headers,
    /// or setting the target, must not lose or garble it.
    func testParsedTargetOutlivesChangesToTheHeaders() throws {
        let parsed = try XCTUnwrap(onlyRequest(parseAllWays("GET /a/b?mode=prune HTTP/1.1\r\nHost: h\r\n\r\n")))
        XCTAssertEqual(parsed.target, "/a/b?mode=prune")
        XCTAssertEqual(parsed.queryValue("mode"), "prune")
        XCTAssertEqual(parsed.withOriginFormPath { Array($0) }, Array("/a/b".utf8))
        XCTAssertEqual(parsed, HTTPRequest(target: "/a/b?mode=prune", headers: HTTPHeaders([("Host", "h")])))

        var replaced = parsed
        replaced.headers = HTTPHeaders([("X-Other", "a value longer than the target")])
        XCTAssertEqual(replaced.target, "/a/b?mode=prune")
        XCTAssertEqual(replaced.queryValue("mode"), "prune")

        var edited = parsed
        edited.headers.append(name: "X-Added", value: "1")
        XCTAssertEqual(edited.target, "/a/b?mode=prune")
        XCTAssertEqual(edited.headers.count, 2)

        var retargeted = parsed
        retargeted.target = "/c"
        XCTAssertEqual(retargeted.target, "/c")
        XCTAssertNil(retargeted.queryValue("mode"))
        XCTAssertEqual(retargeted.headers["Host"], "h")
        XCTAssertEqual(parsed.target, "/a/b?mode=prune")
    }
}
