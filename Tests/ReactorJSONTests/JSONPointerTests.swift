@testable import ReactorJSON
import XCTest

final class JSONPointerTests: XCTestCase {
    /// The sample document of RFC 6901 section 5.
    private func rfcDocument() throws -> JSON {
        try parsedJSON(#"""
        {
           "foo": ["bar", "baz"],
           "": 0,
           "a/b": 1,
           "c%d": 2,
           "e^f": 3,
           "g|h": 4,
           "i\\j": 5,
           "k\"l": 6,
           " ": 7,
           "m~n": 8
        }
        """#)
    }

    func testRFC6901Section5Examples() throws {
        let document = try rfcDocument()
        let examples: [(String, JSON)] = [
            ("", document),
            ("/foo", ["bar", "baz"]),
            ("/foo/0", "bar"),
            ("/", 0),
            ("/a~1b", 1),
            ("/c%d", 2),
            ("/e^f", 3),
            ("/g|h", 4),
            ("/i\\j", 5),
            ("/k\"l", 6),
            ("/ ", 7),
            ("/m~0n", 8),
        ]
        for (text, expected) in examples {
            let pointer = try JSONPointer(text)
            XCTAssertEqual(document[pointer], expected, "pointer \(text.debugDescription)")
        }
    }

    func testParsesTokensWithUnescaping() throws {
        XCTAssertEqual(try JSONPointer("").tokens, [])
        XCTAssertEqual(try JSONPointer("/").tokens, [""])
        XCTAssertEqual(try JSONPointer("//").tokens, ["", ""])
        XCTAssertEqual(try JSONPointer("/a~1b/~0c").tokens, ["a/b", "~c"])
        // "~01" is "~" followed by "1", not "/": ~0 is decoded after ~1.
        XCTAssertEqual(try JSONPointer("/~01").tokens, ["~1"])
        XCTAssertEqual(try JSONPointer("/é/😀").tokens, ["é", "😀"])
    }

    func testRendersWithEscaping() throws {
        let pointer = JSONPointer(tokens: ["a/b", "~c", "", "~1", "~\u{301}"])
        XCTAssertEqual(pointer.string, "/a~1b/~0c//~01/~0\u{301}")
        XCTAssertEqual(try JSONPointer(pointer.string), pointer)
        XCTAssertEqual(JSONPointer.root.string, "")
        XCTAssertEqual("\(try JSONPointer("/x/0"))", "/x/0")
    }

    func testRejectsPointerNotStartingWithSlash() {
        XCTAssertThrowsError(try JSONPointer("foo/bar")) { error in
            XCTAssertEqual("\(error)", #"JSON pointer "foo/bar" must be empty or start with '/'"#)
        }
        XCTAssertThrowsError(try JSONPointer("#/foo"))
    }

    func testRejectsInvalidTildeEscapes() {
        for text in ["/a~2", "/a~", "/~/b", "/~a"] {
            XCTAssertThrowsError(try JSONPointer(text), text) { error in
                XCTAssertEqual(
                    (error as? JSONPointerError)?.message,
                    "JSON pointer \"\(text)\" has an invalid escape: '~' must be followed by '0' or '1'")
            }
        }
    }

    func testArrayIndexRules() {
        XCTAssertEqual(JSONPointer.arrayIndex(from: "0"), 0)
        XCTAssertEqual(JSONPointer.arrayIndex(from: "10"), 10)
        XCTAssertNil(JSONPointer.arrayIndex(from: "01"))
        XCTAssertNil(JSONPointer.arrayIndex(from: "00"))
        XCTAssertNil(JSONPointer.arrayIndex(from: "-"))
        XCTAssertNil(JSONPointer.arrayIndex(from: "-1"))
        XCTAssertNil(JSONPointer.arrayIndex(from: "+1"))
        XCTAssertNil(JSONPointer.arrayIndex(from: "1a"))
        XCTAssertNil(JSONPointer.arrayIndex(from: ""))
        XCTAssertNil(JSONPointer.arrayIndex(from: "99999999999999999999999"))
    }

    func testEvaluationFailures() throws {
        let document = try parsedJSON(#"{"a":[10,20],"s":"text"}"#)
        XCTAssertEqual(document[try JSONPointer("/a/1")], 20)
        XCTAssertNil(document[try JSONPointer("/a/2")], "out of bounds")
        XCTAssertNil(document[try JSONPointer("/a/-")], "'-' designates no element")
        XCTAssertNil(document[try JSONPointer("/a/01")], "leading zero")
        XCTAssertNil(document[try JSONPointer("/s/0")], "strings are not indexable")
        XCTAssertNil(document[try JSONPointer("/missing")])
        XCTAssertNil(document[try JSONPointer("/a/x")])
    }

    func testNumericTokensAreKeysOnObjects() throws {
        let document = try parsedJSON(#"{"0":"zero","01":"one"}"#)
        XCTAssertEqual(document[try JSONPointer("/0")], "zero")
        XCTAssertEqual(document[try JSONPointer("/01")], "one")
    }

    func testNavigationHelpers() throws {
        let pointer = try JSONPointer("/a/b")
        XCTAssertEqual(pointer.parent, try JSONPointer("/a"))
        XCTAssertEqual(pointer.lastToken, "b")
        XCTAssertNil(JSONPointer.root.parent)
        XCTAssertTrue(JSONPointer.root.isRoot)
        XCTAssertEqual(pointer.appending("c/d").string, "/a/b/c~1d")
        XCTAssertEqual(pointer.appending(index: 3).string, "/a/b/3")
        XCTAssertTrue(try JSONPointer("/a").isProperPrefix(of: pointer))
        XCTAssertTrue(JSONPointer.root.isProperPrefix(of: pointer))
        XCTAssertFalse(pointer.isProperPrefix(of: pointer))
        XCTAssertFalse(try JSONPointer("/a/b/c").isProperPrefix(of: pointer))
        XCTAssertFalse(try JSONPointer("/a/bc").isProperPrefix(of: try JSONPointer("/a/b/c")))
    }
}
