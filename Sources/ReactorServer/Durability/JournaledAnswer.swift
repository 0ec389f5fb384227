import Foundation

/// An idempotency key answered by an event, kept in the journal with the event itself: a retry
/// after a restart (a crash after the event was synced, before the client heard) gets the event's
/// answer, `{"version":N}`, and applies nothing twice.
///
/// A journal record carries the answer its event gave; a snapshot carries the answers, still within
/// their window, of the events it folds in, since the segments that held them are then removed.
public struct JournaledAnswer: Sendable, Hashable {
    /// The version of the event that answered the key.
    public let version: UInt64
    /// When the key expires, in milliseconds since 1970 (wall-clock time: it must mean the same
    /// after a restart).
    public let expiresAt: UInt64
    /// The request's fingerprint (`IdempotencyCache.fingerprint(of:)`): a retry must match it.
    public let fingerprint: String
    /// The key as the server scopes it (`IdempotencyCache.scopedKey`).
    public let key: String
    /// The answer's JSON (one line), where it is more than `{"version":N}`: a request of several
    /// events, answered by its last.
    public let body: [UInt8]?

    /// The client (token name) the key belongs to.
    var client: Substring { Self.client(ofScopedKey: key) }

    /// The client a scoped key (`IdempotencyCache.scopedKey`) belongs to: what it holds before its NUL.
    static func client(ofScopedKey key: String) -> Substring {
        key.firstIndex(of: "\u{0}").map { key[..<$0] } ?? ""
    }

    public init(version: UInt64, expiresAt: UInt64, fingerprint: String, key: String, body: [UInt8]? = nil) {
        self.version = version
        self.expiresAt = expiresAt
        self.fingerprint = fingerprint
        self.key = key
        self.body = body
    }

    /// Milliseconds since 1970, the clock `expiresAt` is read on.
    static func now() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1_000))
    }

    /// How a record's payload begins when it carries answers: a byte no JSON text starts with, then
    /// a line `version expiresAt fingerprint hex(key)` per answer (then ` body` when it has one),
    /// then an empty line, then the JSON. Text with no zero byte, like the JSON, which
    /// `JournalScanner` relies on.
    static let marker: UInt8 = 0x01

    /// What a record's stored payload begins with when it carries `answers` (nothing for none):
    /// the marker, a line per answer, and the empty line before the JSON.
    static func prefix(_ answers: [JournaledAnswer]) -> [UInt8] {
        guard !answers.isEmpty else { return [] }
        var bytes: [UInt8] = [marker]
        bytes.reserveCapacity(prefixCount(answers))
        for answer in answers {
            bytes.appendDecimal(answer.version)
            bytes.append(space)
            bytes.appendDecimal(answer.expiresAt)
            bytes.append(space)
            bytes += answer.fingerprint.utf8
            bytes.append(space)
            HexDigits.append(answer.key.utf8, to: &bytes)
            if let body = answer.body {
                bytes.append(space)
                bytes += body
            }
            bytes.append(newline)
        }
        bytes.append(newline)
        return bytes
    }

    /// The byte count of `prefix(answers)`, without writing it.
    static func prefixCount(_ answers: [JournaledAnswer]) -> Int {
        guard !answers.isEmpty else { return 0 }
        return answers.reduce(2) { count, answer in
            let numbers = DecimalDigits.withDigits(of: answer.version) { $0.count } + DecimalDigits.withDigits(of: answer.expiresAt) { $0.count }
            return count + numbers + answer.fingerprint.utf8.count + 2 * answer.key.utf8.count + (answer.body.map { $0.count + 1 } ?? 0) + 4
        }
    }

    /// Splits a stored payload into the JSON and the answers it carries; nil when it begins with
    /// the marker and what follows is not answers.
    static func split(_ stored: ArraySlice<UInt8>) -> (payload: [UInt8], answers: [JournaledAnswer])? {
        guard stored.first == marker else { return (Array(stored), []) }
        var answers: [JournaledAnswer] = []
        var lineStart = stored.startIndex + 1
        while true {
            guard let lineEnd = stored[lineStart...].firstIndex(of: newline) else { return nil }
            if lineEnd == lineStart {
                return answers.isEmpty ? nil : (Array(stored[(lineEnd + 1)...]), answers)
            }
            guard let answer = parse(stored[lineStart..<lineEnd]) else { return nil }
            answers.append(answer)
            lineStart = lineEnd + 1
        }
    }

    private static func parse(_ line: ArraySlice<UInt8>) -> JournaledAnswer? {
        // Only the form `prefix(_:)` writes, so that what is read writes back the same.
        let fields = line.split(separator: space, maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 4 || (fields.count == 5 && !fields[4].isEmpty),
              let version = decimal(fields[0]), let expiresAt = decimal(fields[1]),
              !fields[2].isEmpty, fields[2].allSatisfy({ HexDigits.value(of: $0) != nil }), fields[3].count % 2 == 0 else { return nil }
        var key: [UInt8] = []
        key.reserveCapacity(fields[3].count / 2)
        var digits = fields[3].makeIterator()
        while let high = digits.next(), let low = digits.next() {
            guard let high = HexDigits.value(of: high), let low = HexDigits.value(of: low) else { return nil }
            key.append(high << 4 | low)
        }
        guard let keyString = String(validating: key, as: UTF8.self) else { return nil }
        return JournaledAnswer(version: version, expiresAt: expiresAt, fingerprint: String(decoding: fields[2], as: UTF8.self),
                               key: keyString, body: fields.count == 5 ? Array(fields[4]) : nil)
    }

    /// A number in decimal digits, without a sign or a leading zero.
    private static func decimal(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard let first = digits.first, first != UInt8(ascii: "0") || digits.count == 1 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            let (times10, over1) = value.multipliedReportingOverflow(by: 10)
            let (sum, over2) = times10.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !over1, !over2 else { return nil }
            value = sum
        }
        return value
    }

    private static let newline = UInt8(ascii: "\n")
    private static let space = UInt8(ascii: " ")
}
