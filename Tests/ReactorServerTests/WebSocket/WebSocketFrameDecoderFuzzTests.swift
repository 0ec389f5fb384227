import XCTest

@testable import ReactorServer
import TestSupport

/// Random and damaged client streams must never crash the decoder, never depend on how the
/// input is split, and always end in messages or one terminal event.
final class WebSocketFrameDecoderFuzzTests: XCTestCase, WebSocketTesting {
    // Small limits so random lengths hit them, and so no stream can make the test slow.
    private let limits = WebSocketLimits(maxFramePayload: 300, maxMessageSize: 600)
    private let textPieces = ["a", "é", "€", "𝄞", "κόσμε", " ", "z"]

    private struct Outcome {
        var messages = 0
        var controls = 0
        var errors: [WebSocketCloseCode: Int] = [:]
        var closes = 0
    }

    /// A valid stream of a few messages, possibly fragmented, with control frames between
    /// fragments and maybe a close at the end; and the events it must decode to.
    private func validStream(using rng: inout SeededRandom) -> (bytes: [UInt8], events: [Event]) {
        var bytes: [UInt8] = []
        var events: [Event] = []
        func randomKey() -> [UInt8] { (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let isText = Bool.random(using: &rng)
            let payload: [UInt8] = isText
                ? Array((0..<Int.random(in: 0...20, using: &rng)).map { _ in textPieces.randomElement(using: &rng)! }.joined().utf8)
                : (0..<Int.random(in: 0...120, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Cut anywhere, including inside UTF-8 sequences.
            var cuts = (0..<Int.random(in: 0...3, using: &rng)).map { _ in Int.random(in: 0...payload.count, using: &rng) }
            cuts = [0] + cuts.sorted() + [payload.count]
            for index in 0..<(cuts.count - 1) {
                let opcode: WebSocketOpcode = index == 0 ? (isText ? .text : .binary) : .continuation
                let isLast = index == cuts.count - 2
                bytes += clientFrame(opcode, Array(payload[cuts[index]..<cuts[index + 1]]), fin: isLast,
                                     key: randomKey(), length: Bool.random(using: &rng) ? .minimal : .sixteenBit)
                if isLast { events.append(.message(opcode: isText ? .text : .binary, payload: payload)) }
                if Int.random(in: 0..<4, using: &rng) == 0 {
                    let ping = (0..<Int.random(in: 0...10, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    bytes += clientFrame(.ping, ping, key: randomKey())
                    events.append(.ping(ping))
                }
            }
        }
        if Bool.random(using: &rng) {
            bytes += clientFrame(.close, closePayload(1000, Array("bye".utf8)), key: randomKey())
            events.append(.close(code: .normalClosure, reason: "bye"))
        }
        return (bytes, events)
    }

    /// Frames with random header fields (any opcode, RSV, mask bit, length form) and random
    /// payloads: mostly plausible, so the decoder gets past the first byte.
    private func randomFrames(using rng: inout SeededRandom) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 1...5, using: &rng) {
            let opcode = Bool.random(using: &rng) ? UInt8.random(in: 0...15, using: &rng) : [0, 1, 2, 8, 9, 10].randomElement(using: &rng)!
            let payload = (0..<Int.random(in: 0...(Bool.random(using: &rng) ? 8 : 400), using: &rng)).map { _ in
                Bool.random(using: &rng) ? UInt8.random(in: 0...255, using: &rng) : UInt8.random(in: 0x20...0x7E, using: &rng)
            }
            let length: WebSocketTestSupport.LengthEncoding = [.minimal, .minimal, .sixteenBit, .sixtyFourBit].randomElement(using: &rng)!
            bytes += clientFrame(opcode, payload, fin: Int.random(in: 0..<4, using: &rng) != 0,
                                 rsv: Int.random(in: 0..<10, using: &rng) == 0 ? UInt8.random(in: 1...7, using: &rng) : 0,
                                 masked: Int.random(in: 0..<10, using: &rng) != 0,
                                 key: (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) }, length: length)
        }
        return bytes
    }

    private func mutate(_ input: [UInt8], using rng: inout SeededRandom) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let index = Int.random(in: 0...bytes.count, using: &rng)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0 where index < bytes.count: bytes[index] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 1 where index < bytes.count: bytes[index] = UInt8.random(in: 0...255, using: &rng)
            case 2 where index < bytes.count: bytes.remove(at: index)
            case 3: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: index)
            case 4: bytes.removeLast(min(bytes.count, Int.random(in: 1...8, using: &rng)))
            default:
                let end = min(bytes.count, index + Int.random(in: 1...24, using: &rng))
                bytes.insert(contentsOf: bytes[index..<end], at: index)
            }
        }
        return bytes
    }

    /// Decodes whole and in one random split, asserts they agree and that the events obey the
    /// decoder's contract, and counts what happened.
    private func check(_ input: [UInt8], using rng: inout SeededRandom, into outcome: inout Outcome, label: String) {
        var decoder = WebSocketFrameDecoder(limits: limits)
        let whole = decoder.feed(input)
        let split = decode(input, pieces: randomPieces(of: input.count, using: &rng), limits: limits)
        XCTAssertEqual(split, whole, "split differs: \(label) \(input)")
        for (index, event) in whole.enumerated() {
            let isLast = index == whole.count - 1
            switch event {
            case .message(let opcode, let payload):
                outcome.messages += 1
                XCTAssertTrue(opcode == .text || opcode == .binary, label)
                XCTAssertLessThanOrEqual(payload.count, limits.maxMessageSize, label)
                if opcode == .text { XCTAssertTrue(WebSocketUTF8Validator.isValid(payload), label) }
            case .compressedMessage:
                XCTFail("a compressed message from a decoder that was never told of the extension: \(label)")
            case .ping(let payload), .pong(let payload):
                outcome.controls += 1
                XCTAssertLessThanOrEqual(payload.count, 125, label)
            case .close(let code, let reason):
                outcome.closes += 1
                XCTAssertTrue(isLast, "nothing after close: \(label)")
                XCTAssertTrue(code?.isValidOnWire ?? reason.isEmpty, label)
                XCTAssertEqual(decoder.phase, .closeReceived, label)
            case .protocolError(let code, _):
                outcome.errors[code, default: 0] += 1
                XCTAssertTrue(isLast, "nothing after an error: \(label)")
                XCTAssertTrue([.protocolError, .invalidPayload, .messageTooBig].contains(code), "\(code): \(label)")
                XCTAssertEqual(decoder.phase, .failed(code), label)
            }
        }
        if whole.isEmpty || !(whole.last.map(isTerminal) ?? false) {
            XCTAssertEqual(decoder.phase, .open, label)
        }
    }

    private func isTerminal(_ event: Event) -> Bool {
        switch event {
        case .close, .protocolError: true
        default: false
        }
    }

    func testFiveThousandRandomAndMutatedStreams() {
        var rng = SeededRandom(seed: 0x6455)
        var outcome = Outcome()
        let start = ContinuousClock.now
        for iteration in 0..<5000 {
            let input: [UInt8]
            switch iteration % 4 {
            case 0: input = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case 1: input = randomFrames(using: &rng)
            case 2: input = mutate(randomFrames(using: &rng), using: &rng)
            default: input = mutate(validStream(using: &rng).bytes, using: &rng)
            }
            check(input, using: &rng, into: &outcome, label: "iteration \(iteration)")
        }
        // The streams must reach every part of the decoder, not just its first byte.
        XCTAssertGreaterThan(outcome.messages, 500)
        XCTAssertGreaterThan(outcome.controls, 100)
        XCTAssertGreaterThan(outcome.closes, 20)
        XCTAssertGreaterThan(outcome.errors[.protocolError, default: 0], 500)
        XCTAssertGreaterThan(outcome.errors[.invalidPayload, default: 0], 50)
        XCTAssertGreaterThan(outcome.errors[.messageTooBig, default: 0], 50)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(60), "bounded")
    }

    func testRandomValidStreamsDecodeToWhatWasSent() {
        var rng = SeededRandom(seed: 0x1F1F)
        for iteration in 0..<500 {
            let (bytes, events) = validStream(using: &rng)
            XCTAssertEqual(decode(bytes, pieces: [bytes.count], limits: limits), events, "iteration \(iteration)")
            XCTAssertEqual(decode(bytes, pieces: randomPieces(of: bytes.count, using: &rng), limits: limits), events,
                           "iteration \(iteration), split")
        }
    }
}
