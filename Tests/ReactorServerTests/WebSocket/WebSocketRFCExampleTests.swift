import XCTest

@testable import ReactorServer

/// The examples of RFC 6455 §5.7 and §1.3, byte for byte.
final class WebSocketRFCExampleTests: XCTestCase, WebSocketTesting {
    private let hello: [UInt8] = [0x48, 0x65, 0x6C, 0x6C, 0x6F]

    func testSingleFrameUnmaskedTextIsWhatTheEncoderWrites() {
        XCTAssertEqual(WebSocketFrameEncoder.frame(text: "Hello"), [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        XCTAssertEqual(WebSocketFrameEncoder.frame(opcode: .text, payload: hello), [0x81, 0x05] + hello)
    }

    func testSingleFrameUnmaskedTextFromAClientFailsTheConnection() {
        // The same bytes a server may send are a protocol error from a client (§5.1).
        assertProtocolError([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], .protocolError)
    }

    func testSingleFrameMaskedText() {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        XCTAssertEqual(decodeAllWays(bytes), [.message(opcode: .text, payload: hello)])
        XCTAssertEqual(clientFrame(.text, hello), bytes, "the test client masks like the RFC")
    }

    func testFragmentedUnmaskedTextIsWhatTheEncoderWrites() {
        var buffer: [UInt8] = []
        WebSocketFrameEncoder.append(opcode: .text, fin: false, payload: Array("Hel".utf8), into: &buffer)
        WebSocketFrameEncoder.append(opcode: .continuation, payload: Array("lo".utf8), into: &buffer)
        XCTAssertEqual(buffer, [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F])
    }

    func testFragmentedTextMaskedByTheClientIsReassembled() {
        let first = masking([0x01, 0x03, 0x48, 0x65, 0x6C], key: [1, 2, 3, 4])
        let second = masking([0x80, 0x02, 0x6C, 0x6F], key: [9, 8, 7, 6])
        XCTAssertEqual(decodeAllWays(first + second), [.message(opcode: .text, payload: hello)])
    }

    func testUnmaskedPingIsWhatTheEncoderWrites() {
        XCTAssertEqual(WebSocketFrameEncoder.frame(opcode: .ping, payload: hello), [0x89, 0x05] + hello)
    }

    func testMaskedPong() {
        let bytes: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        XCTAssertEqual(decodeAllWays(bytes), [.pong(hello)])
    }

    func testBinary256BytesUsesTheSixteenBitLength() {
        let payload = (0..<256).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let frame = WebSocketFrameEncoder.frame(opcode: .binary, payload: payload)
        XCTAssertEqual(Array(frame.prefix(4)), [0x82, 0x7E, 0x01, 0x00])
        XCTAssertEqual(Array(frame.dropFirst(4)), payload)
        XCTAssertEqual(decodeAllWays(masking(frame, key: [0xDE, 0xAD, 0xBE, 0xEF])), [.message(opcode: .binary, payload: payload)])
    }

    func testBinary64KiBUsesTheSixtyFourBitLength() {
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let frame = WebSocketFrameEncoder.frame(opcode: .binary, payload: payload)
        XCTAssertEqual(Array(frame.prefix(10)), [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
        XCTAssertEqual(frame.count, 10 + 65536)
        XCTAssertEqual(decodeAllWays(masking(frame, key: [0x01, 0x80, 0xFE, 0x7F])), [.message(opcode: .binary, payload: payload)])
    }

    func testHandshakeExampleAcceptKey() {
        // §1.3: the key of the example request and the accept value of its response.
        XCTAssertEqual(WebSocketHandshake.acceptKey(for: "dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
