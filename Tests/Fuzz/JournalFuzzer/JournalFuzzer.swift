import FuzzSupport
import ReactorServer

/// The properties fuzzed, for the journal's records (`JournalFormat`, `JournalScanner`): any bytes
/// after a segment's header are read without trapping, and every record read is one that is whole
/// and sound there; records written over zeroed room read back whole, with the room as the
/// end; and a crash in the middle of the last write over the room (any of its disk sectors left
/// unwritten), in any piece of a group larger than one write, never reads as damage: everything
/// synced before it reads back, then a tear or the end.
func check(_ bytes: UnsafeRawBufferPointer) {
    let input = Array(bytes)
    let header = JournalFormat.header(.segment, version: 1)

    // Any bytes: each record read is whole and sound where it was found, one after the other (that
    // their versions follow one another is recovery's to check).
    let file = header + input
    var scanner = JournalScanner(bytes: file)
    var next = JournalFormat.headerSize
    scanning: while true {
        switch scanner.next() {
        case .record(let record, let offset):
            var encoded: [UInt8] = []
            JournalFormat.append(record, to: &encoded)
            precondition(offset == next && Array(file[offset..<(offset + encoded.count)]) == encoded, "a record that is not what the file holds")
            next = offset + encoded.count
        case .end:
            precondition(file[scanner.offset...].allSatisfy { $0 == 0 }, "an end before what is not zeros")
            break scanning
        case .torn(let offset, _), .damaged(let offset, _):
            precondition(offset >= JournalFormat.headerSize && offset < file.count, "a tear or damage outside the file")
            break scanning
        }
    }

    // Records from the input (split at 0xFF; JSON is never empty, holds no zero byte and does not
    // begin with 0x01 or 0x02; a piece that begins with 0x02 stands for a continued record, one that
    // then begins with 0x01 for a record carrying an idempotency answer), the first
    // `synced` of them synced, the rest one group over the room. The writer writes a group in
    // pieces (`JournalFormat.pieceEnd`), syncing each before the next; a crash in
    // one piece (`crashed`) leaves the pieces before it whole, those after it unwritten, and of its
    // own disk sectors those `kept` says. With the input's top bit set, the group's first record is
    // grown past a piece, so that a piece border falls inside it.
    guard input.count >= 3 else { return }
    let (synced, kept) = (Int(input[0] % 16), UInt16(input[1]) | UInt16(input[2]) << 8)
    let inputPieces = input.dropFirst(3).split(separator: 0xFF, omittingEmptySubsequences: false).prefix(64)
        .map { $0.isEmpty ? [UInt8(ascii: "0")] : $0.map { $0 == 0 ? 1 : $0 } }
    var records = inputPieces.enumerated().map { index, whole in
        let version = UInt64(index + 1)
        let continued = whole.first == 0x02
        var piece = continued ? Array(whole.dropFirst()) : whole
        if piece.first == nil || piece.first == 0x02 { piece.insert(UInt8(ascii: "0"), at: 0) }
        guard piece.first == 0x01 else { return LogRecord(version: version, payload: piece, continued: continued) }
        let json = piece.count > 1 && piece[1] > 0x02 ? Array(piece.dropFirst()) : [UInt8(ascii: "0")]
        let body = piece.count > 2 ? Array(piece.suffix(min(48, piece.count / 2))).map { $0 == 0x0A ? 0x20 : $0 } : nil
        let answer = JournaledAnswer(version: version, expiresAt: UInt64(piece.count) << 40, fingerprint: "0123456789abcdef",
                                     key: String(decoding: piece.prefix(48), as: UTF8.self), body: body)
        return LogRecord(version: version, payload: json, answers: [answer], continued: continued)
    }
    if input[0] & 0x80 != 0, synced < records.count {
        let (record, grown) = (records[synced], JournalFormat.maxUnsyncedBytes + Int(input[1]) * 997)
        records[synced] = LogRecord(version: record.version, payload: (0..<grown).map { record.payload[$0 % record.payload.count] },
                                    answers: record.answers, continued: record.continued)
    }
    var segment = header
    var syncedEnd = header.count
    var recordEnds: [Int] = []
    for record in records {
        let index = Int(record.version) - 1
        JournalFormat.append(record, to: &segment)
        recordEnds.append(segment.count)
        if index + 1 == synced { syncedEnd = segment.count }
    }
    let writeEnd = segment.count
    segment += [UInt8](repeating: 0, count: 1024 + Int(input[0]) * 8)
    var clean = JournalScanner(bytes: segment)
    for version in 1...records.count {
        guard case .record(let record, _) = clean.next(), record == records[version - 1] else { preconditionFailure("a written record did not read back") }
    }
    precondition(clean.next() == .end && clean.offset == writeEnd, "the room is not read as the end")
    if synced >= records.count { return }
    var pieces: [Range<Int>] = []
    while (pieces.last?.upperBound ?? syncedEnd) < writeEnd {
        let start = pieces.last?.upperBound ?? syncedEnd
        pieces.append(start..<JournalFormat.pieceEnd(from: start, groupEnd: writeEnd))
    }
    let crashedPiece = pieces[Int(input[2]) % pieces.count]
    let (writeStart, writeStop) = (crashedPiece.lowerBound, crashedPiece.upperBound)
    for index in writeStop..<writeEnd { segment[index] = 0 }
    let sector = JournalFormat.sectorSize
    var sectorStart = writeStart / sector * sector
    while sectorStart < writeStop {
        if kept & (1 << ((sectorStart / sector) % 16)) == 0 {
            for index in max(sectorStart, writeStart)..<min(sectorStart + sector, writeStop) { segment[index] = 0 }
        }
        sectorStart += sector
    }
    let durable = recordEnds.filter { $0 <= writeStart }.count
    var crashed = JournalScanner(bytes: segment)
    var read = 0
    while true {
        switch crashed.next() {
        case .record(let record, _):
            read += 1
            precondition(record == records[read - 1], "a record that was not written")
            continue
        case .damaged(let offset, let reason):
            preconditionFailure("a crash in the last write read as damage at \(offset): \(reason)")
        case .end, .torn:
            precondition(read >= durable, "a synced record was lost")
        }
        break
    }
}

@main
enum JournalFuzzer {
    static func main() throws {
        try runFuzzer(check)
    }
}
