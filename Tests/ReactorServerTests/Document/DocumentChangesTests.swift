import Reactor
import ReactorServer
import TestSupport
import XCTest

/// `JSONDocument.lastChanges`: what an event did, as subscribers are sent it. Every test of a single
/// event (`assertDocumentEvent`) also checks that its changes replay exactly; these check their shape,
/// and random events on random documents.
final class DocumentChangesTests: XCTestCase {
    private func changes(of event: DocumentEvent, on text: String) throws -> [JSONPatchOperation]? {
        var document = JSONDocument(root: try documentJSON(text))
        try document.apply(event)
        return document.lastChanges
    }

    private func pointer(_ text: String) throws -> JSONPointer { try documentPointer(text) }

    func testEachEventIsAsSmallAsWhatItDid() throws {
        XCTAssertEqual(try changes(of: .increment(path: pointer("/n"), by: 2), on: #"{"n":1,"big":[1,2,3]}"#),
                       [.replace(path: try pointer("/n"), value: 3)])
        XCTAssertEqual(try changes(of: .append(path: pointer("/big"), value: 4), on: #"{"big":[1,2,3]}"#),
                       [.add(path: try pointer("/big/3"), value: 4)])
        XCTAssertEqual(try changes(of: .set(path: pointer("/a/b/c"), value: true), on: #"{"a":{}}"#),
                       [.add(path: try pointer("/a/b"), value: ["c": true])])
        XCTAssertEqual(try changes(of: .set(path: pointer("/list/-"), value: "x"), on: #"{"list":[0]}"#),
                       [.add(path: try pointer("/list/1"), value: "x")])
        XCTAssertEqual(try changes(of: .remove(path: pointer("/a")), on: #"{"a":1}"#), [.remove(path: try pointer("/a"))])
        XCTAssertEqual(try changes(of: .merge(path: pointer(""), value: ["a": nil, "b": ["c": 2], "d": 1]), on: #"{"a":1,"b":{"c":1,"e":0}}"#),
                       [.remove(path: try pointer("/a")), .replace(path: try pointer("/b/c"), value: 2), .add(path: try pointer("/d"), value: 1)])
        XCTAssertEqual(try changes(of: .increment(path: pointer("/new/n"), by: 1), on: "{}"),
                       [.add(path: try pointer("/new"), value: ["n": 1])])
        XCTAssertEqual(try changes(of: .merge(path: pointer("/b"), value: ["c": ["d": nil]]), on: #"{"b":{"c":{"d":1,"e":2}}}"#),
                       [.remove(path: try pointer("/b/c/d"))])
    }

    func testAnEventThatChangesNothingHasNoOperations() throws {
        XCTAssertEqual(try changes(of: .set(path: pointer("/a"), value: [1, ["b": nil]]), on: #"{"a":[1,{"b":null}]}"#), [])
        XCTAssertEqual(try changes(of: .increment(path: pointer("/n"), by: 0), on: #"{"n":5}"#), [])
        XCTAssertEqual(try changes(of: .merge(path: pointer(""), value: ["a": 1, "gone": nil]), on: #"{"a":1}"#), [])
        XCTAssertEqual(try changes(of: .merge(path: pointer("/s"), value: "x"), on: #"{"s":"x"}"#), [])
        XCTAssertEqual(try changes(of: .set(path: pointer(""), value: ["a": 1]), on: #"{"a":1}"#), [])
    }

    func testAChangeOfSpellingAloneIsAChange() throws {
        XCTAssertEqual(try changes(of: .set(path: pointer("/n"), value: 1.0), on: #"{"n":1}"#), [.replace(path: try pointer("/n"), value: 1.0)])
        XCTAssertEqual(try changes(of: .set(path: pointer("/s"), value: "e\u{301}"), on: #"{"s":"\u00e9"}"#),
                       [.replace(path: try pointer("/s"), value: "e\u{301}")])
        XCTAssertEqual(try changes(of: .merge(path: pointer(""), value: ["n": 2.0]), on: #"{"n":2}"#), [.replace(path: try pointer("/n"), value: 2.0)])
    }

    /// A name canonically equivalent to a member's, spelled otherwise, is another member to JSON
    /// (and to a subscriber applying the change), which the document cannot hold beside it: a
    /// client's event naming it so is refused on admission; the member's own spelling is admitted,
    /// and a journal's event (never asked for admission) still applies as it did.
    func testAnEventNamingAMemberInAnotherSpellingIsNotAdmitted() throws {
        let nfc = "\u{E9}", nfd = "e\u{301}"
        let document = JSONDocument(root: try documentJSON(#"{"t":{"\u00e9":{"n":1,"list":[]}}}"#))
        let refused: [DocumentEvent] = [
            .set(path: JSONPointer(tokens: ["t", nfd]), value: 2),
            .set(path: JSONPointer(tokens: ["t", nfd, "n"]), value: 2),
            .remove(path: JSONPointer(tokens: ["t", nfd])),
            .increment(path: JSONPointer(tokens: ["t", nfd, "n"]), by: 1),
            .append(path: JSONPointer(tokens: ["t", nfd, "list"]), value: 1),
            .merge(path: JSONPointer(tokens: ["t", nfd]), value: ["n": 3]),
            .merge(path: try pointer("/t"), value: [.init(stringLiteral: nfd): ["n": 3]]),
            .merge(path: try pointer(""), value: ["t": [.init(stringLiteral: nfd): nil]]),
            .patch([.add(path: JSONPointer(tokens: ["t", nfd]), value: 2)]),
            .patch([.test(path: JSONPointer(tokens: ["t", nfc, "n"]), value: 1), .replace(path: JSONPointer(tokens: ["t", nfd, "n"]), value: 2)]),
            .patch([.copy(from: JSONPointer(tokens: ["t", nfd]), path: try pointer("/u"))]),
            // A member an operation creates, named in the other spelling by the next.
            .patch([.add(path: JSONPointer(tokens: ["v"]), value: [.init(stringLiteral: nfc): 1]),
                    .add(path: JSONPointer(tokens: ["v", nfd]), value: 2)]),
        ]
        for event in refused {
            let problem = try XCTUnwrap(document.admissionProblem(of: event, bodyLimit: 1 << 20), "\(event)")
            XCTAssertTrue(problem.description.contains("another spelling"), problem.description)
        }
        let admitted: [DocumentEvent] = [
            .increment(path: JSONPointer(tokens: ["t", nfc, "n"]), by: 1),
            .set(path: JSONPointer(tokens: ["u", nfd]), value: 1),
            .merge(path: try pointer("/t"), value: [.init(stringLiteral: nfc): ["n": 3]]),
            .patch([.add(path: JSONPointer(tokens: ["t", nfc, "m"]), value: 2)]),
        ]
        for event in admitted { XCTAssertNil(document.admissionProblem(of: event, bodyLimit: 1 << 20), "\(event)") }
        // An ASCII name has another spelling through three characters only (here the Kelvin sign).
        let kelvin = JSONDocument(root: ["\u{212A}": 1, "Key": 2])
        XCTAssertNotNil(kelvin.admissionProblem(of: DocumentEvent.increment(path: try pointer("/K"), by: 1), bodyLimit: 1 << 20))
        XCTAssertNil(kelvin.admissionProblem(of: DocumentEvent.increment(path: try pointer("/Key"), by: 1), bodyLimit: 1 << 20))
        XCTAssertNil(kelvin.admissionProblem(of: DocumentEvent.increment(path: JSONPointer(tokens: ["\u{212A}"]), by: 1), bodyLimit: 1 << 20))
        var replayed = document
        try replayed.apply(refused[3])
        XCTAssertEqual(replayed.root, try documentJSON(#"{"t":{"\u00e9":{"n":2,"list":[]}}}"#))
    }

    func testAJSONPatchRecordsItsOwnOperationsLessItsTests() throws {
        let test = JSONPatchOperation.test(path: try pointer("/a"), value: 1)
        let add = JSONPatchOperation.add(path: try pointer("/b"), value: true)
        let move = JSONPatchOperation.move(from: try pointer("/a"), path: try pointer("/c"))
        XCTAssertEqual(try changes(of: .patch([test, add, test, move]), on: #"{"a":1}"#), [add, move])
        XCTAssertEqual(try changes(of: .patch([test]), on: #"{"a":1}"#), [], "a patch of tests changes nothing")
    }

    func testARejectedEventChangesNothingAndADirectEditLeavesNoChangesToMisread() throws {
        var document = JSONDocument(root: try documentJSON(#"{"n":1}"#))
        try document.apply(.increment(path: pointer("/n"), by: 1))
        let applied = try XCTUnwrap(document.lastChanges)
        XCTAssertThrowsError(try document.apply(.increment(path: pointer("/n/x"), by: 1)))
        XCTAssertEqual(document.lastChanges, applied, "a rejected event leaves the document, and how it got there, as they were")
        try document.apply(.increment(path: pointer("/n"), by: 1))
        document.root = ["replaced": true]
        XCTAssertNil(document.lastChanges, "an edit of root is no event's")
    }

    /// Random events on random documents: whatever is applied, its changes replay exactly.
    func testRandomEventsOnRandomDocumentsReplayExactly() throws {
        var random = SeededRandom(seed: 0xC4A6_0E5)
        let keys = ["a", "b", "c", "-", "0", "1"]
        func value(_ depth: Int, _ random: inout SeededRandom) -> JSON {
            switch Int.random(in: 0..<(depth > 2 ? 4 : 7), using: &random) {
            case 0: return .null
            case 1: return .integer(Int64.random(in: -3...3, using: &random))
            case 2: return .number(Double(Int.random(in: 0...8, using: &random)) / 4)
            case 3: return .string(keys.randomElement(using: &random)!)
            case 4, 5:
                var members: JSON.Object = [:]
                for _ in 0..<Int.random(in: 0...3, using: &random) { members[keys.randomElement(using: &random)!] = value(depth + 1, &random) }
                return .object(members)
            default:
                return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth + 1, &random) })
            }
        }
        func path(_ random: inout SeededRandom) -> JSONPointer {
            JSONPointer(tokens: (0..<Int.random(in: 0...3, using: &random)).map { _ in keys.randomElement(using: &random)! })
        }
        var applied = 0
        for _ in 0..<5_000 {
            let before = value(0, &random)
            let event: DocumentEvent
            switch Int.random(in: 0..<6, using: &random) {
            case 0: event = .set(path: path(&random), value: value(1, &random))
            case 1: event = .merge(path: path(&random), value: value(1, &random))
            case 2: event = .remove(path: path(&random))
            case 3: event = .increment(path: path(&random), by: Bool.random(using: &random) ? 1 : 0.5)
            case 4: event = .append(path: path(&random), value: value(1, &random))
            default:
                let operation = JSONPatchOperation.add(path: path(&random), value: value(1, &random))
                event = .patch(Bool.random(using: &random) ? [operation] : [.test(path: path(&random), value: value(1, &random)), operation])
            }
            var document = JSONDocument(root: before)
            guard (try? document.apply(event)) != nil else { continue }
            applied += 1
            assertDocumentChanges(of: event, from: before, to: document)
        }
        XCTAssertGreaterThan(applied, 1_000, "too few random events applied to say much")
    }
}
