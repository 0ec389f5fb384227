import XCTest

import CUV
@testable import ReactorServer
import TestSupport

/// The parser reads a head's fields from its bytes once llhttp has accepted it (`HTTPHeadFields`),
/// not through llhttp's field callbacks. These tests hold the two together: on generated heads
/// (folded lines, blanks, empty values, tabs, bytes above 0x7F, stray CRs and LFs), llhttp's own
/// callbacks, collected here, must report the very fields the parser keeps; and where llhttp refuses
/// a head, the parser refuses it too. The parser refuses more only where `HTTPHeadFields` says so: a
/// space in a name, a CR that llhttp lets stand for a CRLF, an invalid Host and a repeated Content-Type.
final class HTTPHeadFieldsOracleTests: XCTestCase, HTTPParserTesting {
    func testFieldsAreThoseLlhttpReportsOnGeneratedHeads() {
        var rng = SeededRandom(seed: 0x4845_4144)
        var compared = 0, refusedByBoth = 0, quirks = 0, invalidHosts = 0, repeatedFields = 0
        for _ in 0..<3000 {
            let head = Self.generatedHead(using: &rng)
            let oracle = Self.llhttpFields(of: head)
            let events = parse(head, pieces: randomPieces(of: head.count, using: &rng))
            guard let fields = oracle else {
                refusedByBoth += 1
                XCTAssertTrue(events.count == 1 && { if case .error = events[0] { true } else { false } }(),
                              "llhttp refuses \(Self.show(head)), the parser gives \(events)")
                continue
            }
            if fields.contains(where: { $0.name.contains(" ") }) || Self.hasCROutsideCRLF(head) {
                quirks += 1
                XCTAssertTrue(events.count == 1 && { if case .error = events[0] { true } else { false } }(),
                              "the parser should refuse \(Self.show(head)), gives \(events)")
                continue
            }
            // RFC 9112 §3.2: the parser refuses a Host that is not a host, which llhttp takes.
            if fields.contains(where: { $0.name.lowercased() == "host" && !Array($0.value.utf8).withUnsafeBufferPointer(HTTPHostSyntax.isValid) }) {
                invalidHosts += 1
                XCTAssertTrue(events.count == 1 && { if case .error(.malformed("Host", _)) = events[0] { true } else { false } }(),
                              "the parser should refuse the Host of \(Self.show(head)), gives \(events)")
                continue
            }
            // A field a request carries once, given twice, it refuses too (whichever value was meant).
            if fields.filter({ $0.name.lowercased() == "content-type" }).count > 1 {
                repeatedFields += 1
                XCTAssertTrue(events.count == 1 && { if case .error(.malformed("Content-Type", _)) = events[0] { true } else { false } }(),
                              "the parser should refuse the Content-Types of \(Self.show(head)), gives \(events)")
                continue
            }
            guard events.count == 1, case .request(let request) = events[0] else {
                XCTFail("llhttp takes \(Self.show(head)) with \(fields), the parser gives \(events)")
                continue
            }
            compared += 1
            XCTAssertEqual(request.headers.map { "\($0.name): \($0.value)" }, fields.map { "\($0.name): \($0.value)" }, Self.show(head))
        }
        // The generator must reach every kind of head, or the comparison proves little.
        XCTAssertGreaterThan(compared, 1000)
        XCTAssertGreaterThan(refusedByBoth, 100)
        XCTAssertGreaterThan(quirks, 50)
        XCTAssertGreaterThan(invalidHosts, 50)
        XCTAssertGreaterThan(repeatedFields, 50)
    }

    func testAFoldedValueIsJoinedAsLlhttpJoinsIt() throws {
        for head in [
            "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", "GET / HTTP/1.1\r\nX:\r\n b\r\n\r\n", "GET / HTTP/1.1\r\nX: \t\r\n \t b \r\n\r\n",
            "GET / HTTP/1.1\r\nX: a \r\n\tb\r\n  c\r\nY: d\r\n\r\n", "GET / HTTP/1.1\r\nX: a\r\n   \r\n\r\n",
        ] {
            let bytes = Array(head.utf8)
            let fields = try XCTUnwrap(Self.llhttpFields(of: bytes), head)
            guard let request = requests(parseAllWays(bytes)).first else { return XCTFail(head) }
            XCTAssertEqual(request.headers.map { "\($0.name): \($0.value)" }, fields.map { "\($0.name): \($0.value)" }, head)
        }
    }

    func testACarriageReturnStandingForALineBreakIsRefused() {
        // This llhttp build takes "\r" and any byte where it wants CRLF after an empty value, and
        // would report "Y: v" as a field of its own here.
        let head = Array("GET / HTTP/1.1\r\nX:\rYY: v\r\n\r\n".utf8)
        XCTAssertNotNil(Self.llhttpFields(of: head))
        XCTAssertEqual(parseAllWays(head), [.error(.malformed(name: "HPE_LF_EXPECTED", reason: "Expected LF after CR"))])
    }

