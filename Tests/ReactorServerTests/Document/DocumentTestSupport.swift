import Reactor
import ReactorServer
import XCTest

// Helpers for the JSONDocument tests. Names carry "document" so that they cannot clash with the
// JSON layer's test helpers, which share this test target.

/// Parses test input, failing the test (not crashing) on invalid JSON.
func documentJSON(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSON {
    do {
        return try JSON(parsing: text)
    } catch {
        XCTFail("test input is not valid JSON: \(error)", file: file, line: line)
        throw error
    }
}

/// A pointer from its string form, failing the test on an invalid one.
func documentPointer(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSONPointer {
    do {
        return try JSONPointer(text)
    } catch {
        XCTFail("test pointer is not valid: \(error)", file: file, line: line)
        throw error
    }
}

/// Applies `event` to the document `before` (JSON text) through the `State` entry point the `Core`
/// uses, and checks the result against `after`: equal, and serialized to the same bytes as `after`
/// is (so member order counts).
func assertDocumentEvent(
    _ event: DocumentEvent, on before: String, gives after: String,
    file: StaticString = #filePath, line: UInt = #line
) throws {
    var document = JSONDocument(root: try documentJSON(before, file: file, line: line))
    let expected = try documentJSON(after, file: file, line: line)
    do {
        try document.apply(event as any Event)
    } catch {
        XCTFail("\(event) was rejected on \(before): \(error)", file: file, line: line)
        return
    }
    XCTAssertEqual(document.root, expected, file: file, line: line)
    XCTAssertEqual(document.root.jsonString, expected.jsonString, "member order differs", file: file, line: line)
    assertDocumentChanges(of: event, from: try documentJSON(before, file: file, line: line), to: document, file: file, line: line)
}

/// The operations `document` recorded for `event` take `before` to the document exactly, member order
/// included: what subscribers are sent instead of a diff.
func assertDocumentChanges(of event: DocumentEvent, from before: JSON, to document: JSONDocument,
                           file: StaticString = #filePath, line: UInt = #line) {
    guard let changes = document.lastChanges else {
        return XCTFail("\(event) recorded no changes", file: file, line: line)
    }
    var replayed = before
    do {
        try replayed.apply(patch: changes)
    } catch {
        return XCTFail("the changes \(changes) of \(event) do not apply to \(before.jsonString): \(error)", file: file, line: line)
    }
    XCTAssertEqual(replayed.jsonString, document.root.jsonString, "the changes \(changes) of \(event) from \(before.jsonString)", file: file, line: line)
}

/// Applies `event` to the document `before`, which must reject it with `reason` and `kind`, and
/// checks that the document is byte-for-byte what it was.
func assertDocumentRejects(
    _ event: DocumentEvent, on before: String, reason: String, kind: EventRejection.Kind = .invalid,
    file: StaticString = #filePath, line: UInt = #line
) throws {
    let original = try documentJSON(before, file: file, line: line)
    var document = JSONDocument(root: original)
    do {
        try document.apply(event as any Event)
        XCTFail("expected \(event) to be rejected on \(before), got \(document.root)", file: file, line: line)
    } catch let rejection as EventRejection {
        XCTAssertEqual(rejection.reason, reason, file: file, line: line)
        XCTAssertEqual(rejection.kind, kind, file: file, line: line)
    } catch {
        XCTFail("expected an EventRejection, got \(type(of: error)): \(error)", file: file, line: line)
    }
    XCTAssertEqual(document.root, original, "a rejected event changed the document", file: file, line: line)
    XCTAssertEqual(document.root.jsonBytes, original.jsonBytes, "a rejected event changed the document's bytes", file: file, line: line)
}

/// The address of an array's element buffer: it changes exactly when the array is copied.
func documentArrayBuffer(_ value: JSON?) -> UnsafeRawPointer? {
    value?.arrayValue?.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
}

/// The address of an object's value buffer: it changes exactly when the object is copied.
func documentObjectBuffer(_ value: JSON?) -> UnsafeRawPointer? {
    value?.objectValue?.values.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
}
