import XCTest

@testable import ReactorServer

/// Framing rules of RFC 6455 §5 as the server sees client frames: what is accepted, and which
/// close code every violation gets. Every input is also decoded byte by byte and in random splits.
final class WebSocketFrameDecoderTests: XCTestCase, WebSocketTesting {
    // MARK: Accepted

    func testTextAndBinaryMessages() {
        let input = clientFrame(.text, "hi") + clientFrame(.binary, [0, 1, 0xFF]) + clientFrame(.text, "")
        XCTAssertEqual(decodeAllWays(input), [
            .message(opcode: .text, payload: Array("hi".utf8)),
            .message(opcode: .binary, payload: [0, 1, 0xFF]),
            .message(opcode: .text, payload: []),
        ])
    }

    func testPayloadLengthBoundaries() {
        for count in [0, 1, 7, 8, 9, 125, 126, 127, 65535, 65536, 70000] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
            let frame = clientFrame(.binary, payload)
            XCTAssertEqual(decode(frame, pieces: [frame.count]), [.message(opcode: .binary, payload: payload)], "length \(count)")
            XCTAssertEqual(decode(frame, pieces: [3, frame.count - 3]), [.message(opcode: .binary, payload: payload)],
                           "length \(count), split")
        }
        // The split comparison over every length is slow in debug builds; do it for the edges.
        for count in [125, 126, 127] {
            let payload = [UInt8](repeating: 0x41, count: count)
            XCTAssertEqual(decodeAllWays(clientFrame(.text, payload)), [.message(opcode: .text, payload: payload)])
        }
    }

    func testNonMinimalLengthEncodingsAreAccepted() {
        // §5.2 asks senders for the minimal encoding but does not make others an error.
        let input = clientFrame(.text, Array("short".utf8), length: .sixteenBit)
            + clientFrame(.binary, [1, 2, 3], length: .sixtyFourBit)
            + clientFrame(.ping, [9], length: .sixteenBit)
        XCTAssertEqual(decodeAllWays(input), [
            .message(opcode: .text, payload: Array("short".utf8)),
            .message(opcode: .binary, payload: [1, 2, 3]),
            .ping([9]),
        ])
    }

    func testFragmentedMessageWithEmptyFragments() {
        let input = clientFrame(.text, [], fin: false) + clientFrame(.continuation, Array("a".utf8), fin: false)
            + clientFrame(.continuation, [], fin: false) + clientFrame(.continuation, Array("b".utf8))
            + clientFrame(.binary, [], fin: false) + clientFrame(.continuation, [])
        XCTAssertEqual(decodeAllWays(input), [
            .message(opcode: .text, payload: Array("ab".utf8)),
            .message(opcode: .binary, payload: []),
        ])
    }

    func testFragmentsWithDifferentMaskingKeysAndOddSizes() {
        var input: [UInt8] = []
        var expected: [UInt8] = []
        for (index, size) in [1, 3, 5, 8, 13, 0, 2].enumerated() {
            let piece = (0..<size).map { UInt8(truncatingIfNeeded: index * 40 + $0) }
            expected += piece
            let opcode: WebSocketOpcode = index == 0 ? .binary : .continuation
            input += clientFrame(opcode, piece, fin: index == 6, key: [UInt8(index), 0x55, 0xAA, UInt8(index * 3)])
        }
        XCTAssertEqual(decodeAllWays(input), [.message(opcode: .binary, payload: expected)])
    }

    func testControlFramesInterleavedWithFragments() {
        let input = clientFrame(.text, "Hel", fin: false) + clientFrame(.ping, "p1")
            + clientFrame(.continuation, "l", fin: false) + clientFrame(.pong, [])
            + clientFrame(.ping, [UInt8](repeating: 7, count: 125))
            + clientFrame(.continuation, "o") + clientFrame(.ping, "after")
        XCTAssertEqual(decodeAllWays(input), [
            .ping(Array("p1".utf8)), .pong([]), .ping([UInt8](repeating: 7, count: 125)),
            .message(opcode: .text, payload: Array("Hello".utf8)), .ping(Array("after".utf8)),
        ])
    }

    func testCloseInTheMiddleOfAFragmentedMessageEndsDecoding() {
        let input = clientFrame(.text, "par", fin: false) + clientFrame(.close, closePayload(1000))
            + clientFrame(.continuation, "tial")
        XCTAssertEqual(decodeAllWays(input), [.close(code: .normalClosure, reason: "")])
    }

    // MARK: Closing

    func testCloseWithoutBody() {
        XCTAssertEqual(decodeAllWays(clientFrame(.close, [])), [.close(code: nil, reason: "")])
    }

    func testCloseWithCodeAndReason() {
        let input = clientFrame(.close, closePayload(1001, Array("bye ✓".utf8)))
        XCTAssertEqual(decodeAllWays(input), [.close(code: .goingAway, reason: "bye ✓")])
    }

    func testNothingIsDecodedAfterClose() {
        var decoder = WebSocketFrameDecoder()
        let input = clientFrame(.close, closePayload(1000)) + clientFrame(.text, "ignored") + [0xFF, 0xFF]
        XCTAssertEqual(decoder.feed(input), [.close(code: .normalClosure, reason: "")])
        XCTAssertEqual(decoder.phase, .closeReceived)
        XCTAssertEqual(decoder.feed(clientFrame(.ping, [])), [])
    }

    func testEveryValidCloseCodeIsAccepted() {
        // The codes of Autobahn 7.7.x, plus the ends of the ranges.
        for code: UInt16 in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4008, 4999] {
            XCTAssertEqual(decodeAllWays(clientFrame(.close, closePayload(code, Array("r".utf8)))),
                           [.close(code: WebSocketCloseCode(code), reason: "r")], "code \(code)")
        }
    }

    func testInvalidCloseCodesAreProtocolErrors() {
        // Autobahn 7.9.x, plus the other reserved and unassigned codes around them.
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1012, 1013, 1014, 1015, 1016, 1100, 2000, 2999, 5000, 65535] {
            assertProtocolError(clientFrame(.close, closePayload(code)), .protocolError)
        }
    }

    func testOneByteCloseBodyIsAProtocolError() {
        assertProtocolError(clientFrame(.close, [0x03]), .protocolError)
    }

    func testCloseReasonMustBeUTF8() {
        assertProtocolError(clientFrame(.close, closePayload(1000, [0x61, 0xCE, 0xBA, 0xED, 0xA0, 0x80])), .invalidPayload)
        assertProtocolError(clientFrame(.close, closePayload(1000, [0xE2, 0x82])), .invalidPayload)
    }

    // MARK: Protocol errors

    func testUnmaskedFrameFailsAtTheSecondByte() {
        let input = clientFrame(.text, "hello", masked: false)
        assertProtocolError(input, .protocolError)
        XCTAssertEqual(bytesFedUntilError(input), 2)
    }

    func testReservedBitsFailAtTheFirstByte() {
        for rsv: UInt8 in 1...7 {
            let input = clientFrame(.text, "ok") + clientFrame(.text, "x", rsv: rsv) + clientFrame(.ping, [])
            // Autobahn 3.2: the message before the bad frame is still delivered.
            assertProtocolError(input, .protocolError, after: [.message(opcode: .text, payload: Array("ok".utf8))])
            XCTAssertEqual(bytesFedUntilError(clientFrame(.ping, [], rsv: rsv)), 1, "rsv \(rsv)")
        }
    }

    func testReservedOpcodesFailAtTheFirstByte() {
        for opcode: UInt8 in [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            let input = clientFrame(opcode, [1, 2, 3])
            assertProtocolError(input, .protocolError)
            XCTAssertEqual(bytesFedUntilError(input), 1, "opcode \(opcode)")
            XCTAssertNil(WebSocketOpcode(rawValue: opcode))
        }
    }

    func testFragmentedControlFramesAreProtocolErrors() {
        for opcode in [WebSocketOpcode.ping, .pong, .close] {
            let input = clientFrame(opcode, [], fin: false) + clientFrame(.continuation, [])
            assertProtocolError(input, .protocolError)
            XCTAssertEqual(bytesFedUntilError(input), 1, "\(opcode)")
        }
    }

    func testControlFramePayloadOver125BytesIsAProtocolError() {
        for opcode in [WebSocketOpcode.ping, .pong, .close] {
            let input = clientFrame(opcode, [UInt8](repeating: 0x30, count: 126))
            assertProtocolError(input, .protocolError)
            XCTAssertEqual(bytesFedUntilError(input), 4, "fails once the 16-bit length is read (\(opcode))")
        }
        // Even when the length is small but written in a longer form: the value counts.
        XCTAssertEqual(decodeAllWays(clientFrame(.ping, [1], length: .sixtyFourBit)), [.ping([1])])
    }

    func testContinuationWithoutAMessage() {
        assertProtocolError(clientFrame(.continuation, "x"), .protocolError)
        assertProtocolError(clientFrame(.continuation, "x", fin: false), .protocolError)
        // After a complete message there is nothing to continue either.
        assertProtocolError(clientFrame(.text, "done") + clientFrame(.continuation, "x"), .protocolError,
                            after: [.message(opcode: .text, payload: Array("done".utf8))])
    }

    func testNewDataFrameInsideAFragmentedMessage() {
        assertProtocolError(clientFrame(.text, "a", fin: false) + clientFrame(.text, "b"), .protocolError)
        assertProtocolError(clientFrame(.binary, [1], fin: false) + clientFrame(.ping, []) + clientFrame(.binary, [2]),
                            .protocolError, after: [.ping([])])
    }

    func testSixtyFourBitLengthWithTheHighBitSet() {
        let input: [UInt8] = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4]
        assertProtocolError(input, .protocolError)
        XCTAssertEqual(bytesFedUntilError(input), 3)
    }

    func testTheDecoderIsDeadAfterAnError() {
        var decoder = WebSocketFrameDecoder()
        let events = decoder.feed(clientFrame(.text, "x", masked: false) + clientFrame(.text, "y"))
        XCTAssertEqual(events.count, 1)
        XCTAssertEqual(decoder.phase, .failed(.protocolError))
        XCTAssertEqual(decoder.feed(clientFrame(.text, "z")), [])
        XCTAssertEqual(decoder.phase, .failed(.protocolError))
    }

    // MARK: Limits

    func testFrameLongerThanTheLimitFailsFromTheHeaderAlone() {
        let limits = WebSocketLimits(maxFramePayload: 1 << 20, maxMessageSize: 1 << 30)
        // Announces 2^40 bytes; only the header and the masking key are fed.
        let header: [UInt8] = [0x82, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0]
        assertProtocolError(header + [1, 2, 3, 4], .messageTooBig, limits: limits)
        XCTAssertEqual(bytesFedUntilError(header, limits: limits), 10, "no masking key or payload needed")
    }

    func testFrameLimitIsInclusive() {
        let limits = WebSocketLimits(maxFramePayload: 100, maxMessageSize: 1000)
        let atLimit = [UInt8](repeating: 1, count: 100)
        XCTAssertEqual(decodeAllWays(clientFrame(.binary, atLimit), limits: limits), [.message(opcode: .binary, payload: atLimit)])
        let over = clientFrame(.binary, [UInt8](repeating: 1, count: 101))
        assertProtocolError(over, .messageTooBig, limits: limits)
        XCTAssertEqual(bytesFedUntilError(over, limits: limits), 2, "101 fits the 7-bit length")
    }

    func testMessageLimitCountsAllFragmentsAndFailsAtTheHeaderThatExceedsIt() {
        let limits = WebSocketLimits(maxFramePayload: 100, maxMessageSize: 150)
        let first = clientFrame(.text, [UInt8](repeating: 0x61, count: 80), fin: false)
        let second = clientFrame(.continuation, [UInt8](repeating: 0x62, count: 80))
        assertProtocolError(first + second, .messageTooBig, limits: limits)
        XCTAssertEqual(bytesFedUntilError(first + second, limits: limits), first.count + 2)
        let exact = first + clientFrame(.continuation, [UInt8](repeating: 0x62, count: 70))
        XCTAssertEqual(decodeAllWays(exact, limits: limits).count, 1)
    }

    func testControlFramesAreNotSubjectToTheDataLimits() {
        let limits = WebSocketLimits(maxFramePayload: 4, maxMessageSize: 4)
        let input = clientFrame(.binary, [1, 2], fin: false) + clientFrame(.ping, [UInt8](repeating: 9, count: 125))
            + clientFrame(.continuation, [3, 4])
        XCTAssertEqual(decodeAllWays(input, limits: limits), [
            .ping([UInt8](repeating: 9, count: 125)), .message(opcode: .binary, payload: [1, 2, 3, 4]),
        ])
    }

    func testNoBufferIsKeptAfterAMessageIsDelivered() {
        var decoder = WebSocketFrameDecoder()
        let payload = [UInt8](repeating: 0x42, count: 64 * 1024)
        var input = clientFrame(.binary, Array(payload[..<40000]), fin: false)
        XCTAssertEqual(decoder.feed(input), [])
        XCTAssertGreaterThanOrEqual(decoder.bufferedCapacity, 40000, "a partial message is buffered")
        input = clientFrame(.continuation, Array(payload[40000...])) + clientFrame(.ping, [1, 2, 3])
        XCTAssertEqual(decoder.feed(input), [.message(opcode: .binary, payload: payload), .ping([1, 2, 3])])
        XCTAssertEqual(decoder.bufferedCapacity, 0)
    }

    // MARK: Driving

    func testNextConsumesOnlyUpToTheEvent() {
        let first = clientFrame(.text, "one")
        let second = clientFrame(.binary, [2])
        var decoder = WebSocketFrameDecoder()
        (first + second).withUnsafeBytes { buffer in
            var input = buffer
            XCTAssertEqual(decoder.next(from: &input), .message(opcode: .text, payload: Array("one".utf8)))
            XCTAssertEqual(Array(input), second)
            XCTAssertEqual(decoder.next(from: &input), .message(opcode: .binary, payload: [2]))
            XCTAssertEqual(input.count, 0)
            XCTAssertNil(decoder.next(from: &input))
        }
    }

    func testAZeroLengthFrameCompletesWithoutFurtherInput() {
        var decoder = WebSocketFrameDecoder()
        // The header's last byte (the masking key's) completes the frame; no payload follows.
        XCTAssertEqual(decoder.feed(Array(clientFrame(.ping, []).dropLast())), [])
        XCTAssertEqual(decoder.feed([clientFrame(.ping, []).last!]), [.ping([])])
    }
}
