@testable import ReactorJSON
import XCTest

/// Randomized invariants with a fixed seed, so a failure reproduces exactly.
final class JSONPropertyTests: XCTestCase {
    private let iterations = 2_000

    func testDiffThenApplyGivesTheTarget() throws {
        var random = JSONTestRandom(seed: 0x5EED_0001)
        var nonEmptyPatches = 0
        for iteration in 0..<iterations {
            let source = randomValue(depth: 5, using: &random)
            // Half the targets are edits of the source, so the diff has to
            // recurse; the other half are unrelated documents.
            let target = Bool.random(using: &random)
                ? mutated(source, depth: 5, using: &random)
                : randomValue(depth: 5, using: &random)
            let patch = JSONPatch.diff(from: source, to: target)
            if !patch.isEmpty { nonEmptyPatches += 1 }
            let result: JSON
            do {
                result = try JSONPatch.applying(patch, to: source)
            } catch {
                return XCTFail("iteration \(iteration): diff produced a failing patch: \(error)\nsource \(source)\ntarget \(target)\npatch \(patch.json)")
            }
            guard result == target else {
                return XCTFail("iteration \(iteration): apply(diff(a, b), a) != b\nsource \(source)\ntarget \(target)\nresult \(result)\npatch \(patch.json)")
            }
            XCTAssertEqual(JSONPatch.diff(from: result, to: target), [], "iteration \(iteration): the result is spelled as the target")
            XCTAssertEqual(JSONPatch.diff(from: target, to: target), [], "iteration \(iteration)")
            // The patch also survives its own wire format.
            let decoded = try JSONPatch.operations(from: try JSON(parsing: patch.json.jsonBytes))
            XCTAssertEqual(decoded, patch, "iteration \(iteration)")
        }
        XCTAssertGreaterThan(nonEmptyPatches, iterations / 2, "the generator must produce real differences")
    }

    func testSerializeParseRoundTrip() throws {
        var random = JSONTestRandom(seed: 0x5EED_0002)
        for iteration in 0..<iterations {
            let value = randomValue(depth: 5, using: &random)
            let bytes = value.jsonBytes
            let parsed: JSON
            do {
                parsed = try JSON(parsing: bytes)
            } catch {
                return XCTFail("iteration \(iteration): serializer output rejected: \(error)\n\(String(decoding: bytes, as: UTF8.self))")
            }
            XCTAssertEqual(parsed, value, "iteration \(iteration)")
            // Byte equality also checks member order and integer/double kinds.
            XCTAssertEqual(parsed.jsonBytes, bytes, "iteration \(iteration)")
        }
    }

    func testFailedPatchesLeaveTheDocumentUnchanged() throws {
        var random = JSONTestRandom(seed: 0x5EED_0003)
        for iteration in 0..<300 {
            let source: JSON = .object(["root": randomValue(depth: 3, using: &random)])
            let target: JSON = .object(["root": mutated(source["root"]!, depth: 3, using: &random)])
            var operations = JSONPatch.diff(from: source, to: target)
            let failAt = Int.random(in: 0...operations.count, using: &random)
            operations.insert(.remove(path: JSONPointer(tokens: ["no such member"])), at: failAt)
            var document = source
            do {
                try JSONPatch.apply(operations, to: &document)
                XCTFail("iteration \(iteration): the patch should have failed")
            } catch {
                XCTAssertEqual(error.index, failAt, "iteration \(iteration)")
            }
            XCTAssertEqual(document.jsonBytes, source.jsonBytes, "iteration \(iteration)")
        }
    }

