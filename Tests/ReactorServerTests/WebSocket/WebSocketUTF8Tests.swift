import XCTest

@testable import ReactorServer
import TestSupport

/// UTF-8 in text messages and close reasons (RFC 6455 §5.6, §8.1): the validator on its own,
/// then in the decoder, where an invalid byte must fail the connection as soon as it arrives.
final class WebSocketUTF8Tests: XCTestCase, WebSocketTesting {
    /// Ill-formed sequences and the index of the byte that makes each one ill-formed.
    private let invalidSequences: [(bytes: [UInt8], failsAt: Int, what: String)] = [
        ([0xC0, 0x80], 0, "overlong U+0000 (2 bytes)"),
        ([0xC1, 0xBF], 0, "overlong U+007F"),
        ([0xE0, 0x80, 0x80], 1, "overlong U+0000 (3 bytes)"),
        ([0xE0, 0x9F, 0xBF], 1, "overlong U+07FF"),
        ([0xF0, 0x80, 0x80, 0x80], 1, "overlong U+0000 (4 bytes)"),
        ([0xF0, 0x8F, 0xBF, 0xBF], 1, "overlong U+FFFF"),
        ([0xED, 0xA0, 0x80], 1, "surrogate U+D800"),
        ([0xED, 0xBF, 0xBF], 1, "surrogate U+DFFF"),
        ([0xED, 0xA0, 0x80, 0xED, 0xB0, 0x80], 1, "surrogate pair"),
        ([0xF4, 0x90, 0x80, 0x80], 1, "U+110000"),
        ([0xF5, 0x80, 0x80, 0x80], 0, "lead byte beyond U+10FFFF"),
        ([0xF8, 0x88, 0x80, 0x80, 0x80], 0, "5-byte form"),
        ([0xFE], 0, "FE"),
        ([0xFF], 0, "FF"),
        ([0x80], 0, "lone continuation"),
        ([0xBF], 0, "lone continuation"),
        ([0xE2, 0x28, 0xA1], 1, "missing continuation"),
        ([0xC3, 0x28], 1, "missing continuation"),
        ([0xF0, 0x9F, 0x98, 0x41], 3, "4-byte sequence cut short"),
    ]

    /// The edges of each encoding length and of the excluded ranges, all valid.
    private let validEdges: [[UInt8]] = [
        [0x00], [0x7F], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF],
        [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBD], [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
    ]

    // MARK: Validator

    func testValidEdgesAreComplete() {
        for bytes in validEdges {
            var validator = WebSocketUTF8Validator()
            XCTAssertEqual(validator.validate(bytes), .complete, "\(bytes)")
            XCTAssertEqual(validator.validate(Array("x".utf8) + bytes), .complete, "\(bytes) after ASCII")
        }
    }

    func testInvalidSequencesFailAtTheRightByte() {
        for sequence in invalidSequences {
            var validator = WebSocketUTF8Validator()
            for (index, byte) in sequence.bytes.enumerated() {
                let status = validator.validate([byte])
                if index < sequence.failsAt {
                    XCTAssertEqual(status, .incomplete, "\(sequence.what): byte \(index)")
                } else {
                    XCTAssertEqual(status, .invalid, "\(sequence.what): byte \(index)")
                }
            }
            XCTAssertFalse(WebSocketUTF8Validator.isValid(sequence.bytes), sequence.what)
        }
    }

    func testTruncatedSequencesAreIncompleteNotInvalid() {
        for bytes in validEdges where bytes.count > 1 {
            var validator = WebSocketUTF8Validator()
            XCTAssertEqual(validator.validate(Array(bytes.dropLast())), .incomplete, "\(bytes)")
            XCTAssertEqual(validator.validate([bytes.last!]), .complete, "\(bytes)")
            XCTAssertFalse(WebSocketUTF8Validator.isValid(Array(bytes.dropLast())))
        }
    }

    func testInvalidIsFinal() {
        var validator = WebSocketUTF8Validator()
        XCTAssertEqual(validator.validate([0xFF]), .invalid)
        XCTAssertEqual(validator.validate(Array("fine".utf8)), .invalid)
        validator.reset()
        XCTAssertEqual(validator.validate(Array("fine".utf8)), .complete)
    }

    func testTheASCIIFastPathStopsAtEveryOffset() {
        for prefix in 0..<20 {
            let ascii = [UInt8](repeating: 0x61, count: prefix)
            XCTAssertFalse(WebSocketUTF8Validator.isValid(ascii + [0xFF] + ascii), "bad byte at \(prefix)")
            XCTAssertTrue(WebSocketUTF8Validator.isValid(ascii + [0xC3, 0xA9] + ascii), "é at \(prefix)")
            var validator = WebSocketUTF8Validator()
            XCTAssertEqual(validator.validate(ascii + [0xE2, 0x82]), .incomplete, "open sequence at \(prefix)")
        }
    }

