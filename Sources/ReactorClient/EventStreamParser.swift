/// Reads a `text/event-stream` (the WHATWG Server-Sent Events format) as it arrives: bytes in, whole
/// records out. A record may be split anywhere between two reads, even inside a CR LF.
struct EventStreamParser {
    /// One dispatched record: its `data:` lines joined by "\n", with the last `event:` and `id:`.
    struct Record: Equatable {
        var event: String?
        var id: String?
        var data: String
    }

    /// A line longer than the parser accepts: whatever sends it is not a sane event stream.
    struct LineTooLong: Error, CustomStringConvertible {
        var limit: Int
        var description: String { "an event stream line longer than \(limit) bytes" }
    }

    /// The longest line accepted, in bytes (a snapshot is one `data:` line).
    let maximumLineBytes: Int

    private var line: [UInt8] = []
    /// A CR ended the last line: an LF right after it belongs to it.
    private var afterCR = false
    private var event: String?
    private var id: String?
    private var dataLines: [String] = []

    init(maximumLineBytes: Int) {
        self.maximumLineBytes = maximumLineBytes
    }

    /// The records completed by `bytes`.
    mutating func feed(_ bytes: some Sequence<UInt8>) throws(LineTooLong) -> [Record] {
        var records: [Record] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\n") where afterCR:
                afterCR = false
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                afterCR = byte == UInt8(ascii: "\r")
                if let record = endLine() { records.append(record) }
            default:
                afterCR = false
                guard line.count < maximumLineBytes else { throw LineTooLong(limit: maximumLineBytes) }
                line.append(byte)
            }
        }
        return records
    }

    /// Interprets the line just ended; a blank line dispatches the record, if it has data.
    private mutating func endLine() -> Record? {
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else {
            // The event type is per record; the id is the stream's last event ID, kept until another comes.
            defer { (event, dataLines) = (nil, []) }
            guard !dataLines.isEmpty else { return nil }
            return Record(event: event, id: id, data: dataLines.joined(separator: "\n"))
        }
        guard line[0] != UInt8(ascii: ":") else { return nil }  // a comment, such as ": heartbeat"
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let field = String(decoding: line[..<colon], as: UTF8.self)
        var valueStart = colon == line.endIndex ? colon : colon + 1
        if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = String(decoding: line[valueStart...], as: UTF8.self)
        switch field {
        case "data": dataLines.append(value)
        case "event": event = value
        case "id": id = value
        default: break  // "retry" among others: the remote core keeps its own backoff
        }
        return nil
    }
}
