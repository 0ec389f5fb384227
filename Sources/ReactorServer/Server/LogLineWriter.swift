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
        refreshPrefix()
        let maximum = prefix.count + 160 + Cursor.escapedMaximum(method.utf8.count + path.utf8.count + token.utf8.count)
        output.append(atMost: maximum) { start in
            var line = Cursor(start)
            line.put(prefix)
            line.put(" bytes=")
            line.put(decimal: UInt64(bytes))
            line.put(" method=")
            line.put(escaping: method)
            line.put(" path=")
            line.put(escaping: path)
            line.put(" request-id=")
            line.put(decimal: id)
            line.put(" status=")
            line.put(decimal: UInt64(status))
            line.put(" token=")
            line.put(escaping: token)
            line.put(" us=")
            line.put(decimal: microseconds)
            line.put(" [ReactorServer] request\n")
            return line.count
        }
    }

    /// `... info <label>: type=… version=… [ReactorServer] event`
    func event(type: String, version: UInt64) {
        refreshPrefix()
        let maximum = prefix.count + 80 + Cursor.escapedMaximum(type.utf8.count)
        output.append(atMost: maximum) { start in
            var line = Cursor(start)
            line.put(prefix)
            line.put(" type=")
            line.put(escaping: type)
            line.put(" version=")
            line.put(decimal: version)
            line.put(" [ReactorServer] event\n")
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

    /// Writes a line into memory the caller made room for (`LogOutput.append(atMost:)`).
    struct Cursor {
        let start: UnsafeMutableRawPointer
        private(set) var count = 0

        init(_ start: UnsafeMutableRawPointer) { self.start = start }

        /// Room for `count` bytes of text once escaped (`put(escaping:)`).
        static func escapedMaximum(_ count: Int) -> Int { 4 * count }

        mutating func put(_ text: StaticString) {
            (start + count).copyMemory(from: text.utf8Start, byteCount: text.utf8CodeUnitCount)
            count += text.utf8CodeUnitCount
        }

        mutating func put(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { (start + count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            count += bytes.count
        }

        mutating func put(decimal value: UInt64) {
            DecimalDigits.withDigits(of: value) { put(raw: $0) }
        }

        private mutating func put(raw bytes: UnsafeRawBufferPointer) {
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