    func testAgreesWithTheStandardLibraryOnRandomBytes() {
        let interesting: [UInt8] = [
            0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
            0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
        ]
        var rng = SeededRandom(seed: 0x0DF8)
        var valid = 0
        for _ in 0..<4000 {
            let bytes = (0..<Int.random(in: 0...12, using: &rng)).map { _ in interesting.randomElement(using: &rng)! }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            XCTAssertEqual(WebSocketUTF8Validator.isValid(bytes), expected, "\(bytes)")
            // Chunked anywhere, the verdict is the same.
            let cut = Int.random(in: 0...bytes.count, using: &rng)
            var validator = WebSocketUTF8Validator()
            validator.validate(Array(bytes[..<cut]))
            XCTAssertEqual(validator.validate(Array(bytes[cut...])) == .complete, expected, "\(bytes) cut at \(cut)")
            if expected { valid += 1 }
        }
        XCTAssertGreaterThan(valid, 100, "the sample must contain valid strings too")
    }

    // MARK: In text messages

    func testMultiByteTextSplitAcrossFragmentsAtEveryByte() {
        let bytes = Array("aé€𝄞z κόσμε".utf8)
        for cut in 0...bytes.count {
            let input = clientFrame(.text, Array(bytes[..<cut]), fin: false) + clientFrame(.continuation, Array(bytes[cut...]))
            XCTAssertEqual(decodeAllWays(input), [.message(opcode: .text, payload: bytes)], "cut at \(cut)")
        }
        // Three fragments, two cuts, with a ping between.
        for first in 0...bytes.count {
            for second in first...bytes.count {
                let input = clientFrame(.text, Array(bytes[..<first]), fin: false) + clientFrame(.ping, [])
                    + clientFrame(.continuation, Array(bytes[first..<second]), fin: false)
                    + clientFrame(.continuation, Array(bytes[second...]))
                XCTAssertEqual(decode(input, pieces: [input.count]), [.ping([]), .message(opcode: .text, payload: bytes)])
            }
        }
    }

    func testInvalidSequencesInTextAreRejectedWith1007() {
        for sequence in invalidSequences {
            let input = clientFrame(.text, Array("ab".utf8) + sequence.bytes + Array("cd".utf8))
            assertProtocolError(input, .invalidPayload)
            XCTAssertEqual(bytesFedUntilError(input), 6 + 2 + sequence.failsAt + 1, "fails at the bad byte: \(sequence.what)")
        }
    }

    func testInvalidFragmentFailsBeforeTheMessageEnds() {
        // Autobahn 6.4.1/6.4.2: a valid fragment, then one with the bad bytes, no FIN yet.
        let valid = clientFrame(.text, Array("κόσμε".utf8), fin: false)
        let bad = clientFrame(.continuation, [0xF4, 0x90, 0x80, 0x80], fin: false)
        assertProtocolError(valid + bad, .invalidPayload)
        XCTAssertEqual(bytesFedUntilError(valid + bad + clientFrame(.continuation, Array("edited".utf8))), valid.count + 6 + 2)
    }

    func testInvalidBytesFailInTheMiddleOfAFrame() {
        // Autobahn 6.4.3/6.4.4: one frame, sent in chops; the chop with the bad byte must fail.
        let payload = Array("κόσμε".utf8) + [0xF4, 0x90, 0x80, 0x80] + Array("edited".utf8)
        let frame = clientFrame(.text, payload)
        let throughBadByte = 6 + Array("κόσμε".utf8).count + 2
        assertProtocolError(Array(frame[..<throughBadByte]), .invalidPayload)
        XCTAssertEqual(bytesFedUntilError(frame), throughBadByte)
    }

    func testTextEndingInsideASequenceFailsAtTheEnd() {
        let frame = clientFrame(.text, Array("ok".utf8) + [0xE2, 0x82])
        assertProtocolError(frame, .invalidPayload)
        XCTAssertEqual(bytesFedUntilError(frame), frame.count)
        // The same bytes in an unfinished message are fine until the FIN frame.
        let open = clientFrame(.text, Array("ok".utf8) + [0xE2, 0x82], fin: false)
        XCTAssertEqual(decodeAllWays(open), [])
        assertProtocolError(open + clientFrame(.continuation, []), .invalidPayload)
        XCTAssertEqual(decodeAllWays(open + clientFrame(.continuation, [0xAC])),
                       [.message(opcode: .text, payload: Array("ok€".utf8))])
    }

    func testBinaryMessagesAreNotValidated() {
        XCTAssertEqual(decodeAllWays(clientFrame(.binary, [0xFF, 0xED, 0xA0, 0x80])),
                       [.message(opcode: .binary, payload: [0xFF, 0xED, 0xA0, 0x80])])
    }

    func testValidationRestartsWithEachMessage() {
        // A binary message's bytes never leak into the next text message's validation.
        let input = clientFrame(.binary, [0xE2], fin: false) + clientFrame(.continuation, [0x82])
            + clientFrame(.text, "fine")
        XCTAssertEqual(decodeAllWays(input), [
            .message(opcode: .binary, payload: [0xE2, 0x82]), .message(opcode: .text, payload: Array("fine".utf8)),
        ])
    }
}
