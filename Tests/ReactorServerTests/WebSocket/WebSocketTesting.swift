import XCTest

@testable import ReactorServer
import TestSupport

/// Helpers for the WebSocket tests. A test class gets them by conforming; a protocol extension
/// keeps them from colliding with other tests in the module, and SwiftPM's test discovery on
/// Linux only finds direct subclasses of XCTestCase, so no base class.
protocol WebSocketTesting {}

enum WebSocketTestSupport {
    typealias SeededRandom = TestSupport.SeededRandom

    /// How a test client writes the payload length: real clients use the shortest, but the
    /// longer forms are legal and a decoder must accept them.
    enum LengthEncoding {
        case minimal, sixteenBit, sixtyFourBit
    }

    static let defaultKey: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
}

extension WebSocketTesting {
    typealias Event = WebSocketFrameDecoder.Output
    typealias SeededRandom = WebSocketTestSupport.SeededRandom

    /// A client frame, masked unless told otherwise. Masks byte by byte, independently of the
    /// decoder's word-at-a-time unmasking, so a bug there cannot cancel out.
    func clientFrame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0, masked: Bool = true,
        key: [UInt8] = WebSocketTestSupport.defaultKey, length: WebSocketTestSupport.LengthEncoding = .minimal
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        let count = payload.count
        switch length {
        case .minimal where count < 126:
            bytes.append(maskBit | UInt8(count))
        case .minimal where count <= 0xFFFF, .sixteenBit:
            bytes += [maskBit | 126, UInt8(count >> 8), UInt8(count & 0xFF)]
        case .minimal, .sixtyFourBit:
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(count) >> (8 * UInt64($0))) }
        }
        guard masked else { return bytes + payload }
        bytes += key
        bytes += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
        return bytes
    }

    func clientFrame(
        _ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0, masked: Bool = true,
        key: [UInt8] = WebSocketTestSupport.defaultKey, length: WebSocketTestSupport.LengthEncoding = .minimal
    ) -> [UInt8] {
        clientFrame(opcode.rawValue, payload, fin: fin, rsv: rsv, masked: masked, key: key, length: length)
    }

    func clientFrame(
        _ opcode: WebSocketOpcode, _ text: String, fin: Bool = true, rsv: UInt8 = 0, masked: Bool = true
    ) -> [UInt8] {
        clientFrame(opcode, Array(text.utf8), fin: fin, rsv: rsv, masked: masked)
    }

    /// Turns a frame as the server encoder writes it (unmasked) into the same frame as a client
    /// must send it, for encoder → decoder round trips.
    func masking(_ serverFrame: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(serverFrame[1] & 0x80 == 0, "already masked")
        let headerLength = switch serverFrame[1] & 0x7F {
        case 126: 4
        case 127: 10
        default: 2
        }
        var bytes = Array(serverFrame[..<headerLength])
        bytes[1] |= 0x80
        bytes += key
        bytes += serverFrame[headerLength...].enumerated().map { $0.element ^ key[$0.offset % 4] }
        return bytes
    }

    func closePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
        [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
    }

    /// Feeds `input` to a fresh decoder in pieces of the given sizes and collects the events.
    func decode(_ input: [UInt8], pieces: [Int], limits: WebSocketLimits = WebSocketLimits()) -> [Event] {
        var decoder = WebSocketFrameDecoder(limits: limits)
        var events: [Event] = []
        var offset = 0
        for size in pieces {
            events += decoder.feed(Array(input[offset..<offset + size]))
            offset += size
        }
        precondition(offset == input.count, "pieces must cover the input")
        return events
    }

    func randomPieces(of count: Int, using rng: inout SeededRandom) -> [Int] {
        var pieces: [Int] = []
        var left = count
        while left > 0 {
            // Mostly small pieces, so headers, lengths, masking keys and UTF-8 sequences get cut
            // everywhere; some large ones so payloads also arrive in bulk.
            let size = Int.random(in: 1...(Bool.random(using: &rng) ? 7 : 300), using: &rng)
            pieces.append(min(size, left))
            left -= pieces.last!
        }
        return pieces
    }

    /// Decodes `input` whole, byte by byte and in 20 seeded random splits, asserts that all give
    /// the same events, and returns them.
    func decodeAllWays(
        _ input: [UInt8], limits: WebSocketLimits = WebSocketLimits(),
        file: StaticString = #filePath, line: UInt = #line
    ) -> [Event] {
        let whole = decode(input, pieces: input.isEmpty ? [] : [input.count], limits: limits)
        let byteByByte = decode(input, pieces: Array(repeating: 1, count: input.count), limits: limits)
        XCTAssertEqual(byteByByte, whole, "byte-by-byte differs from whole", file: file, line: line)
        for seed in 0..<20 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            let split = decode(input, pieces: randomPieces(of: input.count, using: &rng), limits: limits)
            XCTAssertEqual(split, whole, "random split (seed \(seed)) differs from whole", file: file, line: line)
        }
        return whole
    }

    /// Feeds `input` byte by byte and returns how many bytes had been fed when the first
    /// protocol error came out, or nil if none did: the test of failing fast.
    func bytesFedUntilError(_ input: [UInt8], limits: WebSocketLimits = WebSocketLimits()) -> Int? {
        var decoder = WebSocketFrameDecoder(limits: limits)
        for (index, byte) in input.enumerated() {
            for event in decoder.feed([byte]) {
                if case .protocolError = event { return index + 1 }
            }
        }
        return nil
    }

    func assertProtocolError(
        _ input: [UInt8], _ code: WebSocketCloseCode, limits: WebSocketLimits = WebSocketLimits(),
        after expectedBefore: [Event] = [], file: StaticString = #filePath, line: UInt = #line
    ) {
        let events = decodeAllWays(input, limits: limits, file: file, line: line)
        guard case .protocolError(let actual, _)? = events.last else {
            return XCTFail("expected a protocol error \(code), got \(events)", file: file, line: line)
        }
        XCTAssertEqual(actual, code, "close code", file: file, line: line)
        XCTAssertEqual(Array(events.dropLast()), expectedBefore, "events before the error", file: file, line: line)
    }
}
