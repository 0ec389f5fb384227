import XCTest

@testable import ReactorServer

/// The opening handshake (RFC 6455 §4.2): what is accepted, what the 101 looks like, and the
/// status and reason of every refusal.
final class WebSocketHandshakeTests: XCTestCase {
    private let exampleKey = "dGhlIHNhbXBsZSBub25jZQ=="
    private let exampleAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    /// The RFC's example request (§1.2), minus the headers that do not matter here.
    private var validHeaders: [String: String] {
        [
            "host": "server.example.com", "upgrade": "websocket", "connection": "Upgrade",
            "sec-websocket-key": exampleKey, "sec-websocket-version": "13", "origin": "http://example.com",
        ]
    }

    private func validate(
        method: String = "GET", httpVersion: String = "HTTP/1.1", headers: [String: String],
        policy: WebSocketHandshakePolicy = WebSocketHandshakePolicy()
    ) -> Result<WebSocketHandshakeAcceptance, WebSocketHandshakeFailure> {
        WebSocketHandshake.validate(method: method, httpVersion: httpVersion, header: { headers[$0.lowercased()] }, policy: policy)
    }

    private func changing(_ name: String, to value: String?) -> [String: String] {
        var headers = validHeaders
        headers[name] = value
        return headers
    }

    private func assertBadRequest(
        _ result: Result<WebSocketHandshakeAcceptance, WebSocketHandshakeFailure>, mentioning word: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        guard case .failure(let failure) = result else { return XCTFail("accepted", file: file, line: line) }
        XCTAssertEqual(failure.status, 400, file: file, line: line)
        XCTAssertTrue(failure.reason.contains(word), "reason \"\(failure.reason)\" should mention \(word)", file: file, line: line)
        XCTAssertTrue(failure.responseHeaders.isEmpty, file: file, line: line)
    }

    // MARK: Accepted