    func testFailedPatchesWithEveryOperationRollBackExactly() throws {
        var random = JSONTestRandom(seed: 0x5EED_0005)
        var operationCounts: [String: Int] = [:]
        for iteration in 0..<400 {
            let source: JSON = ["root": randomValue(depth: 3, using: &random), "other": randomObject(depth: 2, using: &random)]
            // Random operations, kept only if they apply in sequence, so
            // everything before the failing one really changes the document.
            var scratch = source
            var operations: [JSONPatchOperation] = []
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let candidate = randomOperation(in: scratch, using: &random)
                if (try? JSONPatch.apply([candidate], to: &scratch)) != nil {
                    operations.append(candidate)
                    operationCounts[candidate.name, default: 0] += 1
                }
            }
            let failAt = Int.random(in: 0...operations.count, using: &random)
            operations.insert(.test(path: JSONPointer(tokens: ["other"]), value: "never this"), at: failAt)
            var document = source
            XCTAssertThrowsError(try JSONPatch.apply(operations, to: &document)) { error in
                XCTAssertEqual((error as? JSONPatchError)?.index, failAt, "iteration \(iteration)")
            }
            XCTAssertEqual(document.jsonString, source.jsonString, "iteration \(iteration): \(operations.json)")
        }
        for name in ["add", "remove", "replace", "move", "copy", "test"] {
            XCTAssertGreaterThan(operationCounts[name, default: 0], 50, "too few successful \(name) operations generated")
        }
    }

    func testMergePatchOfObjectsWithoutNullsIsADeepMerge() {
        var random = JSONTestRandom(seed: 0x5EED_0004)
        for iteration in 0..<300 {
            let target = randomObject(depth: 3, using: &random)
            let patch = withoutNulls(randomObject(depth: 3, using: &random))
            let result = JSONMergePatch.applying(patch, to: target)
            // Every patch member is present in the result as patched ...
            for (key, value) in patch.objectValue ?? [:] {
                if case .object = value, case .object = target[key] ?? .null {
                    continue  // merged recursively; covered by the RFC tests
                }
                XCTAssertEqual(result[key], value, "iteration \(iteration), key \(key)")
            }
            // ... and untouched members survive.
            for (key, value) in target.objectValue ?? [:] where patch[key] == nil {
                XCTAssertEqual(result[key], value, "iteration \(iteration), key \(key)")
            }
        }
    }

    // MARK: Generators

    /// Keys come from a small pool so that documents share members, and
    /// include the characters pointers must escape.
    private let keys = ["a", "b", "c", "id", "", "0", "1", "~", "/", "a/b", "~1", "é", "😀"]

    private let scalars: [Unicode.Scalar] = [
        "a", "b", "Z", "0", " ", "\"", "\\", "/", "~", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{A}",
        "\u{C}", "\u{D}", "\u{1F}", "\u{7F}", "é", "€", "\u{2028}", "\u{FFFF}", "😀", "\u{10FFFF}",
    ]

    private func randomString(using random: inout JSONTestRandom) -> String {
        var text = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...8, using: &random) {
            text.append(scalars.randomElement(using: &random)!)
        }
        return String(text)
    }

    private func randomNumber(using random: inout JSONTestRandom) -> JSON {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return .integer(Int64.random(in: -10...10, using: &random))
        case 1: return .integer(Int64.random(in: .min ... .max, using: &random))
        case 2: return .integer([Int64.min, Int64.max, 0].randomElement(using: &random)!)
        case 3: return .number(Double(Int.random(in: -100_000...100_000, using: &random)) / 100)
        case 4:
            // Any finite bit pattern: subnormals, huge exponents, -0.0.
            while true {
                let value = Double(bitPattern: random.next())
                if value.isFinite { return .number(value) }
            }
        default: return .number([-0.0, 0.5, 1e300, .leastNonzeroMagnitude, 9_007_199_254_740_992].randomElement(using: &random)!)
        }
    }

    private func randomValue(depth: Int, using random: inout JSONTestRandom) -> JSON {
        // Containers are likely above the leaves, so documents have some
        // depth and width rather than being mostly scalars.
        let kinds = depth > 0 ? 10 : 5
        switch Int.random(in: 0..<kinds, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return randomNumber(using: &random)
        case 3, 4: return .string(randomString(using: &random))
        case 5, 6: return .array((0..<Int.random(in: 0...6, using: &random)).map { _ in randomValue(depth: depth - 1, using: &random) })
        default: return randomObject(depth: depth - 1, using: &random)
        }
    }

    private func randomObject(depth: Int, using random: inout JSONTestRandom) -> JSON {
        var members = JSON.Object()
        for _ in 0..<Int.random(in: 0...6, using: &random) {
            members[keys.randomElement(using: &random)!] = randomValue(depth: max(depth, 0), using: &random)
        }
        return .object(members)
    }

    /// A document close to `value`: some members and elements changed,
    /// added or removed, the rest kept.
    private func mutated(_ value: JSON, depth: Int, using random: inout JSONTestRandom) -> JSON {
        if Int.random(in: 0..<10, using: &random) == 0 {
            return randomValue(depth: depth, using: &random)
        }
        switch value {
        case .object(var members):
            for key in members.keys where Int.random(in: 0..<4, using: &random) == 0 {
                members.removeValue(forKey: key)
            }
            for index in members.values.indices where Bool.random(using: &random) {
                members.values[index] = mutated(members.values[index], depth: depth - 1, using: &random)
            }
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                members[keys.randomElement(using: &random)!] = randomValue(depth: max(depth - 1, 0), using: &random)
            }
            return .object(members)
        case .array(var elements):
            for index in elements.indices where Bool.random(using: &random) {
                elements[index] = mutated(elements[index], depth: depth - 1, using: &random)
            }
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                let position = Int.random(in: 0...elements.count, using: &random)
                if Bool.random(using: &random) {
                    elements.insert(randomValue(depth: max(depth - 1, 0), using: &random), at: position)
                } else if position < elements.count {
                    elements.remove(at: position)
                }
            }
            return .array(elements)
        default:
            return Bool.random(using: &random) ? value : randomValue(depth: 0, using: &random)
        }
    }

    private func allPointers(in value: JSON, at pointer: JSONPointer = .root) -> [JSONPointer] {
        var pointers = [pointer]
        switch value {
        case .object(let members):
            for (key, member) in members {
                pointers += allPointers(in: member, at: pointer.appending(key))
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                pointers += allPointers(in: element, at: pointer.appending(index: index))
            }
        default:
            break
        }
        return pointers
    }

    /// An operation aimed at locations that exist in `document` (it may
    /// still be invalid, such as a move into its own child).
    private func randomOperation(in document: JSON, using random: inout JSONTestRandom) -> JSONPatchOperation {
        let pointers = allPointers(in: document)
        // The root is left out as a source, or a replace would soon turn the
        // whole document into a scalar with nothing left to operate on.
        let source = pointers.dropFirst().randomElement(using: &random) ?? .root
        let containers = pointers.filter { document[$0]?.arrayValue != nil || document[$0]?.objectValue != nil }
        guard let parent = containers.randomElement(using: &random) else {
            return .test(path: .root, value: document)
        }
        let target: JSONPointer
        if let elements = document[parent]?.arrayValue {
            let index = Int.random(in: 0...elements.count + 1, using: &random)
            target = index > elements.count ? parent.appending("-") : parent.appending(index: index)
        } else {
            target = parent.appending(keys.randomElement(using: &random)!)
        }
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return .add(path: target, value: randomValue(depth: 1, using: &random))
        case 1: return .remove(path: source)
        case 2: return .replace(path: source, value: randomValue(depth: 1, using: &random))
        case 3: return .move(from: source, path: target)
        case 4: return .copy(from: source, path: target)
        default: return .test(path: source, value: document[source]!)
        }
    }

    private func withoutNulls(_ value: JSON) -> JSON {
        switch value {
        case .object(let members):
            var kept = JSON.Object()
            for (key, member) in members where !member.isNull {
                kept[key] = withoutNulls(member)
            }
            return .object(kept)
        default:
            return value
        }
    }
}
