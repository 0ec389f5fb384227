import Foundation

/// Reads a data directory back: its newest snapshot, then every journal record after it, checking
/// each record's checksum and that versions follow one another without a gap.
///
/// A torn final record (what a crash in the middle of a write leaves) is cut off, with a warning
/// naming the file and offset, when `repair` is on; damage anywhere else is an error naming the file
/// and offset, and nothing is changed. The records at the end of the journal that began a request
/// of several events whose last record never reached the disk (`LogRecord.continued`) are cut off
/// too: a request's events are kept all or none, as they were answered.
public struct JournalRecovery: Sendable {
    public struct Report: Sendable {
        public var snapshotVersion: UInt64 = 0
        public var lastVersion: UInt64 = 0
        public var records = 0
        public var segments: [UInt64] = []
        /// The segment appends continue in, and where its records end once verified (and repaired):
        /// zeros may follow, room its writer kept ahead.
        public var lastSegment: (firstVersion: UInt64, size: Int)?
        /// Segments whose records all precede the snapshot: left by a crash before they were removed.
        public var obsoleteSegments: [UInt64] = []
        /// What was found torn and, with `repair`, cut off.
        public var warnings: [String] = []
        /// Where the journal ended part way through a request of several events (the records of
        /// its first events, and no more) and, with `repair`, was cut off before them.
        public var unfinishedRequest: String?
        /// The idempotency answers the snapshot and the records read carry, oldest first, for
        /// events up to `lastVersion` (some may have expired).
        public var answers: [JournaledAnswer] = []
    }

    public let directory: DataDirectory

    public init(directory: DataDirectory) {
        self.directory = directory
    }

    /// Calls `restore` with the newest snapshot, then `replay` with every record after it, in order.
    public func read(
        repair: Bool,
        restore: (LogRecord) throws -> Void,
        replay: (LogRecord) throws -> Void
    ) throws -> Report {
        var report = Report()
        if FileManager.default.fileExists(atPath: directory.importMarkerPath) {
            throw EventLogError(.damaged, "an import into \(directory.path) did not finish (\(directory.importMarkerPath) is there): run the import again, which clears what the unfinished one wrote")
        }
        guard let snapshotVersion = try directory.snapshotVersions().last else {
            throw EventLogError(.damaged, "\(directory.snapshotsPath) holds no snapshot: this is not a complete reactord data directory")
        }
        let snapshot = try readSnapshot(version: snapshotVersion)
        try restore(snapshot)
        report.snapshotVersion = snapshotVersion
        report.answers = snapshot.answers
        var expected = snapshotVersion + 1

        var segments = try directory.segmentVersions()
        // A segment created, then cut by a crash before its header was whole, holds nothing: its
        // file is shorter than a header, or a header's worth of zeros (a filesystem that had grown
        // it but not yet written it). Nothing else touches the file before its header is synced, so
        // zeros past a header's length are synced bytes lost: damage. It goes before anything is
        // read, so that the segment before it is read as the last: a crash while a segment begins
        // can leave that one's end torn too (with `--fsync never`).
        if let newest = segments.last {
            let file = directory.segmentPath(firstVersion: newest)
            var status = stat()
            let header = stat(file, &status) == 0 && Int(status.st_size) <= JournalFormat.headerSize ? try directory.readFile(file) : nil
            let unfinished: String? = if let header, header.count < JournalFormat.headerSize {
                "a segment header cut short (\(header.count) bytes)"
            } else if let header, header.allSatisfy({ $0 == 0 }) {
                "a segment header of zeros only, never written"
            } else {
                nil
            }
            if let unfinished {
                report.warnings.append("journal/\((file as NSString).lastPathComponent): \(unfinished); \(repair ? "removed" : "to be removed")")
                if repair {
                    unlink(file)
                    try directory.fsyncDirectory(directory.journalPath)
                }
                segments.removeLast()
            }
        }
        for (index, first) in segments.enumerated() {
            let isLast = index == segments.count - 1
            if !isLast && segments[index + 1] <= snapshotVersion + 1 {
                report.obsoleteSegments.append(first)
                continue
            }
            report.segments.append(first)
            let file = directory.segmentPath(firstVersion: first)
            let relative = "journal/" + (file as NSString).lastPathComponent
            let bytes = try directory.readFile(file)
            let headerVersion: UInt64
            let format: UInt16
            switch bytes.withUnsafeBytes({ JournalFormat.parseHeaderAndFormat($0, kind: .segment) }) {
            case .success(let header):
                (headerVersion, format) = header
            case .failure(let error):
                throw EventLogError(.damaged, "\(relative) at offset 0: \(error)")
            }
            guard headerVersion == first else {
                throw EventLogError(.damaged, "\(relative) at offset 8: its header says it starts at version \(headerVersion), its name says \(first)")
            }
            guard first > 0 else {
                throw EventLogError(.damaged, "\(relative) at offset 8: a segment starting at version 0 (the first event is version 1)")
            }
            if first > expected {
                throw EventLogError(.damaged, "\(relative) at offset 0: versions \(expected) to \(first - 1) are missing before it")
            }
            var scanner = JournalScanner(bytes: bytes)
            var previous: UInt64? = nil
            var size = bytes.count
            // The records of a request of several events read so far, replayed once its last one is.
            var unfinished: (offset: Int, records: [LogRecord]) = (0, [])
            scanning: while true {
                switch scanner.next() {
                case .record(let record, let offset):
                    if let previous, record.version != previous + 1 {
                        throw EventLogError(.damaged, "\(relative) at offset \(offset): version \(record.version) follows \(previous)")
                    }
                    if previous == nil && record.version != first {
                        throw EventLogError(.damaged, "\(relative) at offset \(offset): the first record is version \(record.version), not \(first)")
                    }
                    previous = record.version
                    if record.version < expected {
                        // Answers of events the snapshot folded in still hold: the events are applied.
                        report.answers += record.answers
                        continue
                    }
                    guard record.version == expected + UInt64(unfinished.records.count) else {
                        throw EventLogError(.damaged, "\(relative) at offset \(offset): version \(record.version) where \(expected) was expected")
                    }
                    if unfinished.records.isEmpty { unfinished.offset = offset }
                    unfinished.records.append(record)
                    if record.continued { continue }
                    for record in unfinished.records {
                        report.answers += record.answers
                        try replay(record)
                    }
                    report.records += unfinished.records.count
                    expected += UInt64(unfinished.records.count)
                    unfinished.records.removeAll()
                case .end:
                    size = scanner.offset
                    break scanning
                case .torn(let offset, let reason):
                    guard isLast else {
                        throw EventLogError(.damaged, "\(relative) at offset \(offset): \(reason), and later segments follow it")
                    }
                    report.warnings.append("\(relative) at offset \(offset): \(reason); \(repair ? "truncated" : "to be truncated") there")
                    if repair && unfinished.records.isEmpty { try truncate(file, to: offset) }
                    size = offset
                    break scanning
                case .damaged(let offset, let reason):
                    throw EventLogError(.damaged, "\(relative) at offset \(offset): \(reason)")
                }
            }
            if let first = unfinished.records.first {
                // A writer puts a request's records in one segment: only a crash ends one part way.
                guard isLast else {
                    throw EventLogError(.damaged, "\(relative) at offset \(unfinished.offset): a request of several events starts at version \(first.version) and does not end in this segment, and later segments follow it")
                }
                let last = first.version + UInt64(unfinished.records.count) - 1
                let versions = unfinished.records.count == 1 ? "version \(first.version)" : "versions \(first.version) to \(last)"
                report.unfinishedRequest = "\(relative) at offset \(unfinished.offset): \(versions), \(repair ? "truncated" : "to be truncated") there"
                if repair { try truncate(file, to: unfinished.offset) }
                size = unfinished.offset
                previous = first.version - 1
            }
            // Appends continue the last segment only where its records reach the state: after a
            // snapshot newer than its last record (records it held lost with `--fsync never`), the
            // next version starts a segment of its own rather than leave a gap in this one.
            // Nor a segment of an older format, whose readers would not know what appends add now.
            if isLast && (previous ?? (first - 1)) + 1 == expected && format == JournalFormat.formatVersion { report.lastSegment = (first, size) }
        }
        report.lastVersion = expected - 1
        // A snapshot's answers come again from the records it folded in that are still on disk;
        // in order of version, since a log that keeps a number of them drops the oldest.
        var seen = Set<JournaledAnswer>()
        report.answers = report.answers.filter { $0.version <= report.lastVersion && seen.insert($0).inserted }
        report.answers.sort { $0.version < $1.version }
        return report
    }

