import Foundation
import XCTest

/// docs/architecture.md's "Unsafe constructs" table against the sources: every file of ReactorServer
/// that uses one of the constructs below is listed in that construct's row, and every listed file
/// uses it.
final class UnsafeInventoryTests: XCTestCase {
    /// What the check looks for. A construct here with no row in the table may be used nowhere.
    static let constructs = [
        "@exclusivity(unchecked)", "Unmanaged", "_withUnsafeGuaranteedRef", "_read", "_modify",
        "_isBitwiseTakable", "unsafeBitCast", "unsafeDowncast", "unowned(unsafe)", "nonisolated(unsafe)",
        "@unchecked Sendable", "_unsafeReferenceCast", "unsafeAddress", "unsafeMutableAddress",
    ]

    /// The table's rows: the constructs of the first column and the files of the second, both as
    /// the code spans (backquoted) in them.
    static func table() throws -> [(constructs: [String], files: Set<String>)] {
        let architecture = LayeringTests.sources.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/architecture.md")
        let text = try String(contentsOf: architecture, encoding: .utf8)
        let section = try XCTUnwrap(text.components(separatedBy: "### Unsafe constructs").dropFirst().first, "the section is in docs/architecture.md")
        let span = try NSRegularExpression(pattern: "`([^`]+)`")
        func spans(_ cell: Substring) -> [String] {
            let cell = String(cell)
            return span.matches(in: cell, range: NSRange(cell.startIndex..., in: cell)).map { String(cell[Range($0.range(at: 1), in: cell)!]) }
        }
        return section.split(separator: "\n").filter { $0.hasPrefix("| `") }.map { row in
            let cells = row.split(separator: "|", omittingEmptySubsequences: true)
            return (spans(cells[0]), Set(spans(cells[1])))
        }
    }

    /// The files of the module whose code (not comments or strings) uses `construct`.
    static func users(of construct: String, in files: [(folder: String, name: String, code: String)]) throws -> Set<String> {
        let pattern = try NSRegularExpression(pattern: #"(?<![\w.@])"# + NSRegularExpression.escapedPattern(for: construct) + #"(?!\w)"#)
        return Set(files.filter { pattern.firstMatch(in: $0.code, range: NSRange($0.code.startIndex..., in: $0.code)) != nil }.map(\.name))
    }

    func testEachUnsafeConstructIsUsedExactlyWhereTheInventorySays() throws {
        let files = try LayeringTests.files()
        let rows = try Self.table()
        XCTAssertGreaterThanOrEqual(rows.count, 8, "the table is read")
        var listed: Set<String> = []
        for row in rows {
            listed.formUnion(row.constructs)
            for construct in row.constructs { XCTAssertTrue(Self.constructs.contains(construct), "\(construct) is one the check looks for") }
            let used = try row.constructs.reduce(into: Set<String>()) { $0.formUnion(try Self.users(of: $1, in: files)) }
            XCTAssertEqual(used.subtracting(row.files).sorted(), [], "\(row.constructs) used in files the table does not list")
            XCTAssertEqual(row.files.subtracting(used).sorted(), [], "\(row.constructs) listed for files that do not use it")
        }
        for construct in Self.constructs where !listed.contains(construct) {
            XCTAssertEqual(try Self.users(of: construct, in: files).sorted(), [], "\(construct) has no row in the table: used nowhere")
        }
    }

    func testEachUnderscoredAttributeIsOneThisCheckKnows() throws {
        let attribute = try NSRegularExpression(pattern: #"@_\w+"#)
        var found: [String] = []
        for file in try LayeringTests.files() {
            for match in attribute.matches(in: file.code, range: NSRange(file.code.startIndex..., in: file.code)) {
                found.append("\(file.name): \(file.code[Range(match.range, in: file.code)!])")
            }
        }
        // `@_exported` re-exports ReactorJSON to the server's users: a module-level fact, not a trick.
        XCTAssertEqual(found, ["Exports.swift: @_exported"])
    }

    /// The scan finds a construct in code and not in a comment, and tells `_read` from `_readAll`.
    func testTheScanSeesCodeOnly() throws {
        let files = [
            (folder: "A", name: "A/One.swift", code: LayeringTests.code(of: "var x: Int { _read { yield y } } // Unmanaged")),
            (folder: "A", name: "A/Two.swift", code: LayeringTests.code(of: "func _readAll() {} /* @unchecked Sendable */")),
        ]
        XCTAssertEqual(try Self.users(of: "_read", in: files), ["A/One.swift"])
        XCTAssertEqual(try Self.users(of: "Unmanaged", in: files), [])
        XCTAssertEqual(try Self.users(of: "@unchecked Sendable", in: files), [])
    }
}
