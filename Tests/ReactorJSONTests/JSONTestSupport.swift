@testable import ReactorJSON
import XCTest
import TestSupport

/// Parses test input, failing the test (not crashing) on invalid JSON.
func parsedJSON(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSON {
    do {
        return try JSON(parsing: text)
    } catch {
        XCTFail("test input is not valid JSON: \(error)", file: file, line: line)
        throw error
    }
}

/// The parse error for input that must be rejected; fails the test if the
/// input parses.
func expectParseError(
    _ bytes: [UInt8], parser: JSONParser = JSONParser(),
    file: StaticString = #filePath, line: UInt = #line
) -> JSONParseError? {
    do {
        let value = try parser.parse(bytes)
        XCTFail("expected a parse error for \(String(decoding: bytes, as: UTF8.self).debugDescription), got \(value)", file: file, line: line)
        return nil
    } catch {
        return error
    }
}

func expectParseError(
    _ text: String, parser: JSONParser = JSONParser(),
    file: StaticString = #filePath, line: UInt = #line
) -> JSONParseError? {
    expectParseError(Array(text.utf8), parser: parser, file: file, line: line)
}

/// The patch error for operations that must fail; fails the test if they
/// apply, and checks the document was left untouched.
func expectPatchFailure(
    _ operations: [JSONPatchOperation], on document: JSON,
    file: StaticString = #filePath, line: UInt = #line
) -> JSONPatchError? {
    var copy = document
    do {
        try JSONPatch.apply(operations, to: &copy)
        XCTFail("expected the patch to fail, got \(copy)", file: file, line: line)
        return nil
    } catch {
        XCTAssertEqual(copy.jsonBytes, document.jsonBytes, "a failed patch changed the document", file: file, line: line)
        return error
    }
}

/// A deterministic generator (SplitMix64), so property tests are
/// reproducible from their seed.
typealias JSONTestRandom = SeededRandom
