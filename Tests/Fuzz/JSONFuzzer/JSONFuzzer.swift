import FuzzSupport
import ReactorJSON

/// The properties fuzzed, for the JSON parser: any bytes either are refused or give a value that
/// reads back the same once written; reading them member by member agrees with parsing them whole;
/// and a refused document leaves nothing behind that changes how the next one is read (the parser
/// keeps a stack and recent strings per thread from parse to parse).
func check(_ bytes: UnsafeRawBufferPointer) {
    let reference = #"{"name":"player-1","stats":{"hp":[1,2,3]},"tags":["a","b"]}"#
    let parsed = try? JSONParser().parse(bytes)
    if let parsed {
        precondition((try? JSONParser().parse(parsed.jsonBytes)) == parsed, "a value does not read back the same once written")
        if case .object(let members) = parsed {
            var read: [String: JSON] = [:]
            let reading = try? JSONParser().forEachMember(in: bytes) { key, value in
                read[String(decoding: key, as: UTF8.self)] = value.json
                return true
            }
            // Keys written with escapes come raw from `forEachMember`: compare only documents without any.
            if !bytes.contains(UInt8(ascii: "\\")) {
                precondition(reading == .finished, "a document parsed whole is refused member by member")
                precondition(read == Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) }), "members read one by one differ")
            }
        }
    }
    if (try? JSONParser(duplicateKeys: .reject).parse(bytes)) != nil {
        precondition(parsed != nil, "refused with duplicates kept, accepted with duplicates refused")
    }
    precondition((try? JSONParser().parse(reference)) == .object([
        "name": "player-1", "stats": ["hp": [1, 2, 3]], "tags": ["a", "b"],
    ]), "a document read after this input is read differently")
}

@main
enum JSONFuzzer {
    static func main() throws {
        try runFuzzer(check)
    }
}
