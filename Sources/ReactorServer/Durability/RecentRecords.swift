import DequeModule

/// The newest records a log keeps in memory, in order of version, to answer reads without the disk
/// or Redis (`/history`, a subscriber catching up): at most `maxCount` of them and `maxBytes` of
/// their payloads, the oldest dropped first, so that a few large events do not hold gigabytes.
struct RecentRecords {
    private var records: Deque<LogRecord> = []
    private var bytes = 0
    let maxCount: Int
    let maxBytes: Int

    /// 64 MiB: thousands of events of a few kilobytes, a few dozen of a megabyte.
    static let defaultMaxBytes = 64 << 20

    init(maxCount: Int, maxBytes: Int = defaultMaxBytes) {
        self.maxCount = maxCount
        self.maxBytes = maxBytes
    }

    var first: LogRecord? { records.first }
    var last: LogRecord? { records.last }

    /// Appends `record`, the newest; the caller keeps the versions consecutive.
    mutating func append(_ record: LogRecord) {
        records.append(record)
        bytes += record.payload.count
        while records.count > 1 && (records.count > maxCount || bytes > maxBytes) {
            bytes -= records.removeFirst().payload.count
        }
    }

    mutating func removeAll() {
        records.removeAll()
        bytes = 0
    }

    /// Up to `limit` records after `version`, if the first of them is held.
    func after(_ version: UInt64, limit: Int) -> [LogRecord]? {
        guard let first = records.first, let last = records.last, first.version <= version + 1, version + 1 <= last.version else { return nil }
        let start = Int(version + 1 - first.version)
        return Array(records[start ..< min(records.count, start + max(limit, 1))])
    }
}