    // MARK: - The oracle: llhttp's own field callbacks

    /// The fields llhttp reports for `head` (a complete head of a bodiless request), each value's
    /// pieces joined and its trailing blanks left out, as the parser keeps them; nil if llhttp
    /// refuses it.
    static func llhttpFields(of head: [UInt8]) -> [(name: String, value: String)]? {
        let collector = FieldCollector()
        var settings = llhttp_settings_t()
        llhttp_settings_init(&settings)
        settings.on_header_field = { parser, at, count in FieldCollector.of(parser).name += copied(at, count); return 0 }
        settings.on_header_value = { parser, at, count in FieldCollector.of(parser).value += copied(at, count); return 0 }
        settings.on_header_value_complete = { parser in FieldCollector.of(parser).endField(); return 0 }
        settings.on_message_complete = { parser in FieldCollector.of(parser).complete = true; return 0 }
        var parser = llhttp_t()
        return withUnsafeMutablePointer(to: &settings) { settings in
            llhttp_init(&parser, HTTP_REQUEST, settings)
            parser.data = Unmanaged.passUnretained(collector).toOpaque()
            let code = head.withUnsafeBytes { llhttp_execute(&parser, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
            return withExtendedLifetime(collector) { code == HPE_OK && collector.complete ? collector.fields : nil }
        }
    }

    private final class FieldCollector {
        var name: [UInt8] = []
        var value: [UInt8] = []
        var fields: [(name: String, value: String)] = []
        var complete = false

        static func of(_ parser: UnsafeMutablePointer<llhttp_t>?) -> FieldCollector {
            Unmanaged<FieldCollector>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
        }

        func endField() {
            while let last = value.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { value.removeLast() }
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            name = []
            value = []
        }
    }

    // MARK: - Generated heads

    /// A head of a bodiless GET: mostly well-formed, with folds, blanks, tabs, empty values and
    /// bytes above 0x7F, and now and then a stray CR, LF or space where llhttp may or may not take it.
    static func generatedHead(using rng: inout SeededRandom) -> [UInt8] {
        func odds(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }
        func blanks() -> [UInt8] { (0..<Int.random(in: 0...2, using: &rng)).map { _ in odds(70) ? 0x20 : 0x09 } }
        func lineEnd() -> [UInt8] {
            if odds(92) { return Array("\r\n".utf8) }
            return odds(50) ? [0x0A] : [0x0D, UInt8.random(in: 0x21...0x7E, using: &rng)]
        }
        let names = ["Host", "X-A", "Accept", "Content-Type", "Expect", "X-Long-Header-Name-Here", "a"]
        var head = Array("GET /p?q=1 HTTP/1.1".utf8) + (odds(90) ? Array("\r\n".utf8) : [0x0A])
        for _ in 0..<Int.random(in: 0...6, using: &rng) {
            var name = Array(names.randomElement(using: &rng)!.utf8)
            if odds(4) { name.insert(0x20, at: Int.random(in: 0...name.count, using: &rng)) }
            head += name + [UInt8(ascii: ":")] + blanks()
            head += value(using: &rng) + (odds(20) ? blanks() : []) + lineEnd()
            while odds(12) {
                head += (odds(50) ? [0x20] : [0x09]) + blanks() + value(using: &rng) + lineEnd()
            }
        }
        return head + (odds(95) ? Array("\r\n".utf8) : odds(50) ? [0x0A] : [0x0D, 0x41])
    }

    /// A value: printable ASCII, inner blanks and tabs, a byte above 0x7F now and then; empty at times.
    private static func value(using rng: inout SeededRandom) -> [UInt8] {
        if Int.random(in: 0..<10, using: &rng) == 0 { return [] }
        var value: [UInt8] = []
        for index in 0..<Int.random(in: 1...24, using: &rng) {
            switch Int.random(in: 0..<20, using: &rng) {
            case 0 where index > 0: value.append(0x09)
            case 1 where index > 0: value.append(0x20)
            case 2: value.append(UInt8.random(in: 0x80...0xFF, using: &rng))
            default: value.append(UInt8.random(in: 0x21...0x7E, using: &rng))
            }
        }
        return value
    }

    /// Whether `head` has a CR that is not the first half of a CRLF.
    static func hasCROutsideCRLF(_ head: [UInt8]) -> Bool {
        head.indices.contains { head[$0] == 0x0D && ($0 + 1 == head.count || head[$0 + 1] != 0x0A) }
    }

    static func show(_ head: [UInt8]) -> String {
        String(decoding: head, as: UTF8.self).debugDescription
    }
}

/// The `count` bytes at `at`, for llhttp's callbacks (a C function pointer cannot reach a static method of the class).
private func copied(_ at: UnsafePointer<CChar>?, _ count: Int) -> [UInt8] {
    guard let at else { return [] }
    return Array(UnsafeRawBufferPointer(start: at, count: count))
}
