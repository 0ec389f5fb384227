import Foundation

/// The `Date` header line, formatted once per second rather than per response.
struct HTTPDate {
    private var second: Int = -1
    private(set) var headerLine: [UInt8] = []

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The header line for now; `now` is seconds since 1970.
    mutating func line(at now: Int) -> [UInt8] {
        if now != second {
            second = now
            var time = time_t(now)
            var parts = tm()
            gmtime_r(&time, &parts)
            func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
            let text = "Date: \(Self.days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(Self.months[Int(parts.tm_mon)]) "
                + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT\r\n"
            headerLine = Array(text.utf8)
        }
        return headerLine
    }

    /// Runs `body` on the header line for now, without copying the line out.
    mutating func withLine<Result>(at now: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        _ = line(at: now)
        return headerLine.withUnsafeBytes(body)
    }
}
