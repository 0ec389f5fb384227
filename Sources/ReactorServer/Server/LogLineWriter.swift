import Glibc
import Logging

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

/// Writes lines as swift-log's `StreamLogHandler` does (`<time> <level> <label>: <key>=<value> ...
/// [<source>] <message>`, the metadata sorted by key, the local time to the second), formatted
/// straight into the loop's `LogOutput`: no metadata dictionary, no strings, and the time formatted
/// again only when its second changes. On the loop thread only.
final class LogLineWriter {
    private let output: LogOutput
    private let label: [UInt8]
    /// What every line at `prefixLevel` begins with in `prefixSecond`: the time, the level, the label.
    private var prefix: [UInt8] = []
    private var prefixSecond: time_t = -1
    private var prefixLevel = Logger.Level.info

    init(output: LogOutput, label: String) {
        self.output = output
        self.label = Array(label.utf8)
    }

    /// Writes one line; `fields` appends its metadata with `Fields.add`, in key order.
    @inline(__always)
    func write(_ level: Logger.Level, source: StaticString, message: StaticString, _ fields: (inout Fields) -> Void) {
        let now = Glibc.time(nil)
        if now != prefixSecond || level != prefixLevel {
            prefixSecond = now
            prefixLevel = level
            prefix = Self.prefix(time: Self.localTime(now), level: level, label: label)
        }
        output.append { bytes in
            bytes.append(contentsOf: prefix)
            var line = Fields()
            swap(&line.bytes, &bytes)
            fields(&line)
            swap(&line.bytes, &bytes)
            Self.end(&bytes, source: source, message: message)
        }
    }

    /// A line's metadata, as it is written.
    struct Fields {
        fileprivate(set) var bytes: [UInt8] = []

        mutating func add(_ key: StaticString, _ value: some StringProtocol) {
            addKey(key)
            let appended: Void? = value.utf8.withContiguousStorageIfAvailable { LogLineWriter.appendEscaped($0, to: &bytes) }
            if appended == nil {
                var copy = String(value)
                copy.withUTF8 { LogLineWriter.appendEscaped($0, to: &bytes) }
            }
        }

        mutating func add(_ key: StaticString, _ value: some BinaryInteger) {
            addKey(key)
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.appendDecimal(value.magnitude)
        }

        private mutating func addKey(_ key: StaticString) {
            bytes.append(UInt8(ascii: " "))
            key.withUTF8Buffer { bytes.append(contentsOf: $0) }
            bytes.append(UInt8(ascii: "="))
        }
    }

    static func prefix(time: [UInt8], level: Logger.Level, label: [UInt8]) -> [UInt8] {
        var bytes = time
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: level.rawValue.utf8)
        if !label.isEmpty {
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: label)
        }
        bytes.append(UInt8(ascii: ":"))
        return bytes
    }

    static func end(_ bytes: inout [UInt8], source: StaticString, message: StaticString) {
        bytes.append(UInt8(ascii: " "))
        bytes.append(UInt8(ascii: "["))
        source.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "]"))
        bytes.append(UInt8(ascii: " "))
        message.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\n"))
    }

    /// `value`'s bytes, with control characters (a newline in a request's path, say) written as
    /// `\n`, `\r`, `\t` or `\xNN`, so that a line is always one line.
    static func appendEscaped(_ value: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        for byte in value {
            switch byte {
            case 0x20..<0x7F, 0x80...: bytes.append(byte)
            case UInt8(ascii: "\n"): bytes.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): bytes.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): bytes.append(contentsOf: #"\t"#.utf8)
            default:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: #"\x"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
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
