import Reactor
import ReactorServer
import TestSupport
import XCTest

/// `POST /events` reads single events through `JSONDocument.decodeEvent(fromBody:)`, a fast path
/// that must take only what the registry takes, and build exactly the event the registry builds.
final class DocumentEventReaderTests: XCTestCase {
    private func fast(_ text: String) -> DocumentEvent? {
        Array(text.utf8).withUnsafeBytes { JSONDocument.decodeEvent(fromBody: $0) }.map { $0 as! DocumentEvent }
    }

    /// What the registry makes of `text`: the event, or nil when parsing or decoding fails.
    private func registry(_ text: String) -> DocumentEvent? {
        guard let json = try? JSON(parsing: text), let event = try? JSONDocument.eventRegistry.decode(json) else { return nil }
        return event as? DocumentEvent
    }

    private func assertTakenAsTheRegistryDoes(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let event = fast(text) else { return XCTFail("the fast path left \(text) to the registry", file: file, line: line) }
        XCTAssertEqual(event, registry(text), text, file: file, line: line)
    }

    func testEveryTypeInItsUsualFormIsReadAsTheRegistryReadsIt() {
        for text in [
            #"{"type":"increment","path":"/counter","by":1}"#,
            #"{"type":"increment","path":"/counter"}"#,
            #"{"type":"increment","path":"/a/b","by":-2.5}"#,
            #"{"type":"increment","path":"/big","by":9223372036854775807}"#,
            #" { "by" : 3 , "path" : "/x~1y~0z" , "type" : "increment" } "#,
            #"{"type":"set","path":"","value":{"a":[1,2,{"b":null}]}}"#,
            #"{"type":"set","path":"/s","value":"h\u00e9llo \"quoted\" ☃"}"#,
            #"{"type":"set","path":"/n","value":null}"#,
            #"{"type":"merge","path":"/m","value":{"a":null,"b":{"c":1}}}"#,
            #"{"type":"remove","path":"/gone"}"#,
            #"{"type":"append","path":"/list","value":[1]}"#,
            #"{"type":"patch","ops":[{"op":"test","path":"/a","value":1},{"op":"replace","path":"/a","value":2}]}"#,
            #"{"type":"patch","ops":[]}"#,
            // Escaped keys are still the keys they spell.
            #"{"t\u0079pe":"set","p\u0061th":"/k","value":true}"#,
            "{\"type\":\"set\",\n\t\"path\":\"/w\",\r\n\"value\":1.5e3}",
        ] {
            assertTakenAsTheRegistryDoes(text)
        }
    }

    func testWhatTheRegistryMustJudgeIsLeftToIt() {
        for text in [
            #"[{"type":"increment","path":"/a"}]"#,          // a batch
            #"{"type":"increment","path":"/a","path":"/b"}"#, // repeated member (the registry keeps the last)
            #"{"type":"increment","type":"set","path":"/a","value":1}"#,
            #"{"type":"increment","path":"/a","extra":1}"#,   // unknown member: the registry names it
            #"{"type":"increment","path":"/a","value":1}"#,   // a member the type does not take
            #"{"type":"set","path":"/a"}"#,                   // missing value
            #"{"type":"remove"}"#,                            // missing path
            #"{"path":"/a"}"#,                                // missing type
            #"{"type":"unknown","path":"/a"}"#,
            #"{"type":7,"path":"/a"}"#,
            #"{"type":"increment","path":"no-slash"}"#,       // not a JSON Pointer
            #"{"type":"increment","path":"/a~2"}"#,
            #"{"type":"increment","path":5}"#,
            #"{"type":"increment","path":"/a","by":"1"}"#,
            #"{"type":"increment","path":"/a","by":null}"#,
            #"{"type":"patch","ops":{}}"#,
            #"{"type":"patch","ops":[{"op":"frobnicate","path":"/a"}]}"#,
            #"{"type":"patch","path":"/a","ops":[]}"#,
            #"{"type":"increment","path":"/a"} x"#,          // trailing bytes
            #"{"type":"increment","path":"/a",}"#,           // trailing comma
            #"{"type":"increment","path":"/a""#,             // cut short
            "\u{FEFF}{\"type\":\"remove\",\"path\":\"/a\"}",  // byte order mark
            "",
            "null",
            #""increment""#,
        ] {
            XCTAssertNil(fast(text), text)
        }
    }

    /// Random events, mostly valid, some with a bad value, an extra, repeated or missing member, in
    /// any order, and random damage to some: whatever the fast path takes, the registry takes alike.
    func testOnRandomDocumentsTheFastPathNeverDisagreesWithTheRegistry() {
        var random = SeededRandom(seed: 0x5EED_0E7E)
        let members: [String: [String]] = [
            "set": ["path", "value"], "merge": ["path", "value"], "append": ["path", "value"],
            "remove": ["path"], "increment": ["path", "by"], "patch": ["ops"],
        ]
        let good: [String: [String]] = [
            "path": [#""/a""#, #""/a/0""#, #""""#, #""/~0~1""#],
            "value": ["1", "null", "[]", #"{"k":[1,{"z":null}]}"#, #""\u00e9""#],
            "by": ["1", "-2", "0.5", "9223372036854775807"],
            "ops": ["[]", #"[{"op":"add","path":"/x","value":1}]"#],
        ]
        let bad = [#""a""#, "1e400", "true", "{}", #""\ud800""#, #""/a~2""#, "[{}]"]
        func document(_ random: inout SeededRandom) -> String {
            let type = ["set", "merge", "remove", "increment", "append", "patch", "Set"].randomElement(using: &random)!
            var fields = [#""type":"\#(type)""#]
            for name in members[type] ?? ["path"] where !(name == "by" && Bool.random(using: &random)) {
                let value = Int.random(in: 0..<8, using: &random) == 0
                    ? bad.randomElement(using: &random)! : good[name]!.randomElement(using: &random)!
                fields.append(#""\#(name)":\#(value)"#)
            }
            switch Int.random(in: 0..<8, using: &random) {
            case 0: fields.append(#""extra":1"#)
            case 1: fields.append(fields.randomElement(using: &random)!)
            case 2: fields.removeLast()
            case 3: fields.append(#""value":2"#)
            default: break
            }
            fields.shuffle(using: &random)
            return "{\(fields.joined(separator: ","))}"
        }
        var taken = 0
        for round in 0..<4_000 {
            var bytes = Array(document(&random).utf8)
            if round % 4 == 3 {
                // Damage: flip, drop or duplicate a byte.
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[index] = UInt8.random(in: 32...126, using: &random)
                case 1: bytes.remove(at: index)
                default: bytes.insert(bytes[index], at: index)
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            guard let event = bytes.withUnsafeBytes({ JSONDocument.decodeEvent(fromBody: $0) }) else {
                continue
            }
            taken += 1
            XCTAssertEqual(event as? DocumentEvent, registry(text), text)
        }
        XCTAssertGreaterThan(taken, 1_000, "too few random documents were valid events to say much")
    }
}
