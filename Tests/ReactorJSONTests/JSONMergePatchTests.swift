@testable import ReactorJSON
import XCTest

final class JSONMergePatchTests: XCTestCase {
    /// RFC 7386 Appendix A, every row: original, patch, result.
    func testRFC7386AppendixA() throws {
        let examples: [(String, String, String)] = [
            (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
            (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
            (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
            (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
            (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
            (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
            (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
            (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
            (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
            (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
            (#"{"a":"foo"}"#, #"null"#, #"null"#),
            (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
            (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
            (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
            (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
        ]
        for (original, patch, expected) in examples {
            let result = JSONMergePatch.applying(try parsedJSON(patch), to: try parsedJSON(original))
            XCTAssertEqual(result, try parsedJSON(expected), "\(original) + \(patch)")
        }
    }

    func testKeepsMemberOrderAndAppendsNewMembers() throws {
        var document = try parsedJSON(#"{"z":1,"a":{"y":1,"x":2},"m":3}"#)
        document.apply(mergePatch: try parsedJSON(#"{"a":{"x":20,"w":0},"n":4,"m":null}"#))
        XCTAssertEqual(document.jsonString, #"{"z":1,"a":{"y":1,"x":20,"w":0},"n":4}"#)
    }

    func testMergesUniquelyHeldObjectsInPlace() throws {
        var document: JSON = ["state": ["list": [1, 2], "n": 0, "nested": ["m": 0]]]
        func valueBuffers() -> [UnsafeRawPointer?] {
            [document["state"]?.objectValue?.values.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) },
             document["state"]?["nested"]?.objectValue?.values.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }]
        }
        document.apply(mergePatch: ["state": ["n": 1]])
        let before = valueBuffers()
        document.apply(mergePatch: ["state": ["n": 2, "nested": ["m": 3]]])
        XCTAssertEqual(valueBuffers(), before, "changing existing members must not copy their objects")
        XCTAssertEqual(document, ["state": ["list": [1, 2], "n": 2, "nested": ["m": 3]]])
    }

    func testDoesNotAffectOtherCopies() throws {
        let original = try parsedJSON(#"{"a":{"b":1}}"#)
        var document = original
        document.apply(mergePatch: try parsedJSON(#"{"a":{"b":2}}"#))
        XCTAssertEqual(original, ["a": ["b": 1]])
        XCTAssertEqual(document, ["a": ["b": 2]])
    }
}
