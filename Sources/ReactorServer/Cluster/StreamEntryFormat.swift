/// How the cluster's stream holds events: one entry per append, whatever the number of events it
/// carries, so that Redis runs one `XADD` per append and each node's tail reads one entry per
/// append, not one per event.
///
/// An entry's ID is `<version>-0`, the version of its last event; its fields are `n` (the node that
/// appended it) and `g` (its events' records, in order, the first one following the previous
/// entry's version). In `g`, each record is its length in ASCII decimal, a space, its bytes and a
/// newline: unambiguous whatever a record holds, and still readable in `redis-cli XRANGE`.
///
/// An entry with `e` in place of `g` holds one record (the format before grouping): it is read
/// as well.
public enum StreamEntryFormat {
    /// The largest record length read: what a record's digits say beyond it is damage, not data.
    static let maxRecordLength = 1 << 30

    /// The `g` field of an entry holding `records`.
    public static func group(_ records: [LogRecord]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.reduce(0) { $0 + $1.payload.count + 12 })
        for record in records {
            bytes.appendDecimal(UInt64(record.payload.count))
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: record.payload)
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// The records of a `g` field whose entry carries `lastVersion`; nil when it is not what
    /// `group` writes (empty, cut short, or more records than versions up to `lastVersion`).
    public static func records(ofGroup bytes: [UInt8], lastVersion: UInt64) -> [LogRecord]? {
        var payloads: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            var length = 0
            let digitsStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: " ") {
                let digit = Int(bytes[index]) - Int(UInt8(ascii: "0"))
                guard (0...9).contains(digit), index - digitsStart < 10 else { return nil }
                length = length * 10 + digit
                index += 1
            }
            guard index > digitsStart, index < bytes.count, length <= maxRecordLength else { return nil }
            index += 1
            guard length < bytes.count - index, bytes[index + length] == UInt8(ascii: "\n") else { return nil }
            payloads.append(Array(bytes[index..<(index + length)]))
            index += length + 1
        }
        guard !payloads.isEmpty, UInt64(payloads.count) <= lastVersion else { return nil }
        let first = lastVersion - UInt64(payloads.count) + 1
        return payloads.enumerated().map { LogRecord(version: first + UInt64($0.offset), payload: $0.element) }
    }

    /// What tells one entry from another at the same version: the node that appended it and its
    /// records' bytes, as Redis holds them. A node keeps its newest entry's, to check on every
    /// connection that Redis still holds the history it applied (see `RedisStreamLog`).
    public struct Identity: Equatable, Sendable {
        public var version: UInt64
        public var node: [UInt8]
        public var records: [UInt8]

        public init(version: UInt64, node: [UInt8], records: [UInt8]) {
            self.version = version
            self.node = node
            self.records = records
        }

        /// The identity of an XRANGE or XREAD entry (`[id, [field, value, ...]]`); nil for one this
        /// format does not write.
        public init?(entry: RedisReply) {
            guard let parts = entry.elements, parts.count == 2, let id = parts[0].string,
                  let version = ClusterKeys.version(ofEntryID: id), let fields = parts[1].fields,
                  let records = fields["g"] ?? fields["e"] else { return nil }
            self.init(version: version, node: fields["n"] ?? [], records: records)
        }
    }

    /// The records of XRANGE or XREAD entries (`[id, [field, value, ...]]` each), in order; an
    /// entry that is not one this format writes fails them all, naming its ID. Only those after
    /// version `after`, and at most `limit` of them: entries past the limit are not decoded (an entry
    /// holds a whole group of records, so a page of entries can hold far more than a page of records).
    public static func records(of entries: [RedisReply], after: UInt64 = 0, limit: Int = .max) throws(EventLogError) -> [LogRecord] {
        var records: [LogRecord] = []
        records.reserveCapacity(min(entries.count, limit))
        var previous: UInt64?
        for entry in entries {
            guard records.count < limit else { break }
            guard let parts = entry.elements, parts.count == 2, let id = parts[0].string else {
                throw EventLogError(.damaged, "the cluster's stream holds an entry reactord does not write: \(entry)")
            }
            guard let version = ClusterKeys.version(ofEntryID: id), let fields = parts[1].elements, fields.count % 2 == 0 else {
                throw EventLogError(.damaged, "the cluster's stream holds an entry reactord does not write (ID \(id))")
            }
            var found: [LogRecord]?
            for index in stride(from: 0, to: fields.count, by: 2) {
                guard let name = fields[index].bytes, name.count == 1, let value = fields[index + 1].bytes else { continue }
                if name[0] == UInt8(ascii: "g") {
                    guard let group = Self.records(ofGroup: value, lastVersion: version) else {
                        throw EventLogError(.damaged, "the cluster's stream entry \(id) holds records reactord cannot read")
                    }
                    found = group
                } else if name[0] == UInt8(ascii: "e") {
                    found = [LogRecord(version: version, payload: value)]
                }
                if found != nil { break }
            }
            guard let found else { throw EventLogError(.damaged, "the cluster's stream entry \(id) holds no records") }
            guard previous.map({ $0 < found[0].version }) ?? true else {
                throw EventLogError(.damaged, "the cluster's stream entry \(id) is out of order")
            }
            previous = version
            for record in found where record.version > after {
                guard records.count < limit else { break }
                records.append(record)
            }
        }
        return records
    }
}
