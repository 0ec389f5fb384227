import Glibc

/// Where the server's routine lines go: one per request (`RequestLogger`) and one per event
/// (`EventLogger`), at the info level.
public enum RoutineLogLines: Sendable {
    /// Through the server's `Logger`, as every other line.
    case logger
    /// Straight to standard error, in the format of swift-log's `StreamLogHandler`, and written
    /// once per turn of the loop: for a logger that writes there in that format (reactord's), where
    /// going through it would cost more than the request. The logger's level still decides.
    case standardError
}

/// Writes the routine lines as swift-log's `StreamLogHandler` writes a line (`<time> <level>
/// <label>: <key>=<value> ... [<source>] <message>`, the metadata sorted by key, the local time to
/// the second), straight into the loop's `LogOutput`: no metadata dictionary, no strings, and the
/// time formatted again only when its second changes. On the loop thread only.
final class LogLineWriter {
    private let output: LogOutput
    private let label: [UInt8]
    /// What every line begins with in `prefixSecond`: the time, the level (info), the label.
    private var prefix: [UInt8] = []
    private var prefixSecond: time_t = -1

    init(output: LogOutput, label: String) {
        self.output = output
        self.label = Array(label.utf8)
    }

    /// `... info <label>: bytes=… method=… path=… request-id=… status=… token=… us=… [ReactorServer] request`
    func request(method: String, path: Substring, status: Int, bytes: Int, id: UInt64, token: String, microseconds: UInt64) {
        write(numbers: 4, text: method.utf8.count + path.utf8.count + token.utf8.count) { line in
            line.field(" bytes=", decimal: UInt64(bytes))
            line.field(" method=", escaping: method)
            line.field(" path=", escaping: path)
            line.field(" request-id=", decimal: id)
            line.field(" status=", decimal: UInt64(status))
            line.field(" token=", escaping: token)
            line.field(" us=", decimal: microseconds)
            line.put(" [ReactorServer] request\n")
        }
    }

    /// `... info <label>: type=… version=… [ReactorServer] event`
    func event(type: String, version: UInt64) {
        write(numbers: 1, text: type.utf8.count) { line in
            line.field(" type=", escaping: type)
            line.field(" version=", decimal: version)
            line.put(" [ReactorServer] event\n")
        }
    }

    /// Writes the prefix and what `fields` puts after it, in room for the fixed words of a line
    /// (under 128 bytes), `numbers` numbers and `text` bytes of text once escaped; the cursor stops
    /// the process rather than write past that room.
    @inline(__always)
    private func write(numbers: Int, text: Int, _ fields: (inout Cursor) -> Void) {
        refreshPrefix()
        let maximum = prefix.count + 128 + numbers * Cursor.decimalMaximum + Cursor.escapedMaximum(text)
        output.append(atMost: maximum) { start in
            var line = Cursor(start, capacity: maximum)
            line.put(prefix)
            fields(&line)
            return line.count
        }
    }

    @inline(__always)
    private func refreshPrefix() {
        let now = Glibc.time(nil)
        guard now != prefixSecond else { return }
        prefixSecond = now
        prefix = Self.localTime(now) + Array(" info".utf8) + (label.isEmpty ? [] : [UInt8(ascii: " ")] + label) + [UInt8(ascii: ":")]
    }

    /// Writes a line into memory the caller made room for (`LogOutput.append(atMost:)`), never past it.
    struct Cursor {
        let start: UnsafeMutableRawPointer
        let capacity: Int
        private(set) var count = 0

        init(_ start: UnsafeMutableRawPointer, capacity: Int) {
            self.start = start
            self.capacity = capacity
        }

        /// The digits of a `UInt64`, at most.
        static var decimalMaximum: Int { 20 }

        /// Room for `count` bytes of text once escaped (`put(escaping:)`).
        static func escapedMaximum(_ count: Int) -> Int { 4 * count }

        mutating func field(_ key: StaticString, decimal value: UInt64) {
            put(key)
            put(decimal: value)
        }

        mutating func field(_ key: StaticString, escaping value: some StringProtocol) {
            put(key)
            put(escaping: value)
        }

        mutating func put(_ text: StaticString) {
            put(raw: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }

        mutating func put(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { put(raw: $0) }
        }

        mutating func put(decimal value: UInt64) {
            DecimalDigits.withDigits(of: value) { put(raw: $0) }
        }

        private mutating func put(raw bytes: UnsafeRawBufferPointer) {
            precondition(count + bytes.count <= capacity, "a log line outgrew the room made for it")
            (start + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            count += bytes.count
        }

        /// `text`'s bytes, with control characters (a newline in a value, say) written as `\n`,
        /// `\r`, `\t` or `\xNN`, so that a line is always one line: at most four bytes each.
        mutating func put(escaping text: some StringProtocol) {
            let done: Void? = text.utf8.withContiguousStorageIfAvailable { put(escaping: $0) }
            if done == nil {
                var copy = String(text)
                copy.withUTF8 { put(escaping: $0) }
            }
        }

        private mutating func put(escaping bytes: UnsafeBufferPointer<UInt8>) {
            precondition(count + Self.escapedMaximum(bytes.count) <= capacity, "a log line outgrew the room made for it")
            let destination = start.assumingMemoryBound(to: UInt8.self)
            for byte in bytes {
                switch byte {
                case 0x20..<0x7F, 0x80...:
                    destination[count] = byte
                    count += 1
                case UInt8(ascii: "\n"): put(#"\n"#)
                case UInt8(ascii: "\r"): put(#"\r"#)
                case UInt8(ascii: "\t"): put(#"\t"#)
                default:
                    let hex: StaticString = "0123456789abcdef"
                    put(#"\x"#)
                    destination[count] = hex.utf8Start[Int(byte >> 4)]
                    destination[count + 1] = hex.utf8Start[Int(byte & 0xF)]
                    count += 2
                }
            }
        }
    }

    /// `seconds` (since the epoch) as `StreamLogHandler` prints a time: `strftime`'s
    /// `%Y-%m-%dT%H:%M:%S%z` in local time.
    static func localTime(_ seconds: time_t) -> [UInt8] {
        var seconds = seconds
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return Array("<unknown>".utf8) }
        var buffer = [Int8](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return buffer[..<count].map { UInt8(bitPattern: $0) }
    }
}
