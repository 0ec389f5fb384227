@testable import ReactorJSON
import XCTest

final class JSONPatchTests: XCTestCase {
    private func pointer(_ text: String) throws -> JSONPointer {
        try JSONPointer(text)
    }

    // MARK: Decoding

    func testDecodesEveryOperation() throws {
        let patch = try parsedJSON(#"""
        [
          {"op":"add","path":"/a","value":1},
          {"op":"remove","path":"/b"},
          {"op":"replace","path":"/c","value":null},
          {"op":"move","from":"/d","path":"/e"},
          {"op":"copy","from":"/f","path":"/g"},
          {"op":"test","path":"/h","value":[1]}
        ]
        """#)
        let operations = try JSONPatch.operations(from: patch)
        XCTAssertEqual(operations, [
            .add(path: try pointer("/a"), value: 1),
            .remove(path: try pointer("/b")),
            .replace(path: try pointer("/c"), value: nil),
            .move(from: try pointer("/d"), path: try pointer("/e")),
            .copy(from: try pointer("/f"), path: try pointer("/g")),
            .test(path: try pointer("/h"), value: [1]),
        ])
        XCTAssertEqual(operations.map(\.name), ["add", "remove", "replace", "move", "copy", "test"])
        XCTAssertEqual(operations.map(\.path.string), ["/a", "/b", "/c", "/e", "/g", "/h"])
    }

    func testDecodingErrorsArePrecise() throws {
        let cases: [(String, JSONPatchError.Kind, String)] = [
            (#"{"op":"add"}"#, .invalidOperation, "a JSON Patch must be an array of operations, found object"),
            (#"[1]"#, .invalidOperation, "operation 0: an operation must be an object, found number"),
            (#"[{"path":"/a"}]"#, .invalidOperation, #"operation 0: operation is missing "op""#),
            (#"[{"op":1,"path":"/a"}]"#, .invalidOperation, #"operation 0: "op" must be a string, found number"#),
            (#"[{"op":"frobnicate","path":"/a"}]"#, .invalidOperation, #"operation 0: unknown op "frobnicate""#),
            (#"[{"op":"test","path":"/a","value":1},{"op":"add","value":1}]"#, .invalidOperation, #"operation 1: "add" operation is missing "path""#),
            (#"[{"op":"add","path":"/a"}]"#, .invalidOperation, #"operation 0: "add" operation is missing "value""#),
            (#"[{"op":"replace","path":"/a"}]"#, .invalidOperation, #"operation 0: "replace" operation is missing "value""#),
            (#"[{"op":"test","path":"/a"}]"#, .invalidOperation, #"operation 0: "test" operation is missing "value""#),
            (#"[{"op":"move","path":"/a"}]"#, .invalidOperation, #"operation 0: "move" operation is missing "from""#),
            (#"[{"op":"copy","path":"/a"}]"#, .invalidOperation, #"operation 0: "copy" operation is missing "from""#),
            (#"[{"op":"remove","path":5}]"#, .invalidOperation, #"operation 0: "path" must be a string, found number"#),
            (#"[{"op":"remove","path":"a/b"}]"#, .invalidOperation, #"operation 0: "path" is not a valid JSON pointer: JSON pointer "a/b" must be empty or start with '/'"#),
            (#"[{"op":"copy","from":"/a~2","path":"/b"}]"#, .invalidOperation, #"operation 0: "from" is not a valid JSON pointer: JSON pointer "/a~2" has an invalid escape: '~' must be followed by '0' or '1'"#),
            (#"[{"op":"move","from":"/a","path":"/a/b"}]"#, .moveIntoOwnChild, "operation 0: cannot move /a into its own child /a/b"),
            (#"[{"op":"move","from":"","path":"/a"}]"#, .moveIntoOwnChild, #"operation 0: cannot move "" (the whole document) into its own child /a"#),
        ]
        for (text, kind, description) in cases {
            XCTAssertThrowsError(try JSONPatch.operations(from: try parsedJSON(text)), text) { error in
                let patchError = error as? JSONPatchError
                XCTAssertEqual(patchError?.kind, kind, text)
                XCTAssertEqual(patchError?.description, description, text)
            }
        }
    }

    func testNullValueIsAValueNotAMissingOne() throws {
        let operations = try JSONPatch.operations(from: try parsedJSON(#"[{"op":"add","path":"/a","value":null}]"#))
        XCTAssertEqual(operations, [.add(path: try pointer("/a"), value: .null)])
    }

    func testMoveToASiblingWithACommonPrefixIsAllowed() throws {
        let operations = try JSONPatch.operations(from: try parsedJSON(#"[{"op":"move","from":"/a","path":"/ab"}]"#))
        var document = try parsedJSON(#"{"a":1}"#)
        try JSONPatch.apply(operations, to: &document)
        XCTAssertEqual(document, ["ab": 1])
    }

    // MARK: Encoding

    func testEncodesOperationsInRFCForm() throws {
        let operations: [JSONPatchOperation] = [
            .add(path: try pointer("/a~1b"), value: ["x": 1]),
            .remove(path: try pointer("/c")),
            .move(from: try pointer("/d"), path: try pointer("/e")),
            .test(path: .root, value: nil),
        ]
        XCTAssertEqual(
            operations.json.jsonString,
            #"[{"op":"add","path":"/a~1b","value":{"x":1}},{"op":"remove","path":"/c"},{"op":"move","from":"/d","path":"/e"},{"op":"test","path":"","value":null}]"#)
        XCTAssertEqual(try JSONPatch.operations(from: operations.json), operations)
    }

    // MARK: Applying

    func testAddReplacesAnExistingMemberInPlace() throws {
        var document = try parsedJSON(#"{"a":1,"b":2}"#)
        try document.apply(patch: [.add(path: try pointer("/a"), value: 3)])
        XCTAssertEqual(document.jsonString, #"{"a":3,"b":2}"#)
    }

    func testAddAtRootReplacesTheDocument() throws {
        var document = try parsedJSON(#"{"a":1}"#)
        try document.apply(patch: [.add(path: .root, value: [1, 2])])
        XCTAssertEqual(document, [1, 2])
    }

    func testAddAtArrayEnd() throws {
        var document = try parsedJSON(#"[1,2]"#)
        try document.apply(patch: [
            .add(path: try pointer("/2"), value: 3),
            .add(path: try pointer("/-"), value: 4),
            .add(path: try pointer("/0"), value: 0),
        ])
        XCTAssertEqual(document, [0, 1, 2, 3, 4])
    }

    func testReplaceAndRemoveAtVariousDepths() throws {
        var document = try parsedJSON(#"{"a":{"b":[{"c":1},{"c":2}]}}"#)
        try document.apply(patch: [
            .replace(path: try pointer("/a/b/1/c"), value: "two"),
            .remove(path: try pointer("/a/b/0")),
            .replace(path: .root, value: ["wrapped": document]),
        ])
        XCTAssertEqual(document, ["wrapped": ["a": ["b": [["c": 1], ["c": 2]]]]],
                       "the root replacement captured the value before the patch")
    }

    func testCopyDuplicatesAValue() throws {
        var document = try parsedJSON(#"{"a":{"x":[1]},"b":{}}"#)
        try document.apply(patch: [
            .copy(from: try pointer("/a"), path: try pointer("/b/copy")),
            .add(path: try pointer("/a/x/-"), value: 2),
        ])
        XCTAssertEqual(document, try parsedJSON(#"{"a":{"x":[1,2]},"b":{"copy":{"x":[1]}}}"#))
    }

    func testMoveOntoItselfIsANoOpButNeedsAnExistingLocation() throws {
        var document = try parsedJSON(#"{"a":1}"#)
        try document.apply(patch: [.move(from: try pointer("/a"), path: try pointer("/a"))])
        XCTAssertEqual(document, ["a": 1])
        let error = expectPatchFailure([.move(from: try pointer("/b"), path: try pointer("/b"))], on: document)
        XCTAssertEqual(error?.reason, "from /b does not exist")
    }

    func testMoveIntoOwnChildFailsWhenConstructedDirectly() throws {
        let document = try parsedJSON(#"{"a":{"b":1}}"#)
        let error = expectPatchFailure([.move(from: try pointer("/a"), path: try pointer("/a/b/c"))], on: document)
        XCTAssertEqual(error?.kind, .moveIntoOwnChild)
        XCTAssertEqual(error?.reason, "cannot move /a into its own child /a/b/c")
    }

    func testTestComparesNumbersByValueAndObjectsIgnoringOrder() throws {
        var document = try parsedJSON(#"{"n":1,"o":{"x":1,"y":2},"a":[1,2]}"#)
        try document.apply(patch: [
            .test(path: try pointer("/n"), value: 1.0),
            .test(path: try pointer("/o"), value: ["y": 2, "x": 1]),
            .test(path: try pointer("/a"), value: [1, 2]),
            .test(path: .root, value: ["a": [1, 2], "o": ["y": 2, "x": 1], "n": 1]),
        ])
        XCTAssertNotNil(expectPatchFailure([.test(path: try pointer("/a"), value: [2, 1])], on: document))
        XCTAssertNotNil(expectPatchFailure([.test(path: try pointer("/n"), value: true)], on: document))
    }

    func testFailureReasons() throws {
        let document = try parsedJSON(#"{"a":{"b":1},"arr":[1,2,3],"s":"x","version":4}"#)
        let cases: [(JSONPatchOperation, JSONPatchError.Kind, String)] = [
            (.remove(path: try pointer("/a/c")), .pathNotFound, "path /a/c does not exist"),
            (.replace(path: try pointer("/a/c"), value: 1), .pathNotFound, "path /a/c does not exist"),
            (.replace(path: try pointer("/x/y"), value: 1), .pathNotFound, "path /x/y does not exist"),
            (.remove(path: try pointer("/s/0")), .pathNotFound, "path /s/0 does not exist: /s is a string"),
            (.replace(path: try pointer("/a/b/c"), value: 1), .pathNotFound, "path /a/b/c does not exist: /a/b is a number"),
            (.add(path: try pointer("/s/k"), value: 1), .pathNotFound, "cannot add at /s/k: /s is a string, not an object or array"),
            (.add(path: try pointer("/arr/5"), value: 1), .invalidArrayIndex, "cannot add at /arr/5: index 5 is out of bounds for an array of 3 elements"),
            (.add(path: try pointer("/arr/01"), value: 1), .invalidArrayIndex, #"/arr/01: "01" is not a valid array index"#),
            (.remove(path: try pointer("/arr/3")), .invalidArrayIndex, "path /arr/3 does not exist: index 3 is out of bounds for an array of 3 elements"),
            (.remove(path: try pointer("/arr/-")), .invalidArrayIndex, #"path /arr/-: "-" designates no existing element"#),
            (.replace(path: try pointer("/arr/x"), value: 1), .invalidArrayIndex, #"/arr/x: "x" is not a valid array index"#),
            (.copy(from: try pointer("/nope"), path: try pointer("/b")), .pathNotFound, "from /nope does not exist"),
            (.move(from: try pointer("/nope"), path: try pointer("/b")), .pathNotFound, "from /nope does not exist"),
            (.remove(path: .root), .cannotRemoveRoot, "cannot remove the whole document"),
            (.test(path: try pointer("/version"), value: 3), .testFailed, "test failed at /version: expected 3, found 4"),
            (.test(path: try pointer("/gone"), value: 3), .pathNotFound, "path /gone does not exist"),
            (.test(path: .root, value: 3), .testFailed, #"test failed at "" (the whole document): expected 3, found {"a":{"b":1},"arr":[1,2,3],"s":"x","version":4}"#),
        ]
        for (operation, kind, reason) in cases {
            let error = expectPatchFailure([operation], on: document)
            XCTAssertEqual(error?.kind, kind, reason)
            XCTAssertEqual(error?.reason, reason)
            XCTAssertEqual(error?.index, 0)
        }
    }

    func testLongValuesAreAbbreviatedInReasons() throws {
        let long = JSON.string(String(repeating: "x", count: 500))
        let error = expectPatchFailure([.test(path: try pointer("/v"), value: long)], on: ["v": 1])
        let reason = try XCTUnwrap(error?.reason)
        XCTAssertLessThan(reason.count, 200)
        XCTAssertTrue(reason.contains("…"))
    }

    // MARK: Atomicity and value semantics

    func testFailingPatchLeavesTheDocumentUnchanged() throws {
        let original = try parsedJSON(#"{"a":{"b":[1,2,3]},"c":"d"}"#)
        var document = original
        XCTAssertThrowsError(try JSONPatch.apply([
            .add(path: try pointer("/a/b/-"), value: 4),
            .remove(path: try pointer("/c")),
            .replace(path: try pointer("/a/b/0"), value: "changed"),
            .test(path: try pointer("/c"), value: "d"),
        ], to: &document)) { error in
            XCTAssertEqual((error as? JSONPatchError)?.index, 3)
            XCTAssertEqual("\(error)", "operation 3: path /c does not exist")
        }
        XCTAssertEqual(document.jsonBytes, original.jsonBytes)
    }

    func testSingleMoveWhoseAddFailsLeavesTheDocumentUnchanged() throws {
        // The removal succeeds before the add fails, so the removal has to be
        // undone even though the move is the last operation.
        let document = try parsedJSON(#"{"a":1,"b":{}}"#)
        let error = expectPatchFailure([.move(from: try pointer("/a"), path: try pointer("/missing/x"))], on: document)
        XCTAssertEqual(error?.reason, "path /missing/x does not exist")
        let second = expectPatchFailure([.move(from: try pointer("/a"), path: try pointer("/b/x/y"))], on: document)
        XCTAssertEqual(second?.kind, .pathNotFound)
    }

    func testPatchingDoesNotAffectOtherCopies() throws {
        let original = try parsedJSON(#"{"a":{"b":[1,{"c":2}]},"z":[0]}"#)
        var document = original
        let snapshot = document
        try document.apply(patch: [
            .replace(path: try pointer("/a/b/1/c"), value: 3),
            .add(path: try pointer("/z/-"), value: 1),
            .move(from: try pointer("/a/b/0"), path: try pointer("/moved")),
        ])
        XCTAssertEqual(snapshot.jsonString, #"{"a":{"b":[1,{"c":2}]},"z":[0]}"#)
        XCTAssertEqual(original, snapshot)
        XCTAssertEqual(document.jsonString, #"{"a":{"b":[{"c":3}]},"z":[0,1],"moved":1}"#)
    }

    func testPatchesMutateUniquelyHeldContainersInPlace() throws {
        // A patch must not copy the containers it walks through when the
        // document is the only owner; buffer addresses reveal any copy.
        // Built at run time: an optimised build makes a literal array a static, immortal object,
        // which the first mutation has to copy.
        var document: JSON = ["list": .array((0..<1_000).map { .integer(Int64($0)) }), "map": ["k": .array((1...3).map { .integer(Int64($0)) })]]
        func listBuffer() -> UnsafeRawPointer? {
            document["list"]?.arrayValue?.withUnsafeBytes { $0.baseAddress }
        }
        func innerBuffer() -> UnsafeRawPointer? {
            document["map"]?["k"]?.arrayValue?.withUnsafeBytes { $0.baseAddress }
        }
        let list = listBuffer()
        let inner = innerBuffer()
        try document.apply(patch: [.replace(path: try pointer("/list/5"), value: "five")])
        try document.apply(patch: [
            .replace(path: try pointer("/list/6"), value: "six"),
            .remove(path: try pointer("/list/7")),
            .replace(path: try pointer("/map/k/1"), value: 20),
        ])
        XCTAssertEqual(listBuffer(), list)
        XCTAssertEqual(innerBuffer(), inner)
        // A rolled-back patch is undone in place too.
        XCTAssertThrowsError(try document.apply(patch: [
            .replace(path: try pointer("/list/8"), value: "eight"),
            .test(path: try pointer("/map/k/1"), value: 2),
        ]))
        XCTAssertEqual(listBuffer(), list)
        XCTAssertEqual(document["list"]?[5], "five")
        XCTAssertEqual(document["list"]?[7], 8)
        XCTAssertEqual(document["list"]?[8], 9)
    }

    func testApplyingReturnsANewDocument() throws {
        let document = try parsedJSON(#"{"n":1}"#)
        let patched = try JSONPatch.applying([.replace(path: try pointer("/n"), value: 2)], to: document)
        XCTAssertEqual(patched, ["n": 2])
        XCTAssertEqual(document, ["n": 1])
    }

    func testManyOperationsOnALargeDocument() throws {
        // Exercises the in-place path: thousands of appends to one array.
        var document: JSON = ["items": []]
        let operations = (0..<5_000).map { index in
            JSONPatchOperation.add(path: JSONPointer(tokens: ["items", "-"]), value: .integer(Int64(index)))
        }
        try document.apply(patch: operations)
        XCTAssertEqual(document["items"]?.arrayValue?.count, 5_000)
        XCTAssertEqual(document["items"]?[4_999], 4_999)
    }

    // MARK: Diff

    func testDiffOfTheSameDocumentsInAnotherMemberOrderIsEmpty() throws {
        let a = try parsedJSON(#"{"x":[1,{"y":2}],"z":1}"#)
        let b = try parsedJSON(#"{"z":1,"x":[1,{"y":2}]}"#)
        XCTAssertEqual(JSONPatch.diff(from: a, to: b), [])
        // An equal value spelled otherwise is a change: what a client holds would read otherwise.
        XCTAssertEqual(JSONPatch.diff(from: a, to: try parsedJSON(#"{"z":1.0,"x":[1,{"y":2}]}"#)), [.replace(path: try pointer("/z"), value: 1.0)])
    }

    func testDiffOfOneDeepChangeIsOneReplace() throws {
        let a = try parsedJSON(#"{"users":[{"name":"a","age":1},{"name":"b","age":2}],"v":1}"#)
        let b = try parsedJSON(#"{"users":[{"name":"a","age":1},{"name":"b","age":3}],"v":1}"#)
        XCTAssertEqual(JSONPatch.diff(from: a, to: b), [.replace(path: try pointer("/users/1/age"), value: 3)])
    }

    func testDiffOfObjectMembers() throws {
        let a = try parsedJSON(#"{"keep":1,"drop":2,"a/b":{"~":1}}"#)
        let b = try parsedJSON(#"{"keep":1,"new":3,"a/b":{"~":2}}"#)
        XCTAssertEqual(JSONPatch.diff(from: a, to: b), [
            .remove(path: try pointer("/drop")),
            .add(path: try pointer("/new"), value: 3),
            .replace(path: try pointer("/a~1b/~0"), value: 2),
        ])
    }

    func testDiffReplacesObjectsWithNoCommonKeysWhole() throws {
        let a = try parsedJSON(#"{"o":{"a":1,"b":2}}"#)
        let b = try parsedJSON(#"{"o":{"c":3,"d":4}}"#)
        XCTAssertEqual(JSONPatch.diff(from: a, to: b), [.replace(path: try pointer("/o"), value: ["c": 3, "d": 4])])
    }

    func testDiffOfArrayInsertionInTheMiddleIsOneAdd() throws {
        let a = try parsedJSON("[1,2,3,4]")
        let b = try parsedJSON("[1,2,9,3,4]")
        XCTAssertEqual(JSONPatch.diff(from: a, to: b), [.add(path: try pointer("/2"), value: 9)])
    }

    func testDiffOfArrayRemovalsGoesFromTheHighestIndex() throws {
        let a = try parsedJSON("[0,1,2,3,4,5]")
        let b = try parsedJSON("[0,5]")
        XCTAssertEqual(JSONPatch.diff(from: a, to: b), [
            .remove(path: try pointer("/4")),
            .remove(path: try pointer("/3")),
            .remove(path: try pointer("/2")),
            .remove(path: try pointer("/1")),
        ])
    }

    func testDiffAcrossTypesReplaces() throws {
        XCTAssertEqual(JSONPatch.diff(from: [1], to: ["a": 1]), [.replace(path: .root, value: ["a": 1])])
        XCTAssertEqual(JSONPatch.diff(from: "1", to: 1), [.replace(path: .root, value: 1)])
        XCTAssertEqual(JSONPatch.diff(from: 1, to: 1.5), [.replace(path: .root, value: 1.5)])
    }

    func testDiffAppliesToGiveTheTarget() throws {
        let a = try parsedJSON(#"{"list":[1,2,3,{"k":"v"}],"gone":true,"same":"s"}"#)
        let b = try parsedJSON(#"{"list":[0,2,{"k":"w"},5,6],"same":"s","added":{"x":[]}}"#)
        let patch = JSONPatch.diff(from: a, to: b)
        XCTAssertEqual(try JSONPatch.applying(patch, to: a), b)
    }
}

/// Diffing successive states of a wide object: when only values changed, the keys' storage is
/// shared and the diff compares values by position; the result is the same patch either way.
final class JSONDiffOfWideObjectsTests: XCTestCase {
    private func wide(_ count: Int) -> JSON {
        var members = JSON.Object()
        for index in 0..<count { members["k\(index)"] = .integer(Int64(index)) }
        members["nested"] = ["a": [1, 2, 3], "b": "text"]
        return .object(members)
    }

    func testAChangedValueIsOneReplaceWhenTheKeysAreShared() throws {
        let before = wide(2000)
        var after = before
        try after.apply(patch: [.replace(path: JSONPointer("/k1234"), value: 7)])
        guard case .object(let old) = before, case .object(let new) = after else { return XCTFail() }
        XCTAssertTrue(old.keys.sharesStorage(with: new.keys), "replacing a value leaves the keys shared")
        XCTAssertEqual(JSONPatch.diff(from: before, to: after), [.replace(path: try JSONPointer("/k1234"), value: 7)])
    }

    func testNestedChangesAndKeyChangesStillDiffCorrectly() throws {
        let before = wide(500)
        let patches: [[JSONPatchOperation]] = [
            [.add(path: try JSONPointer("/nested/a/-"), value: 4)],
            [.replace(path: try JSONPointer("/nested/b"), value: "other"), .replace(path: try JSONPointer("/k3"), value: "three")],
            [.add(path: try JSONPointer("/new"), value: true)],
            [.remove(path: try JSONPointer("/k10"))],
        ]
        for patch in patches {
            var after = before
            try after.apply(patch: patch)
            let diff = JSONPatch.diff(from: before, to: after)
            var rebuilt = before
            try rebuilt.apply(patch: diff)
            XCTAssertEqual(rebuilt, after, "\(patch)")
            XCTAssertLessThanOrEqual(diff.count, 2, "a small change is a small patch: \(diff)")
        }
    }
}

final class JSONPatchCopyLimitTests: XCTestCase {
    private func pointer(_ text: String) throws -> JSONPointer { try JSONPointer(text) }

    func testEncodedSizeIsTheCompactTextsAndStopsJustPastTheLimit() throws {
        for text in [#"{"a":[1,true,null,"xy"],"b":{}}"#, #"[0,-7,9223372036854775807,-9223372036854775808,"q\"\\",[],{}]"#] {
            XCTAssertEqual(try JSON(parsing: Array(text.utf8)).encodedSize(upTo: .max), text.utf8.count, text)
        }
        XCTAssertEqual(JSON.string("\u{1}").encodedSize(upTo: .max), #""\u0001""#.utf8.count)
        XCTAssertEqual(JSON.array(Array(repeating: .integer(0), count: 12_000)).encodedSize(upTo: .max), 24_001)
        // A value that doubles at each of 60 levels: far more text than could be walked.
        var doubled: JSON = "x"
        for _ in 0..<60 { doubled = ["p": doubled, "q": doubled] }
        XCTAssertGreaterThan(doubled.encodedSize(upTo: 1_000), 1_000)
        XCTAssertLessThan(doubled.encodedSize(upTo: 1_000), 1_100)
    }

    /// Each level copies the one before twice: 2^levels copies of the first value from a patch of
    /// 3 operations a level.
    private func doublingPatch(levels: Int) throws -> [JSONPatchOperation] {
        var operations: [JSONPatchOperation] = [.add(path: try pointer("/t0"), value: .string(String(repeating: "x", count: 100)))]
        for level in 1...levels {
            operations.append(.add(path: try pointer("/t\(level)"), value: [:]))
            operations.append(.copy(from: try pointer("/t\(level - 1)"), path: try pointer("/t\(level)/p")))
            operations.append(.copy(from: try pointer("/t\(level - 1)"), path: try pointer("/t\(level)/q")))
        }
        return operations
    }

    func testCopiesPastTheLimitAreRefusedAndChangeNothing() throws {
        var document: JSON = ["keep": 1]
        XCTAssertThrowsError(try JSONPatch.apply(try doublingPatch(levels: 50), to: &document, copyLimit: 100_000)) { error in
            let error = error as! JSONPatchError
            XCTAssertEqual(error.kind, .copiesTooMuch)
            XCTAssertTrue(error.reason.contains("past 100000 bytes"), error.reason)
        }
        XCTAssertEqual(document, ["keep": 1])
    }

    func testCopiesWithinTheLimitApply() throws {
        var document: JSON = [:]
        try JSONPatch.apply(try doublingPatch(levels: 5), to: &document, copyLimit: 100_000)
        XCTAssertEqual(document["t5"]?["p"]?["q"]?["p"]?["q"]?["p"], .string(String(repeating: "x", count: 100)))
        // Without a limit, as before.
        var unlimited: JSON = [:]
        try JSONPatch.apply(try doublingPatch(levels: 12), to: &unlimited)
        XCTAssertNotNil(unlimited["t12"])
    }
}
