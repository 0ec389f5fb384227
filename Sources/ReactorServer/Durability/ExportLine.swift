import ReactorJSON

/// The lines of `reactord export`, one JSON object each: `{"version":S,"state":...}` (the newest
/// snapshot) first, then `{"version":N,"event":...}` for every event after it.
///
/// A line whose record carries idempotency answers still within their window has them as
/// `"answers":[{"key":...,"fingerprint":...,"version":N,"expiresAt":T,"body":...}]` between the
/// version and the state or event, so that a retry reaching the restored server is answered as the
/// original would have answered it, not applied a second time. A reactord that does not know the
/// member imports the line without it.
enum ExportLine {
    enum Member: String {
        case state, event
    }

    /// The line for `record` (without its line break), with those of its answers that expire after
    /// `now` (milliseconds since 1970).
    static func bytes(of record: LogRecord, as member: Member, answersExpiringAfter now: UInt64) -> [UInt8] {
        var bytes = Array(#"{"version":"#.utf8)
        bytes.appendDecimal(record.version)
        let answers = record.answers.filter { $0.expiresAt > now }
        if !answers.isEmpty {
            bytes += #","answers":"#.utf8
            bytes += json(answers).jsonBytes
        }
        bytes.append(UInt8(ascii: ","))
        bytes += "\"\(member.rawValue)\":".utf8
        bytes += record.payload
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// The bytes of the state or event in `line` when the line is exactly in the form `bytes(of:)`
    /// writes (trailing whitespace aside), given its parsed version and `answers` member; nil for
    /// any other form.
    static func payload(in line: [UInt8], version: UInt64, answers: JSON?, member: Member) -> [UInt8]? {
        var prefix = Array(#"{"version":"#.utf8)
        prefix.appendDecimal(version)
        if let answers {
            prefix += #","answers":"#.utf8
            prefix += answers.jsonBytes
        }
        prefix += ",\"\(member.rawValue)\":".utf8
        var end = line.count
        while end > 0, line[end - 1] == 32 || line[end - 1] == 9 || line[end - 1] == 13 || line[end - 1] == 10 { end -= 1 }
        guard end > prefix.count + 1, line[end - 1] == UInt8(ascii: "}"), line.starts(with: prefix) else { return nil }
        return Array(line[prefix.count..<(end - 1)])
    }

    /// The answers of a line's `answers` member, checked: each must be one the journal can hold and
    /// read back, answered by the line's event (`version` alone) or, on the state's line, by an event
    /// up to the snapshot (`versions`). Throws a message naming what is wrong.
    static func answers(_ value: JSON, versions: ClosedRange<UInt64>) throws(EventLogError) -> [JournaledAnswer] {
        guard let elements = value.arrayValue else { throw EventLogError(.other, "\"answers\" is not an array") }
        return try elements.enumerated().map { (index, element) throws(EventLogError) in
            let named = "answer \(index + 1)"
            guard case .object(let members) = element else { throw EventLogError(.other, "\(named) is not an object") }
            guard let key = members["key"]?.stringValue else { throw EventLogError(.other, "\(named) has no \"key\" (a string)") }
            guard let fingerprint = members["fingerprint"]?.stringValue, !fingerprint.isEmpty,
                  fingerprint.utf8.allSatisfy({ HexDigits.value(of: $0) != nil }) else {
                throw EventLogError(.other, "\(named) has no \"fingerprint\" (hexadecimal digits)")
            }
            guard case .integer(let signedVersion)? = members["version"], signedVersion >= 0,
                  versions.contains(UInt64(signedVersion)) else {
                throw EventLogError(.other, "\(named)'s \"version\" is not one of \(versions.count == 1 ? "\(versions.lowerBound)" : "\(versions.lowerBound) to \(versions.upperBound)")")
            }
            guard case .integer(let expiresAt)? = members["expiresAt"], expiresAt >= 0 else {
                throw EventLogError(.other, "\(named) has no \"expiresAt\" (milliseconds since 1970)")
            }
            let unknown = members.keys.filter { !["key", "fingerprint", "version", "expiresAt", "body"].contains($0) }
            guard unknown.isEmpty else { throw EventLogError(.other, "\(named) has a member this reactord does not know: \"\(unknown[0])\"") }
            return JournaledAnswer(version: UInt64(signedVersion), expiresAt: UInt64(expiresAt), fingerprint: fingerprint,
                                   key: key, body: members["body"]?.jsonBytes)
        }
    }

    private static func json(_ answers: [JournaledAnswer]) -> JSON {
        .array(answers.map { answer in
            var members: JSON.Object = [
                "key": .string(answer.key),
                "fingerprint": .string(answer.fingerprint),
                "version": .integer(Int64(answer.version)),
                "expiresAt": .integer(Int64(answer.expiresAt)),
            ]
            if let body = answer.body, let value = try? JSON(parsing: body) { members["body"] = value }
            return .object(members)
        })
    }
}
