import Foundation

/// The append end of the journal: the open segment, its size, and the rules for growing it.
///
/// @unchecked Sendable: used by one thread at a time. The log hands it to one threadpool job and
/// starts the next only after that job's completion has run on the loop thread.
final class JournalWriter: @unchecked Sendable {
    private let directory: DataDirectory
    private let segmentLimit: Int
    private var fd: Int32 = -1
    private var segmentFirst: UInt64 = 0
    private var segmentFile = ""
    /// The segment's size up to its last durable record: where a failed append is cut back to.
    private var size = 0
    /// Set when a failed append's bytes could not be removed: the next append removes them first,
    /// and writes nothing until that works.
    private var needsCutBack = false

    /// Continues the segment recovery verified, or starts one at `nextVersion` if there is none.
    init(directory: DataDirectory, segmentLimit: Int, lastSegment: (firstVersion: UInt64, size: Int)?, nextVersion: UInt64) throws(EventLogError) {
        self.directory = directory
        self.segmentLimit = segmentLimit
        if let lastSegment {
            segmentFirst = lastSegment.firstVersion
            segmentFile = directory.segmentPath(firstVersion: segmentFirst)
            fd = try directory.openForAppend(segmentFile, create: false)
            size = lastSegment.size
        } else {
            try startSegment(at: nextVersion)
        }
    }

    deinit {
        if fd >= 0 { Foundation.close(fd) }
    }

    /// Appends `records` and syncs them as `policy` says; returns the first version of each segment
    /// it started. On failure the segment is cut back to what it held before, so a retry appends
    /// to a clean end.
    func append(_ records: [LogRecord], policy: FsyncPolicy) -> Result<[UInt64], EventLogError> {
        if needsCutBack, let error = cutBack() { return .failure(error) }
        guard let first = records.first else { return .success([]) }
        var started: [UInt64] = []
        let batchBytes = records.reduce(0) { $0 + JournalFormat.encodedSize($1) }
        do {
            if size > JournalFormat.headerSize && size + batchBytes > segmentLimit {
                try startSegment(at: first.version)
                started.append(first.version)
            }
            if policy == .always {
                for record in records {
                    var bytes: [UInt8] = []
                    JournalFormat.append(record, to: &bytes)
                    try directory.writeAll(fd, bytes, file: segmentFile)
                    try directory.sync(fd, file: segmentFile)
                }
            } else {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(batchBytes)
                for record in records { JournalFormat.append(record, to: &bytes) }
                try directory.writeAll(fd, bytes, file: segmentFile)
                if policy == .batch { try directory.sync(fd, file: segmentFile) }
            }
            size += batchBytes
            return .success(started)
        } catch {
            _ = cutBack()
            return .failure(error)
        }
    }

    /// Removes a failed append's bytes. After a failed fsync the kernel may have dropped pages it
    /// could not write, so the file is cut back to its last synced size and synced again before
    /// anything more is written. Returns why that failed, if it did.
    private func cutBack() -> EventLogError? {
        do {
            try directory.truncate(fd, to: size, file: segmentFile)
            try directory.sync(fd, file: segmentFile)
            needsCutBack = false
            return nil
        } catch {
            needsCutBack = true
            return EventLogError(error.kind, "the journal cannot be put back after a failed write: \(error.message)")
        }
    }

    /// Opens a new segment whose first record will be `version`; the current one stays as it is if
    /// the new one cannot be made whole.
    private func startSegment(at version: UInt64) throws(EventLogError) {
        let file = directory.segmentPath(firstVersion: version)
        unlink(file)  // an empty segment left by an earlier failed attempt at this version
        let newFD = try directory.openForAppend(file, create: true)
        do {
            try directory.writeAll(newFD, JournalFormat.header(.segment, version: version), file: file)
            try directory.sync(newFD, file: file)
            try directory.fsyncDirectory(directory.journalPath)
        } catch {
            Foundation.close(newFD)
            unlink(file)
            throw error
        }
        if fd >= 0 { Foundation.close(fd) }
        (fd, segmentFirst, segmentFile, size) = (newFD, version, file, JournalFormat.headerSize)
    }

    func close() {
        if fd >= 0 {
            try? directory.sync(fd, file: segmentFile)
            Foundation.close(fd)
            fd = -1
        }
    }
}
