import Foundation

/// What /proc says about another process, and getrusage about this one.
enum ProcStats {
    /// utime and stime of `pid` in microseconds (all its threads, living and exited), from /proc/PID/stat.
    static func cpuMicroseconds(pid: Int32) -> (user: Double, system: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": field 3 (state) is first; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (utime / ticks * 1_000_000, stime / ticks * 1_000_000)
    }

    /// VmRSS of `pid` in bytes, from /proc/PID/status.
    static func residentBytes(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2, let kib = Double(parts[1]) else { return nil }
            return kib * 1024
        }
        return nil
    }

    /// This process's user + system CPU in microseconds.
    static func ownCPUMicroseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func micros(_ t: timeval) -> Double { Double(t.tv_sec) * 1_000_000 + Double(t.tv_usec) }
        return micros(usage.ru_utime) + micros(usage.ru_stime)
    }
}

/// Nearest-rank percentiles of a sample.
struct Percentiles {
    let sorted: [Double]
    init(_ values: [Double]) { sorted = values.sorted() }
    func callAsFunction(_ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }
    var max: Double { sorted.last ?? .nan }
}

func format(_ value: Double, _ decimals: Int = 2) -> String {
    value.isFinite ? String(format: "%.\(decimals)f", value) : "n/a"
}
