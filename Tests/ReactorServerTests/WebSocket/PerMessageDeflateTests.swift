import CUV
import XCTest

@testable import ReactorServer

/// permessage-deflate (RFC 7692): which offers the server accepts; messages compressed and
/// inflated with no context between them, checked against the RFC's own examples; and a shared
/// stream whose context carries from message to message, inflated as a peer keeping its window does.
final class PerMessageDeflateTests: XCTestCase, WebSocketTesting {
    // MARK: Negotiation (§7.1)

    func testAcceptsThePlainOfferAsksTheClientForNoContextTakeoverAndKeepsItsOwn() {
        let accepted = PerMessageDeflate.negotiate(offers: "permessage-deflate")
        XCTAssertEqual(accepted?.serverMaxWindowBits, 15)
        XCTAssertEqual(accepted?.serverNoContextTakeover, false)
        XCTAssertEqual(accepted?.responseHeaderValue, "permessage-deflate; client_no_context_takeover")
        let asked = PerMessageDeflate.negotiate(offers: "permessage-deflate; server_no_context_takeover")
        XCTAssertEqual(asked?.responseHeaderValue, "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
    }

    func testAcceptsWhatBrowsersAndPythonOffer() {
        XCTAssertNotNil(PerMessageDeflate.negotiate(offers: "permessage-deflate; client_max_window_bits"))
        XCTAssertNotNil(PerMessageDeflate.negotiate(offers: "permessage-deflate; client_max_window_bits=12; server_no_context_takeover"))
        XCTAssertNotNil(PerMessageDeflate.negotiate(offers: "permessage-deflate;client_no_context_takeover"))
    }

    func testEchoesTheServerWindowTheClientAskedFor() {
        let accepted = PerMessageDeflate.negotiate(offers: "permessage-deflate; server_max_window_bits=10")
        XCTAssertEqual(accepted?.serverMaxWindowBits, 10)
        XCTAssertEqual(accepted?.responseHeaderValue, "permessage-deflate; client_no_context_takeover; server_max_window_bits=10")
        XCTAssertEqual(PerMessageDeflate.negotiate(offers: #"permessage-deflate; server_max_window_bits="9""#)?.serverMaxWindowBits, 9)
    }

    func testEchoesServerMaxWindowBitsEvenAtFifteen() {
        // §7.1.2.1: an offer that names it is answered with it, whatever its value.
        XCTAssertEqual(PerMessageDeflate.negotiate(offers: "permessage-deflate; server_max_window_bits=15")?.responseHeaderValue,
                       "permessage-deflate; client_no_context_takeover; server_max_window_bits=15")
        XCTAssertEqual(PerMessageDeflate.negotiate(offers: "permessage-deflate")?.responseHeaderValue,
                       "permessage-deflate; client_no_context_takeover")
    }

    func testDeclinesMalformedOffersAndTakesTheNextOne() {
        for offer in ["permessage-deflate; server_max_window_bits", "permessage-deflate; server_max_window_bits=7",
                      "permessage-deflate; server_max_window_bits=16", "permessage-deflate; server_max_window_bits=010",
                      "permessage-deflate; client_max_window_bits=x", "permessage-deflate; server_no_context_takeover=1",
                      "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                      "permessage-deflate; mystery", "x-webkit-deflate-frame", "deflate-frame"] {
            XCTAssertNil(PerMessageDeflate.negotiate(offers: offer), offer)
        }
        let fallback = PerMessageDeflate.negotiate(offers: "permessage-deflate; server_max_window_bits=7, permessage-deflate; server_max_window_bits=12")
        XCTAssertEqual(fallback?.serverMaxWindowBits, 12)
        XCTAssertNil(PerMessageDeflate.negotiate(offers: nil))
    }

    // MARK: Messages (§7.2)

    func testInflatesTheRFCsExamples() {
        let compressor = MessageCompressor()
        // §7.2.3.1 "Hello" in one compressed block; §7.2.3.3 in a block with no compression;
        // §7.2.3.4 with BFINAL set (and the 0x00 that completes its empty final block).
        for payload: [UInt8] in [[0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00],
                                 [0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00],
                                 [0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00]] {
            XCTAssertEqual(compressor.inflate(payload, limit: 100), .success(Array("Hello".utf8)), "\(payload)")
        }
    }

    func testCompressesWithTheTailRemovedAndNoContextBetweenMessages() {
        let compressor = MessageCompressor()
        let hello = Array("Hello".utf8)
        let first = hello.withUnsafeBytes { compressor.deflate($0) }
        XCTAssertEqual(first, [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], "§7.2.3.1's bytes")
        XCTAssertEqual(hello.withUnsafeBytes { compressor.deflate($0) }, first, "§7.2.3.2: a second message does not refer back to the first")
    }

    func testRoundTripsMessagesOfEverySize() {
        let compressor = MessageCompressor()
        var random = SeededRandom(seed: 7)
        for size in [0, 1, 100, 16 * 1024, 16 * 1024 + 1, 300_000] {
            let message = (0..<size).map { index -> UInt8 in index % 7 == 0 ? UInt8(random.next() & 0xFF) : UInt8(ascii: "a") }
            let compressed = message.withUnsafeBytes { compressor.deflate($0) }
            XCTAssertEqual(compressor.inflate(compressed, limit: size), .success(message), "\(size) bytes")
        }
    }

    func testStopsInflatingAtTheLimit() {
        let compressor = MessageCompressor()
        let bomb = [UInt8](repeating: 0, count: 10 << 20)
        let compressed = bomb.withUnsafeBytes { compressor.deflate($0) }
        XCTAssertLessThan(compressed.count, 20_000)
        XCTAssertEqual(compressor.inflate(compressed, limit: 1 << 20), .failure(.tooBig))
        XCTAssertEqual(compressor.inflate(compressed, limit: 10 << 20).map(\.count), .success(10 << 20))
    }

    func testRefusesWhatIsNotDeflateData() {
        let compressor = MessageCompressor()
        XCTAssertEqual(compressor.inflate([0xFF, 0xFF, 0xFF, 0xFF, 0x00], limit: 100), .failure(.invalid))
        XCTAssertEqual(compressor.inflate(Array("Hello".utf8), limit: 100), .failure(.invalid))
        XCTAssertEqual(compressor.inflate([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], limit: 100), .success(Array("Hello".utf8)),
                       "a refusal leaves the compressor usable")
    }

    // MARK: A shared stream (context kept from message to message)

    /// A peer's decompressor, its window kept from one message to the next.
    final class Inflater {
        private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        init() {
            stream.initialize(to: z_stream())
            _ = inflateInit2_(stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        }
        deinit {
            inflateEnd(stream)
            stream.deallocate()
        }
        /// The message a frame made by `SharedDeflateStream` carries.
        func inflate(frame: [UInt8]) -> String? {
            let headerLength = frame[1] & 0x7F == 126 ? 4 : frame[1] & 0x7F == 127 ? 10 : 2
            var input = Array(frame[headerLength...]) + [0x00, 0x00, 0xFF, 0xFF]
            var output = [UInt8](repeating: 0, count: 1 << 20)
            let produced = input.withUnsafeMutableBufferPointer { input in
                output.withUnsafeMutableBufferPointer { output -> Int? in
                    stream.pointee.next_in = input.baseAddress
                    stream.pointee.avail_in = UInt32(input.count)
                    stream.pointee.next_out = output.baseAddress
                    stream.pointee.avail_out = UInt32(output.count)
                    let status = CUV.inflate(stream, Z_SYNC_FLUSH)
                    guard status == Z_OK || status == Z_BUF_ERROR, stream.pointee.avail_in == 0 else { return nil }
                    return output.count - Int(stream.pointee.avail_out)
                }
            }
            return produced.map { String(decoding: output[..<$0], as: UTF8.self) }
        }
    }

    private static func patch(_ version: UInt64, score: Int) -> SubscriberMessage {
        .patch(version, [.replace(path: try! JSONPointer("/players/p3"), value: ["name": "Player 3", "score": .integer(Int64(score)), "team": "red",
                                                                               "inventory": ["sword", "shield", "potion of healing"]])], history: "0123456789abcdef")
    }

    func testEachMessageIsCompressedOnceAndRefersBackToTheOnesBefore() {
        let stream = SharedDeflateStream()
        let peer = Inflater()
        var sizes: [Int] = []
        for version in UInt64(1)...6 {
            let message = Self.patch(version, score: Int(version))
            let entry = stream.entry(for: message)
            XCTAssertEqual(entry.number, version)
            XCTAssertEqual(entry.startsAfresh, version == 1)
            XCTAssertEqual(entry.frame[0], 0xC1, "FIN, RSV1, text")
            XCTAssertEqual(stream.entry(for: message).frame, entry.frame, "asked again, the same entry: compressed once")
            XCTAssertEqual(peer.inflate(frame: entry.frame), String(decoding: message.json, as: UTF8.self))
            sizes.append(entry.frame.count)
        }
        XCTAssertLessThan(sizes[5] * 3, sizes[0], "a later patch is mostly references to the one before: \(sizes)")
    }

    func testAFreshStartComesWhenAskedButNotMoreOftenThanTheInterval() {
        let stream = SharedDeflateStream()
        let interval = SharedDeflateStream.messagesBetweenFreshStarts
        XCTAssertTrue(stream.entry(for: Self.patch(1, score: 1)).startsAfresh)
        stream.requestFreshStart()
        var fresh: [UInt64] = []
        for version in UInt64(2)...(3 * interval) {
            let entry = stream.entry(for: Self.patch(version, score: Int(version)))
            if entry.startsAfresh { fresh.append(entry.number) }
            if version == 2 * interval { stream.requestFreshStart() }
        }
        XCTAssertEqual(fresh, [1 + interval, 1 + 2 * interval], "asked after 1 and after \(2 * interval): fresh at the first entry allowed after each")
        // A peer that joins at a fresh start inflates everything from there.
        let late = Inflater()
        let joined = Self.patch(100, score: 100)
        stream.requestFreshStart()
        var entry = stream.entry(for: joined)
        var version: UInt64 = 100
        while !entry.startsAfresh {
            version += 1
            entry = stream.entry(for: Self.patch(version, score: Int(version)))
        }
        for _ in 0..<3 {
            XCTAssertEqual(late.inflate(frame: entry.frame).map { $0.contains("\"version\":\(version)") }, true)
            version += 1
            entry = stream.entry(for: Self.patch(version, score: Int(version)))
        }
    }

    // MARK: Frames (§6)

    func testTheDecoderHandsOverCompressedMessagesOnlyOnceNegotiated() {
        let compressed: [UInt8] = [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
        var plain = WebSocketFrameDecoder()
        guard case .protocolError(.protocolError, _)? = plain.feed(clientFrame(0x1, compressed, rsv: 0b100)).first else {
            return XCTFail("RSV1 without the extension fails the connection")
        }
        var decoder = WebSocketFrameDecoder()
        decoder.acceptsCompressedMessages = true
        XCTAssertEqual(decoder.feed(clientFrame(0x1, compressed, rsv: 0b100)), [.compressedMessage(opcode: .text, payload: compressed)],
                       "not checked as UTF-8 before it is inflated")
        let fragments = clientFrame(0x2, Array(compressed[..<3]), fin: false, rsv: 0b100) + clientFrame(0x0, Array(compressed[3...]))
        XCTAssertEqual(decoder.feed(fragments), [.compressedMessage(opcode: .binary, payload: compressed)])
        XCTAssertEqual(decoder.feed(clientFrame(0x1, Array("plain".utf8))), [.message(opcode: .text, payload: Array("plain".utf8))])
    }

    func testRSV1OnAContinuationOrControlFrameFailsTheConnection() {
        for frames in [clientFrame(0x1, [1], fin: false, rsv: 0b100) + clientFrame(0x0, [2], rsv: 0b100),
                       clientFrame(0x9, [], rsv: 0b100), clientFrame(0x1, [0], rsv: 0b010)] {
            var decoder = WebSocketFrameDecoder()
            decoder.acceptsCompressedMessages = true
            guard case .protocolError(.protocolError, _)? = decoder.feed(frames).last else { return XCTFail("\(frames)") }
        }
    }

    func testADeflatedFrameHasRSV1AndFallsBackToPlainWhenCompressionDoesNotHelp() {
        let compressor = MessageCompressor()
        let text = Array(String(repeating: "{\"score\":1}", count: 50).utf8)
        let frame = WebSocketFrameEncoder.deflatedFrame(opcode: .text, payload: text, compressor: compressor)
        XCTAssertEqual(frame[0], 0xC1, "FIN, RSV1, text")
        XCTAssertLessThan(frame.count, text.count / 4)
        let tiny = WebSocketFrameEncoder.deflatedFrame(opcode: .binary, payload: [1], compressor: compressor)
        XCTAssertEqual(tiny, [0x82, 0x01, 0x01])
    }
}
