import XCTest

@testable import ReactorServer
import TestSupport

/// Helpers for the parser tests. A test class gets them by conforming; they live in a protocol
/// extension rather than at the top level so they cannot collide with other tests in the module
/// (the Reactor module has its own `Event`), and not in a base class because SwiftPM's test
/// discovery on Linux only finds direct subclasses of XCTestCase.
protocol HTTPParserTesting {}

enum HTTPParserTestSupport {
    typealias SeededRandom = TestSupport.SeededRandom
}

extension HTTPParserTesting {
    typealias Event = HTTPRequestParser.Output
    typealias SeededRandom = HTTPParserTestSupport.SeededRandom

    /// Feeds `input` to a fresh parser in pieces of the given sizes, the way reads would deliver
    /// it, and collects the events. After an upgrade every later byte belongs to the new
    /// protocol, so it is appended to the leftover: that makes results comparable across splits.
    func parse(_ input: [UInt8], pieces: [Int], limits: HTTPLimits = HTTPLimits(), atEOF: Bool = false) -> [Event] {
        let parser = HTTPRequestParser(limits: limits)
        var events: [Event] = []
        var offset = 0
        for size in pieces {
            let piece = Array(input[offset..<offset + size])
            offset += size
            if case .upgrade(let request, let leftover)? = events.last {
                events[events.count - 1] = .upgrade(request, leftover: leftover + piece)
                continue
            }
            piece.withUnsafeBytes { parser.feed($0) { events.append($0) } }
        }
        precondition(offset == input.count, "pieces must cover the input")
        if atEOF, let event = parser.finish() { events.append(event) }
        return events
    }

    func randomPieces(of count: Int, using rng: inout SeededRandom) -> [Int] {
        var pieces: [Int] = []
        var left = count
        while left > 0 {
            // Mostly small pieces, so names, values, CRLFs and chunk sizes get cut everywhere.
            let size = Int.random(in: 1...(Bool.random(using: &rng) ? 8 : 64), using: &rng)
            pieces.append(min(size, left))
            left -= pieces.last!
        }
        return pieces
    }

    /// Parses `input` whole, byte by byte and in 20 seeded random splits, asserts that all give
    /// the same events, and returns them.
    func parseAllWays(
        _ input: [UInt8], limits: HTTPLimits = HTTPLimits(), atEOF: Bool = false,
        file: StaticString = #filePath, line: UInt = #line
    ) -> [Event] {
        let whole = parse(input, pieces: input.isEmpty ? [] : [input.count], limits: limits, atEOF: atEOF)
        let byteByByte = parse(input, pieces: Array(repeating: 1, count: input.count), limits: limits, atEOF: atEOF)
        XCTAssertEqual(byteByByte, whole, "byte-by-byte differs from whole", file: file, line: line)
        for seed in 0..<20 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            let split = parse(input, pieces: randomPieces(of: input.count, using: &rng), limits: limits, atEOF: atEOF)
            XCTAssertEqual(split, whole, "random split (seed \(seed)) differs from whole", file: file, line: line)
        }
        return whole
    }

    func parseAllWays(
        _ text: String, limits: HTTPLimits = HTTPLimits(), atEOF: Bool = false,
        file: StaticString = #filePath, line: UInt = #line
    ) -> [Event] {
        parseAllWays(Array(text.utf8), limits: limits, atEOF: atEOF, file: file, line: line)
    }

    /// The single request in `events`, failing the test otherwise.
    func onlyRequest(_ events: [Event], file: StaticString = #filePath, line: UInt = #line) -> HTTPRequest? {
        guard events.count == 1, case .request(let request) = events[0] else {
            XCTFail("expected exactly one request, got \(events)", file: file, line: line)
            return nil
        }
        return request
    }

    func requests(_ events: [Event]) -> [HTTPRequest] {
        events.compactMap { if case .request(let request) = $0 { request } else { nil } }
    }

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
}