    /// Reads and checks the snapshot file of `version`.
    public func readSnapshot(version: UInt64) throws -> LogRecord {
        let file = directory.snapshotPath(version: version)
        let relative = "snapshots/" + (file as NSString).lastPathComponent
        let bytes = try directory.readFile(file)
        switch bytes.withUnsafeBytes({ JournalFormat.parseHeader($0, kind: .snapshot) }) {
        case .success(let headerVersion) where headerVersion == version:
            break
        case .success(let headerVersion):
            throw EventLogError(.damaged, "\(relative) at offset 8: its header says version \(headerVersion), its name says \(version)")
        case .failure(let error):
            throw EventLogError(.damaged, "\(relative) at offset 0: \(error)")
        }
        var scanner = JournalScanner(bytes: bytes)
        switch scanner.next() {
        case .record(let record, let offset):
            guard record.version == version else {
                throw EventLogError(.damaged, "\(relative) at offset \(offset): the record is version \(record.version), not \(version)")
            }
            guard scanner.next() == .end else {
                throw EventLogError(.damaged, "\(relative) at offset \(scanner.offset): bytes after the snapshot's record")
            }
            return record
        case .end:
            throw EventLogError(.damaged, "\(relative) at offset \(JournalFormat.headerSize): the snapshot holds no record")
        case .torn(let offset, let reason), .damaged(let offset, let reason):
            throw EventLogError(.damaged, "\(relative) at offset \(offset): \(reason)")
        }
    }

    private func truncate(_ file: String, to size: Int) throws(EventLogError) {
        let fd = open(file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DataDirectory.error("cannot open", file) }
        defer { close(fd) }
        try directory.truncate(fd, to: size, file: file)
        try directory.sync(fd, file: file)
    }
}
