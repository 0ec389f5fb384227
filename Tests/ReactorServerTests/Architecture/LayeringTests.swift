import Foundation
import XCTest

/// The dependency rule between ReactorServer's folders (docs/architecture.md, "Layers"), checked
/// on the source text: a file names only types declared in its own folder or in a folder below
/// it, and only `Loop/` calls libuv or hiredis.
final class LayeringTests: XCTestCase {
    /// Lowest first: each folder may use the ones before it. Files at the module's root (the daemon)
    /// come above them all.
    static let layers = [
        "Kernel", "TLS", "Metrics", "Loop", "HTTP", "WebSocket", "HostedState", "Durability", "Cluster",
        "Server", "Subscriptions", "Hosting", "Document",
    ]

    static let sources: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/ReactorServer")

    /// Each Swift file of the module: its folder ("" at the root) and its text without comments
    /// and string literals.
    static func files() throws -> [(folder: String, name: String, code: String)] {
        let paths = try XCTUnwrap(FileManager.default.subpathsOfDirectory(atPath: sources.path)).filter { $0.hasSuffix(".swift") }.sorted()
        XCTAssertFalse(paths.isEmpty, "the sources are found at \(sources.path)")
        return try paths.map { path in
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            let parts = path.split(separator: "/")
            return (parts.count > 1 ? String(parts[0]) : "", path, code(of: text))
        }
    }

    /// The text with comments and string literals blanked: names in them are not dependencies.
    static func code(of text: String) -> String {
        var code = text
        let patterns = [
            #"(?s)/\*.*?\*/"#,  // block comments
            #"//[^\n]*"#,  // line comments
            ##"(?s)#?"""\n.*?"""#?"##,  // multi-line strings
            ##"#"[^\n]*?"#"##,  // raw strings
            #""(?:\\.|[^"\\\n])*""#,  // strings
        ]
        for pattern in patterns {
            code = code.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        return code
    }

    /// Types declared at the top level of a file (not nested ones: those are reached through
    /// their parent's name).
    static func declaredTypes(in code: String) -> [String] {
        let declaration = try! NSRegularExpression(
            pattern: #"^(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final|indirect)\s+)*(?:class|struct|enum|protocol|typealias|actor)\s+([A-Z]\w*)"#,
            options: .anchorsMatchLines)
        return declaration.matches(in: code, range: NSRange(code.startIndex..., in: code)).map {
            String(code[Range($0.range(at: 1), in: code)!])
        }
    }

    func testEveryFolderHasItsPlaceInTheLayers() throws {
        let folders = Set(try Self.files().map(\.folder)).subtracting([""])
        XCTAssertEqual(folders.subtracting(Self.layers), [], "a new folder: give it its place in `layers` and in docs/architecture.md")
        XCTAssertEqual(Set(Self.layers).subtracting(folders), [], "a folder that is gone")
    }

    func testAFolderUsesOnlyItselfAndTheFoldersBelowIt() throws {
        let files = try Self.files()
        var home: [String: String] = [:]
        for file in files where !file.folder.isEmpty {
            for type in Self.declaredTypes(in: file.code) { home[type] = file.folder }
        }
        XCTAssertGreaterThan(home.count, 100)
        let rank = Dictionary(uniqueKeysWithValues: Self.layers.enumerated().map { ($1, $0) })
        let word = try NSRegularExpression(pattern: #"\b[A-Z]\w*\b"#)
        var violations: [String] = []
        for file in files where !file.folder.isEmpty {
            let names = Set(word.matches(in: file.code, range: NSRange(file.code.startIndex..., in: file.code)).map {
                String(file.code[Range($0.range, in: file.code)!])
            })
            for name in names.sorted() {
                guard let other = home[name], other != file.folder, let mine = rank[file.folder], let theirs = rank[other] else { continue }
                if theirs > mine { violations.append("\(file.name) uses \(name) from \(other)/, a layer above \(file.folder)/") }
            }
        }
        XCTAssertEqual(violations, [], violations.joined(separator: "\n"))
    }

    func testOnlyLoopCallsLibuvAndHiredis() throws {
        let cCalls = try NSRegularExpression(pattern: #"\b(?:uv_\w+|UV_\w+|redis[A-Z]\w*|REDIS_\w+|freeReplyObject)\b"#)
        var outside: [String] = []
        for file in try Self.files() where file.folder != "Loop" {
            let found = cCalls.matches(in: file.code, range: NSRange(file.code.startIndex..., in: file.code)).map {
                String(file.code[Range($0.range, in: file.code)!])
            }
            if !found.isEmpty { outside.append("\(file.name): \(Set(found).sorted().joined(separator: ", "))") }
        }
        XCTAssertEqual(outside, [], outside.joined(separator: "\n"))
    }

    /// The checks above find what they look for.
    func testTheScannerSeesDeclarationsAndSkipsCommentsAndStrings() {
        let code = Self.code(of: """
            /// Uses `HTTPServer`.
            public final class Example: Sendable { // TCPConnection
                let text = "EventLoop \\"quoted\\" uv_run"
                struct Nested {}
            }
            @usableFromInline enum Kind {}
            """)
        XCTAssertEqual(Self.declaredTypes(in: code), ["Example", "Kind"])
        for hidden in ["HTTPServer", "TCPConnection", "EventLoop", "uv_run"] { XCTAssertFalse(code.contains(hidden), hidden) }
    }
}
