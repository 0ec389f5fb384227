import Reactor
import ReactorServer
import XCTest

final class JSONDocumentIncrementTests: XCTestCase {
    private func increment(_ path: String, by amount: DocumentEvent.Amount = 1) throws -> DocumentEvent {
        .increment(path: try documentPointer(path), by: amount)
    }

    /// Applies an increment that must succeed and returns the value at `path` afterwards.
    private func incremented(_ text: String, _ path: String, by amount: DocumentEvent.Amount) throws -> JSON? {
        var document = JSONDocument(root: try documentJSON(text))
        try document.apply(try increment(path, by: amount))
        return document.root[try documentPointer(path)]
    }

    func testTheAmountDefaultsToOne() throws {
        XCTAssertEqual(DocumentEvent.increment(path: try documentPointer("/n")), try increment("/n", by: .integer(1)))
        try assertDocumentEvent(.increment(path: try documentPointer("/n")), on: #"{"n":41}"#, gives: #"{"n":42}"#)
    }

    func testIntegerPlusIntegerStaysAnInteger() throws {
        guard case .integer(let value)? = try incremented(#"{"n":5}"#, "/n", by: -7) else {
            return XCTFail("expected an integer")
        }
        XCTAssertEqual(value, -2)
    }

    func testAnyDoubleMakesADouble() throws {
        guard case .number(let a)? = try incremented(#"{"n":1}"#, "/n", by: 0.5) else { return XCTFail("expected a double") }
        XCTAssertEqual(a, 1.5)
        guard case .number(let b)? = try incremented(#"{"n":1.5}"#, "/n", by: 2) else { return XCTFail("expected a double") }
        XCTAssertEqual(b, 3.5)
        // Stays a double even when the result is whole.
        guard case .number(let c)? = try incremented(#"{"n":1.5}"#, "/n", by: 0.5) else { return XCTFail("expected a double") }
        XCTAssertEqual(c, 2.0)
    }

    func testAMissingTargetCountsAsZeroAndIsCreated() throws {
        try assertDocumentEvent(try increment("/n"), on: #"{"a":1}"#, gives: #"{"a":1,"n":1}"#)
        try assertDocumentEvent(try increment("/stats/hits/today", by: 5), on: "{}", gives: #"{"stats":{"hits":{"today":5}}}"#)
        guard case .number(let value)? = try incremented("{}", "/n", by: 2.5) else { return XCTFail("expected a double") }
        XCTAssertEqual(value, 2.5)
    }

    func testIncrementTheRootAndAnArrayElement() throws {
        try assertDocumentEvent(try increment("", by: 2), on: "40", gives: "42")
        try assertDocumentEvent(try increment("/scores/1", by: 10), on: #"{"scores":[1,2]}"#, gives: #"{"scores":[1,12]}"#)
    }

    func testIntegerOverflowIsRejected() throws {
        try assertDocumentRejects(
            try increment("/n"), on: #"{"n":9223372036854775807}"#,
            reason: "cannot increment /n: 9223372036854775807 + 1 overflows a 64-bit integer")
        try assertDocumentRejects(
            try increment("/n", by: -1), on: #"{"n":-9223372036854775808}"#,
            reason: "cannot increment /n: -9223372036854775808 + -1 overflows a 64-bit integer")
    }

    func testANonFiniteResultIsRejected() throws {
        try assertDocumentRejects(
            try increment("/n", by: 1e308), on: #"{"n":1e308}"#,
            reason: "cannot increment /n: 1e+308 + 1e+308 is not a finite number")
    }

    func testANonFiniteAmountIsRejectedEvenForAMissingTarget() throws {
        try assertDocumentRejects(
            try increment("/a/n", by: .number(.infinity)), on: "{}",
            reason: "cannot increment /a/n: the amount inf is not a finite number")
        try assertDocumentRejects(
            try increment("/n", by: .number(.nan)), on: #"{"n":1}"#,
            reason: "cannot increment /n: the amount nan is not a finite number")
    }

    func testANonNumberIsRejected() throws {
        let cases: [(String, String)] = [
            (#"{"counter":"7"}"#, "a string"),
            (#"{"counter":true}"#, "a boolean"),
            (#"{"counter":null}"#, "null"),
            (#"{"counter":[1]}"#, "an array"),
            (#"{"counter":{"n":1}}"#, "an object"),
        ]
        for (document, found) in cases {
            try assertDocumentRejects(
                try increment("/counter"), on: document,
                reason: "cannot increment /counter: it is \(found), not a number")
        }
        try assertDocumentRejects(
            try increment(""), on: "{}", reason: "cannot increment the document: it is an object, not a number")
    }

    func testIncrementDoesNotCreateArrayElements() throws {
        try assertDocumentRejects(
            try increment("/scores/2"), on: #"{"scores":[1,2]}"#,
            reason: "cannot increment /scores/2: index 2 is out of bounds for /scores, which has 2 elements")
        try assertDocumentRejects(
            try increment("/scores/-"), on: #"{"scores":[]}"#,
            reason: #"cannot increment /scores/-: "-" designates no existing element of /scores"#)
    }

    func testIncrementThroughAScalarIsRejected() throws {
        try assertDocumentRejects(
            try increment("/a/b/c"), on: #"{"a":{"b":2}}"#,
            reason: "cannot increment /a/b/c: /a/b is a number, not an object or array")
    }
}
