import ReactorJSON
import XCTest

/// One depth limit for what is parsed and what a patch may build, and a depth count that stays
/// bounded however deep the value it is asked about.
final class JSONLimitsTests: XCTestCase {
    /// `levels` arrays around `innermost`, built without recursion.
    static func nested(_ levels: Int, around innermost: JSON = 1) -> JSON {
        var value = innermost
        for _ in 0..<levels { value = [value] }
        return value
    }

    func testNestingDepthCountsContainers() {
        XCTAssertEqual(JSON.integer(1).nestingDepth(), 0)
        XCTAssertEqual(JSON.array([]).nestingDepth(), 1)
        XCTAssertEqual(JSON.object([:]).nestingDepth(), 1)
        XCTAssertEqual(try JSON(parsing: #"[{"a":[]}, 2]"#).nestingDepth(), 3)
        XCTAssertEqual(try JSON(parsing: #"{"a":1,"b":{"c":{"d":[1]}},"e":[]}"#).nestingDepth(), 4)
    }

    func testNestingDepthStopsCountingPastItsLimit() {
        let deep = Self.nested(5_000)
        XCTAssertEqual(deep.nestingDepth(upTo: 512), 513)
        XCTAssertEqual(deep.nestingDepth(upTo: 0), 1)
        XCTAssertEqual(Self.nested(512).nestingDepth(), 512)
        XCTAssertEqual(Self.nested(513).nestingDepth(), 513)
        XCTAssertEqual(Self.nested(5_000).nestingDepth(upTo: 10_000), 5_000)
    }

    func testTheParserRefusesNestingPastTheLimitAsTooDeep() {
        let text = String(repeating: "[", count: JSON.maximumDepth + 1) + String(repeating: "]", count: JSON.maximumDepth + 1)
        XCTAssertThrowsError(try JSON(parsing: text)) { error in
            XCTAssertEqual((error as? JSONParseError)?.kind, .tooDeep)
        }
        XCTAssertThrowsError(try JSON(parsing: "{")) { error in
            XCTAssertEqual((error as? JSONParseError)?.kind, .syntax)
        }
    }

    func testAPatchMayBuildADocumentUpToTheLimitAndNotPast() throws {
        let atLimit = JSONPointer(tokens: Array(repeating: "a", count: JSON.maximumDepth))
        // 512 objects, one inside the other, around a number: as deep as a document may be.
        var document = JSON.integer(1)
        for _ in 0..<JSON.maximumDepth { document = ["a": document] }
        try document.apply(patch: [.replace(path: atLimit, value: 2)])
        XCTAssertEqual(document[atLimit], 2)

        let before = document
        let parentOfLast = JSONPointer(tokens: Array(repeating: "a", count: JSON.maximumDepth - 1))
        XCTAssertThrowsError(try document.apply(patch: [.add(path: parentOfLast.appending("b"), value: [1])])) { error in
            XCTAssertEqual((error as? JSONPatchError)?.kind, .tooDeep)
        }
        XCTAssertThrowsError(try document.apply(patch: [.add(path: JSONPointer(tokens: Array(repeating: "x", count: 30_000)), value: 1)])) { error in
            XCTAssertEqual((error as? JSONPatchError)?.kind, .tooDeep)
        }
        XCTAssertEqual(document, before)
    }

    func testCopyAndMoveDeeperThanTheLimitAreRefusedAndUndone() throws {
        // {"x": <500 levels>, "y": {}}: copying x under y/z/... past the limit fails atomically.
        var document: JSON = ["x": Self.nested(500), "y": [:]]
        let before = document
        let operations: [JSONPatchOperation] = [
            .add(path: try JSONPointer("/y/first"), value: 1),
            .copy(from: try JSONPointer("/x"), path: try JSONPointer("/y/deep")),
        ]
        // 2 path levels + 500 = 502: within the limit.
        try document.apply(patch: operations)
        XCTAssertEqual(document["y"]?["deep"], before["x"])
        var deepTarget: JSON = ["x": Self.nested(500), "y": Self.nested(20, around: [:])]
        let target = try JSONPointer("/y" + String(repeating: "/0", count: 20) + "/copy")
        XCTAssertThrowsError(try deepTarget.apply(patch: [.add(path: try JSONPointer("/y/-"), value: 1), .copy(from: try JSONPointer("/x"), path: target)])) { error in
            XCTAssertEqual((error as? JSONPatchError)?.kind, .tooDeep)
            XCTAssertEqual((error as? JSONPatchError)?.index, 1)
        }
        XCTAssertEqual(deepTarget, ["x": Self.nested(500), "y": Self.nested(20, around: [:])])
        XCTAssertThrowsError(try deepTarget.apply(patch: [.move(from: try JSONPointer("/x"), path: target)])) { error in
            XCTAssertEqual((error as? JSONPatchError)?.kind, .tooDeep)
        }
        XCTAssertEqual(deepTarget, ["x": Self.nested(500), "y": Self.nested(20, around: [:])])
        // Moving a deep value up is never a problem and is not walked.
        try deepTarget.apply(patch: [.move(from: try JSONPointer("/y/0"), path: try JSONPointer("/z"))])
        XCTAssertEqual(deepTarget["z"], Self.nested(19, around: [:]))
    }
}
