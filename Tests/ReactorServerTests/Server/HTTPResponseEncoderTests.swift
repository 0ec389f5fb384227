@testable import ReactorServer
import XCTest

final class HTTPResponseEncoderTests: XCTestCase {
    private let date = Array("Date: Sun, 22 Nov 2026 00:00:00 GMT\r\n".utf8)

    private func encode(_ response: HTTPResponse, isHead: Bool = false, closing: Bool = false, keepAliveHeader: Bool = false) -> String {
        let encoder = HTTPResponseEncoder()
        encoder.encode(response, isHead: isHead, closing: closing, keepAliveHeader: keepAliveHeader, date: date)
        return String(decoding: encoder.buffer, as: UTF8.self)
    }

    func testAJSONResponse() {
        var response = HTTPResponse.json(Array(#"{"version":12}"#.utf8))
        response.addHeader("ETag", "\"12\"")
        XCTAssertEqual(encode(response), "HTTP/1.1 200 OK\r\nDate: Sun, 22 Nov 2026 00:00:00 GMT\r\nContent-Type: application/json\r\nContent-Length: 14\r\nETag: \"12\"\r\n\r\n{\"version\":12}")
    }

    func testContentLengthDigits() {
        for length in [0, 7, 10, 99, 100, 12_345, 1_048_576] {
            let text = encode(HTTPResponse(status: .ok, body: Array(repeating: 120, count: length)))
            XCTAssertTrue(text.contains("Content-Length: \(length)\r\n"), "\(length)")
        }
    }

    func testHeadKeepsTheLengthButNotTheBody() {
        XCTAssertEqual(encode(.json(Array("{}".utf8)), isHead: true),
                       "HTTP/1.1 200 OK\r\nDate: Sun, 22 Nov 2026 00:00:00 GMT\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n")
    }

    func testNotModifiedAndNoContentCarryNoLength() {
        XCTAssertFalse(encode(HTTPResponse(status: .notModified)).contains("Content-Length"))
        XCTAssertFalse(encode(HTTPResponse(status: .noContent)).contains("Content-Length"))
    }

    func testConnectionHeaders() {
        XCTAssertTrue(encode(.json([]), closing: true).contains("Connection: close\r\n"))
        XCTAssertTrue(encode(.json([]), keepAliveHeader: true).contains("Connection: keep-alive\r\n"))
        XCTAssertFalse(encode(.json([])).contains("Connection:"))
    }

    func testTheDateLineIsFormattedPerRFC9110() {
        var date = HTTPDate()
        XCTAssertEqual(String(decoding: date.line(at: 784_111_777), as: UTF8.self), "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n")
    }
}
