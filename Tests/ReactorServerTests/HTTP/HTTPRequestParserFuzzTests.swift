import XCTest

@testable import ReactorServer
import TestSupport

/// Random damage to valid requests must never crash the parser, never depend on how the input
/// is split, and always end in requests or an error.
final class HTTPRequestParserFuzzTests: XCTestCase, HTTPParserTesting {
    private static let seeds: [[UInt8]] = [
        "GET /index.html?a=1&b=%20 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n",
        "POST /submit HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /next HTTP/1.1\r\n\r\n",
        "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n",
        "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
        "GET /chat HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\u{81}\u{05}hello",
        "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nHEAD / HTTP/1.1\r\nConnection: close\r\n\r\n",
    ].map { Array($0.utf8) }

    private static let interesting: [UInt8] = Array("\r\n :;,=0123456789aAzZ-\t%?/\u{0}\u{7F}".utf8) + [0x80, 0xFF]

    private func mutate(_ input: [UInt8], using rng: inout SeededRandom) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let index = Int.random(in: 0...bytes.count, using: &rng)
            let byte = Bool.random(using: &rng)
                ? Self.interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0 where index < bytes.count: bytes[index] = byte
            case 1 where index < bytes.count: bytes.remove(at: index)
            case 2: bytes.insert(byte, at: index)
            case 3 where index < bytes.count:
                let end = min(bytes.count, index + Int.random(in: 1...16, using: &rng))
                bytes.insert(contentsOf: bytes[index..<end], at: index)
            default: bytes.insert(contentsOf: bytes[0..<index].suffix(4), at: index)
            }
        }
        return bytes
    }

    func testRandomMutationsEndInRequestsOrAnError() {
        var rng = SeededRandom(seed: 0xC0FFEE)
        var outcomes = (requests: 0, errors: 0)
        for iteration in 0..<2_000 {
            let input = mutate(Self.seeds[iteration % Self.seeds.count], using: &rng)
            // Every fourth case uses tight limits so the limit paths get damaged input too.
            let limits = iteration % 4 == 0
                ? HTTPLimits(maxHeaderBytes: 48, maxBodyBytes: 4, maxHeaderCount: 2) : HTTPLimits()
            let whole = parse(input, pieces: [input.count], limits: limits, atEOF: true)
            let split = parse(input, pieces: randomPieces(of: input.count, using: &rng), limits: limits, atEOF: true)
            let context = "iteration \(iteration): \(String(decoding: input, as: UTF8.self).debugDescription)"
            XCTAssertEqual(split, whole, context)

            guard let last = whole.last else {
                XCTFail("no outcome at all, \(context)")
                continue
            }
            if let firstError = whole.firstIndex(where: { if case .error = $0 { true } else { false } }) {
                XCTAssertEqual(firstError, whole.count - 1, "events after an error, \(context)")
            }
            switch last {
            case .error: outcomes.errors += 1
            case .request, .upgrade: outcomes.requests += 1
            case .expectsContinue, .bodyFollows: XCTFail("ended waiting for a body despite EOF, \(context)")
            }
        }
        // The mutations must exercise both outcomes, or this test proves little.
        XCTAssertGreaterThan(outcomes.requests, 200)
        XCTAssertGreaterThan(outcomes.errors, 200)
    }
}
