import XCTest

@testable import ReactorServer
import TestSupport

/// Server frames: unmasked, minimal lengths, and readable by a decoder once a client would have
/// masked them.
final class WebSocketFrameEncoderTests: XCTestCase, WebSocketTesting {
    func testMinimalLengthEncodings() {
        let cases: [(count: Int, header: [UInt8])] = [
            (0, [0x82, 0]), (125, [0x82, 125]), (126, [0x82, 126, 0, 126]), (65535, [0x82, 126, 0xFF, 0xFF]),
            (65536, [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]), (1 << 24 | 5, [0x82, 127, 0, 0, 0, 0, 1, 0, 0, 5]),
        ]
        for (count, header) in cases {
            let frame = WebSocketFrameEncoder.frame(opcode: .binary, payload: [UInt8](repeating: 0xAB, count: count))
            XCTAssertEqual(Array(frame.prefix(header.count)), header, "length \(count)")
            XCTAssertEqual(frame.count, header.count + count, "length \(count)")
            XCTAssertEqual(WebSocketFrameEncoder.headerLength(payloadCount: count), header.count, "length \(count)")
        }
    }

    func testOpcodesAndFinBit() {
        XCTAssertEqual(WebSocketFrameEncoder.frame(opcode: .pong, payload: [7]), [0x8A, 1, 7])
        XCTAssertEqual(WebSocketFrameEncoder.frame(opcode: .ping, payload: []), [0x89, 0])
        var buffer: [UInt8] = [0xEE]
        WebSocketFrameEncoder.append(opcode: .binary, fin: false, payload: [1], into: &buffer)
        WebSocketFrameEncoder.append(opcode: .continuation, fin: true, payload: [2], into: &buffer)
        XCTAssertEqual(buffer, [0xEE, 0x02, 1, 1, 0x80, 1, 2], "appends after what the buffer holds")
        var framed: [UInt8] = []
        WebSocketFrameEncoder.append(WebSocketFrame(fin: true, reservedBits: 0b100, opcode: .text, payload: [0x61]), into: &framed)
        XCTAssertEqual(framed, [0xC1, 1, 0x61])
    }

    func testCloseFrames() {
        XCTAssertEqual(WebSocketFrameEncoder.closeFrame(code: nil), [0x88, 0])
        XCTAssertEqual(WebSocketFrameEncoder.closeFrame(code: .normalClosure), [0x88, 2, 0x03, 0xE8])
        XCTAssertEqual(WebSocketFrameEncoder.closeFrame(code: .slowConsumer, reason: "slow"),
                       [0x88, 6, 0x0F, 0xA8] + Array("slow".utf8))
    }

    func testLongCloseReasonsAreCutAtACharacterBoundary() {
        // 61 two-byte characters are 122 bytes; one more would be 124, over the 123 allowed.
        let reason = String(repeating: "é", count: 70)
        let frame = WebSocketFrameEncoder.closeFrame(code: .policyViolation, reason: reason)
        XCTAssertEqual(frame[1], 2 + 122)
        XCTAssertEqual(frame.count, 2 + 2 + 122)
        XCTAssertEqual(decodeAllWays(masking(frame, key: [5, 6, 7, 8])),
                       [.close(code: .policyViolation, reason: String(repeating: "é", count: 61))])
        let ascii = WebSocketFrameEncoder.closeFrame(code: .goingAway, reason: String(repeating: "a", count: 200))
        XCTAssertEqual(ascii.count, 2 + 125)
    }

    func testABroadcastFrameIsEncodedOnceAndIdenticalForEveryone() {
        let payload = Array(#"{"op":"replace","path":"/x","value":1}"#.utf8)
        let frame = WebSocketFrameEncoder.frame(opcode: .text, payload: payload)
        XCTAssertEqual(frame, WebSocketFrameEncoder.frame(opcode: .text, payload: payload))
        XCTAssertEqual(frame, [0x81, UInt8(payload.count)] + payload, "no mask, no per-connection state")
    }

    // MARK: Round trips

    func testRoundTripOfEveryKindOfFrame() {
        var rng = SeededRandom(seed: 42)
        var input: [UInt8] = []
        var expected: [Event] = []
        for round in 0..<40 {
            let key = (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) }
            switch round % 5 {
            case 0:
                let text = String((0..<Int.random(in: 0...300, using: &rng)).map { _ in "aé€𝄞 z".randomElement(using: &rng)! })
                input += masking(WebSocketFrameEncoder.frame(text: text), key: key)
                expected.append(.message(opcode: .text, payload: Array(text.utf8)))
            case 1:
                let payload = (0..<Int.random(in: 0...70000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                input += masking(WebSocketFrameEncoder.frame(opcode: .binary, payload: payload), key: key)
                expected.append(.message(opcode: .binary, payload: payload))
            case 2:
                let payload = (0..<Int.random(in: 0...125, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                input += masking(WebSocketFrameEncoder.frame(opcode: .ping, payload: payload), key: key)
                expected.append(.ping(payload))
            case 3:
                let payload = (0..<Int.random(in: 0...125, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                input += masking(WebSocketFrameEncoder.frame(opcode: .pong, payload: payload), key: key)
                expected.append(.pong(payload))
            default:
                // A fragmented message, one fragment per append, each masked with its own key.
                let fragments = (0..<Int.random(in: 1...5, using: &rng)).map { _ in
                    (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                }
                for (index, fragment) in fragments.enumerated() {
                    var frame: [UInt8] = []
                    WebSocketFrameEncoder.append(opcode: index == 0 ? .binary : .continuation,
                                                 fin: index == fragments.count - 1, payload: fragment, into: &frame)
                    input += masking(frame, key: (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) })
                }
                expected.append(.message(opcode: .binary, payload: fragments.flatMap { $0 }))
            }
        }
        input += masking(WebSocketFrameEncoder.closeFrame(code: .goingAway, reason: "done"), key: [1, 2, 3, 4])
        expected.append(.close(code: .goingAway, reason: "done"))
        // Whole and in random splits (byte by byte would be slow for this much data in debug).
        XCTAssertEqual(decode(input, pieces: [input.count]), expected)
        for seed in 0..<5 as Range<UInt64> {
            var splitRNG = SeededRandom(seed: seed)
            XCTAssertEqual(decode(input, pieces: randomPieces(of: input.count, using: &splitRNG)), expected, "seed \(seed)")
        }
    }

    func testUnmaskingMatchesAByteByByteMaskAtEveryPhaseAndLength() {
        // The decoder unmasks eight bytes at a time, from wherever a read left off in the key.
        let key: UInt32 = 0x3D21_FA37
        let keyBytes: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        for phase in 0..<8 {
            for count in 0..<40 {
                var bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ phase) }
                let expected = bytes.enumerated().map { $0.element ^ keyBytes[($0.offset + phase) % 4] }
                bytes.withUnsafeMutableBytes { WebSocketMasking.apply(key: key, phase: phase, to: $0) }
                XCTAssertEqual(bytes, expected, "phase \(phase), count \(count)")
            }
        }
    }
}