    func testTheRFCExampleIsAcceptedWithItsAcceptKey() throws {
        let acceptance = try validate(headers: validHeaders).get()
        XCTAssertEqual(acceptance.acceptKey, exampleAccept)
        XCTAssertNil(acceptance.subprotocol)
        XCTAssertEqual(String(decoding: acceptance.responseHead, as: UTF8.self),
                       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
    }

    func testTokensAreCaseInsensitiveAndMayBeInLists() throws {
        var headers = validHeaders
        headers["upgrade"] = "WebSocket"
        headers["connection"] = "keep-alive, UPGRADE"
        XCTAssertEqual(try validate(headers: headers).get().acceptKey, exampleAccept)
        headers["upgrade"] = "h2c, websocket"
        headers["connection"] = "Upgrade,keep-alive"
        XCTAssertEqual(try validate(headers: headers).get().acceptKey, exampleAccept)
        headers["sec-websocket-version"] = " 13 "
        XCTAssertEqual(try validate(headers: headers).get().acceptKey, exampleAccept)
    }

    func testAcceptKeysOfOtherKeys() {
        // Computed independently (Python: base64(sha1(key + GUID))).
        XCTAssertEqual(WebSocketHandshake.acceptKey(for: "x3JJHMbDL1EzLkh9GBhXDw=="), "HSmrc0sMlYUkAGmm5OPpG2HaGWk=")
        XCTAssertEqual(WebSocketHandshake.acceptKey(for: "AAAAAAAAAAAAAAAAAAAAAA=="), "ICX+Yqv66kxgM0FcWaLWlFLwTAI=")
    }

    func testBase64OfEveryPaddingLength() {
        XCTAssertEqual(WebSocketHandshake.base64([]), "")
        XCTAssertEqual(WebSocketHandshake.base64(Array("f".utf8)), "Zg==")
        XCTAssertEqual(WebSocketHandshake.base64(Array("fo".utf8)), "Zm8=")
        XCTAssertEqual(WebSocketHandshake.base64(Array("foo".utf8)), "Zm9v")
        XCTAssertEqual(WebSocketHandshake.base64([0xFB, 0xFF, 0xBF]), "+/+/")
    }

    // MARK: Refused

    func testWrongMethod() {
        assertBadRequest(validate(method: "POST", headers: validHeaders), mentioning: "GET")
        assertBadRequest(validate(method: "get", headers: validHeaders), mentioning: "GET")
    }

    func testWrongHTTPVersion() {
        assertBadRequest(validate(httpVersion: "HTTP/1.0", headers: validHeaders), mentioning: "HTTP/1.1")
    }

    func testMissingHost() {
        assertBadRequest(validate(headers: changing("host", to: nil)), mentioning: "Host")
    }

    func testUpgradeHeader() {
        assertBadRequest(validate(headers: changing("upgrade", to: nil)), mentioning: "Upgrade")
        assertBadRequest(validate(headers: changing("upgrade", to: "h2c")), mentioning: "Upgrade")
        assertBadRequest(validate(headers: changing("upgrade", to: "websocket2")), mentioning: "Upgrade")
    }

    func testConnectionHeader() {
        assertBadRequest(validate(headers: changing("connection", to: nil)), mentioning: "Connection")
        assertBadRequest(validate(headers: changing("connection", to: "keep-alive")), mentioning: "Connection")
        assertBadRequest(validate(headers: changing("connection", to: "upgraded")), mentioning: "Connection")
    }

    func testUnsupportedVersionAsks426WithTheSupportedVersion() {
        for version in ["8", "12", "14", "13, 8", "abc"] {
            guard case .failure(let failure) = validate(headers: changing("sec-websocket-version", to: version)) else {
                XCTFail("version \(version) accepted")
                continue
            }
            XCTAssertEqual(failure, .unsupportedVersion(version))
            XCTAssertEqual(failure.status, 426)
            XCTAssertTrue(failure.responseHeaders.contains { $0.name == "Sec-WebSocket-Version" && $0.value == "13" })
            XCTAssertTrue(failure.responseHeaders.contains { $0.name == "Upgrade" && $0.value == "websocket" })
        }
    }

    func testMissingVersionIsABadRequest() {
        assertBadRequest(validate(headers: changing("sec-websocket-version", to: nil)), mentioning: "Sec-WebSocket-Version")
    }

    func testKeyMustBeSixteenBytesOfBase64() {
        assertBadRequest(validate(headers: changing("sec-websocket-key", to: nil)), mentioning: "Sec-WebSocket-Key")
        for key in [
            "", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZ===",
            "dGhlIHNhbXBsZSBub25jZQAA", // 18 bytes
            "dGhlIHNhbXBsZSBub25j", // 15 bytes
            "dGhlIHNhbXBsZSBub2!jZQ==", "dGhlIHNhbXBsZSBub25jZQ==, dGhlIHNhbXBsZSBub25jZQ==",
        ] {
            assertBadRequest(validate(headers: changing("sec-websocket-key", to: key)), mentioning: "Sec-WebSocket-Key")
        }
    }

    // MARK: Subprotocols

    func testSubprotocolIsTheClientsFirstSupportedPreference() throws {
        let policy = WebSocketHandshakePolicy(subprotocols: ["superchat", "chat"])
        let acceptance = try validate(headers: changing("sec-websocket-protocol", to: "chat, superchat"), policy: policy).get()
        XCTAssertEqual(acceptance.subprotocol, "chat")
        XCTAssertEqual(String(decoding: acceptance.responseHead, as: UTF8.self),
                       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       + "Sec-WebSocket-Accept: \(exampleAccept)\r\nSec-WebSocket-Protocol: chat\r\n\r\n")
    }

    func testSubprotocolNegotiation() {
        XCTAssertEqual(WebSocketHandshake.negotiateSubprotocol(offered: " , v2.reactor ,v1.reactor", supported: ["v1.reactor", "v2.reactor"]), "v2.reactor")
        XCTAssertNil(WebSocketHandshake.negotiateSubprotocol(offered: "mqtt", supported: ["v1.reactor"]))
        XCTAssertNil(WebSocketHandshake.negotiateSubprotocol(offered: nil, supported: ["v1.reactor"]))
        XCTAssertNil(WebSocketHandshake.negotiateSubprotocol(offered: "V1.REACTOR", supported: ["v1.reactor"]), "names are exact")
    }

    func testUnsupportedSubprotocolsStillConnectWithoutOne() throws {
        let policy = WebSocketHandshakePolicy(subprotocols: ["v1.reactor"])
        let acceptance = try validate(headers: changing("sec-websocket-protocol", to: "mqtt"), policy: policy).get()
        XCTAssertNil(acceptance.subprotocol)
        XCTAssertFalse(String(decoding: acceptance.responseHead, as: UTF8.self).contains("Sec-WebSocket-Protocol"))
    }

    // MARK: Origin

    func testOriginAllowList() throws {
        let policy = WebSocketHandshakePolicy(allowedOrigins: ["https://app.example.com"])
        XCTAssertNoThrow(try validate(headers: changing("origin", to: "https://app.example.com"), policy: policy).get())
        XCTAssertNoThrow(try validate(headers: changing("origin", to: "HTTPS://App.Example.com"), policy: policy).get())
        guard case .failure(let failure) = validate(headers: changing("origin", to: "https://evil.example"), policy: policy) else {
            return XCTFail("foreign origin accepted")
        }
        XCTAssertEqual(failure.status, 403)
        XCTAssertTrue(failure.reason.contains("https://evil.example"))
        // Without an allow-list, any origin goes.
        XCTAssertNoThrow(try validate(headers: changing("origin", to: "https://evil.example")).get())
    }

    func testMissingOriginFollowsThePolicy() {
        let lenient = WebSocketHandshakePolicy(allowedOrigins: ["https://app.example.com"])
        XCTAssertNoThrow(try validate(headers: changing("origin", to: nil), policy: lenient).get())
        let strict = WebSocketHandshakePolicy(allowedOrigins: ["https://app.example.com"], allowsMissingOrigin: false)
        XCTAssertEqual(validate(headers: changing("origin", to: nil), policy: strict), .failure(.forbiddenOrigin(nil)))
        XCTAssertEqual(WebSocketHandshakeFailure.forbiddenOrigin(nil).status, 403)
    }
}
