import FuzzSupport
import ReactorServer

/// The properties fuzzed, for the cluster stream's record groups (`StreamEntryFormat`): any bytes
/// read as a group either are refused or give records that end at the entry's version, one per
/// version, and that are read back the same once written again; and any records, written as a
/// group, are read back as they were.
func check(_ bytes: UnsafeRawBufferPointer) {
    let input = Array(bytes)
    // The entry's version from the first byte: small ones meet groups with more records than versions.
    let lastVersion = UInt64(input.first ?? 0)
    let group = Array(input.dropFirst())
    if let records = StreamEntryFormat.records(ofGroup: group, lastVersion: lastVersion) {
        precondition(!records.isEmpty && records.last?.version == lastVersion, "records that do not end at the entry's version")
        precondition(zip(records, records.dropFirst()).allSatisfy { $0.version + 1 == $1.version }, "versions with a gap")
        precondition(StreamEntryFormat.records(ofGroup: StreamEntryFormat.group(records), lastVersion: lastVersion) == records,
                     "records read from a group are not read back the same once written again")
    }
    // The same bytes as records of their own, split at every 0xFF: written, then read back whole.
    let payloads = group.split(separator: 0xFF, omittingEmptySubsequences: false).prefix(64).map(Array.init)
    let records = payloads.enumerated().map { LogRecord(version: 1_000 + UInt64($0.offset), payload: $0.element) }
    let last = 1_000 + UInt64(records.count) - 1
    precondition(StreamEntryFormat.records(ofGroup: StreamEntryFormat.group(records), lastVersion: last) == records,
                 "written records are not read back as they were")
}

@main
enum StreamEntryFuzzer {
    static func main() throws {
        try runFuzzer(check)
    }
}
