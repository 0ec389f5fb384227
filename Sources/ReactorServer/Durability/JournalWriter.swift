import Foundation

/// The append end of the journal: the open segment, its size, and the rules for growing it.
///
/// When appends are synced, the open segment keeps zeroed room ahead of its records, and records
/// are written over it in place: syncing data that lands on blocks the file already has needs only
/// `fdatasync`, with no change to the file's size or block map for the filesystem to commit, which
/// halves the cost of each group's sync on ext4. The room grows a `roomStep` at a time (one
/// metadata commit per step rather than per group), and a segment is cut back to its records when
/// it is closed or full. What a crash can leave in the room, and how recovery tells it from damage,
/// is `JournalScanner`'s to say; the writer's part is that no more than
/// `JournalFormat.maxUnsyncedBytes` are ever written and not yet synced.
///
/// @unchecked Sendable: used by one thread at a time. The log hands it to one threadpool job and
/// starts the next only after that job's completion has run on the loop thread.
final class JournalWriter: @unchecked Sendable {
    /// How far ahead of the records the open segment is zeroed, at most.
    static let roomStep = 1 << 20

    private let directory: DataDirectory
    private let segmentLimit: Int
    private var fd: Int32 = -1
    private var segmentFirst: UInt64 = 0
    private var segmentFile = ""
    /// The segment's size up to its last durable record: where the next append writes, and where a
    /// failed append is cut back to.
    private var size = 0
    /// The file's size: zeros from `size` up to it.
    private var fileSize = 0
    /// Set when a failed append's bytes could not be removed: the next append removes them first,
    /// and writes nothing until that works.
    private var needsCutBack = false
    /// Segments started by appends and not yet reported: a failed append may have started one
    /// that the appends after it go on filling.
    private var unreported: [UInt64] = []

    /// Continues the segment recovery verified (its records end at `size`; zeros may follow), or
    /// starts one at `nextVersion` if there is none.
    init(directory: DataDirectory, segmentLimit: Int, lastSegment: (firstVersion: UInt64, size: Int)?, nextVersion: UInt64) throws(EventLogError) {
        self.directory = directory
        self.segmentLimit = segmentLimit
        if let lastSegment {
            segmentFirst = lastSegment.firstVersion
            segmentFile = directory.segmentPath(firstVersion: segmentFirst)
            fd = try directory.openForWriting(segmentFile, create: false)
            size = lastSegment.size
            fileSize = try directory.fileSize(fd, file: segmentFile)
        } else {
            do {
                try startSegment(at: nextVersion)
            } catch where error.kind == .io(code: ENOSPC) || error.kind == .io(code: EDQUOT) {
                // A full disk: the server starts, serves reads, and answers writes 503 until the
                // first append that finds room starts the segment.
            }
        }
    }

    /// Whether a segment is open; not yet when a full disk kept the first from being made.
    var hasSegment: Bool { fd >= 0 }

    deinit {
        if fd >= 0 { Foundation.close(fd) }
    }

    /// Appends `records` and syncs them as `policy` says; returns the first version of each segment
    /// started since the last append that succeeded. On failure the segment is cut back to what it
    /// held before, so a retry appends to a clean end.
    func append(_ records: [LogRecord], policy: FsyncPolicy) -> Result<[UInt64], EventLogError> {
        if needsCutBack, let error = cutBack() { return .failure(error) }
        guard let first = records.first else { return .success([]) }
        do throws(EventLogError) { for record in records { try JournalFormat.checkWritable(record) } } catch { return .failure(error) }
        let batchBytes = records.reduce(0) { $0 + JournalFormat.encodedSize($1) }
        do throws(EventLogError) {
            if fd < 0 {
                try startSegment(at: first.version)
                unreported.append(first.version)
            } else if size > JournalFormat.headerSize && size + batchBytes > segmentLimit {
                try startSegment(at: first.version)
                unreported.append(first.version)
            }
            // `size` moves only once the whole group is written: a failure part way cuts back to
            // the group's start, so none of its records, synced or not, outlives its refusal.
            var end = size
            if policy == .always {
                // Each request on its own: an event, or the events of a request of several together
                // (they are acknowledged together, and recovery keeps them all or none).
                var bytes: [UInt8] = []
                for record in records {
                    JournalFormat.append(record, to: &bytes)
                    if record.continued { continue }
                    end = try write(bytes, at: end, policy: policy)
                    bytes.removeAll(keepingCapacity: true)
                }
                if !bytes.isEmpty { end = try write(bytes, at: end, policy: policy) }
            } else {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(batchBytes)
                for record in records { JournalFormat.append(record, to: &bytes) }
                end = try write(bytes, at: end, policy: policy)
            }
            size = end
            defer { unreported = [] }
            return .success(unreported)
        } catch {
            // No segment yet (the disk is still full): nothing was written.
            if fd < 0 { return .failure(error) }
            // Records that could not be cut off may be read back at the next start: their outcome
            // is not known, and their clients must not be told they were not applied.
            if let cutError = cutBack() {
                return .failure(EventLogError(.indeterminate, "\(error.message); \(cutError.message), so these events may be found in it at the next start"))
            }
            return .failure(error)
        }
    }

    /// Writes `bytes` at `offset`, `maxUnsyncedBytes` at most at a time (`JournalFormat.pieceEnd`),
    /// each piece synced before the next is written (unless `policy` is never), zeroing room ahead
    /// first when syncing. Returns where they end.
    private func write(_ bytes: [UInt8], at offset: Int, policy: FsyncPolicy) throws(EventLogError) -> Int {
        var start = 0
        while start < bytes.count {
            let end = policy == .never ? bytes.count : JournalFormat.pieceEnd(from: offset + start, groupEnd: offset + bytes.count) - offset
            let needed = offset + end
            if policy != .never && needed > fileSize {
                let roomEnd = max(needed, min(segmentLimit, needed + Self.roomStep))
                do {
                    try directory.writeZeros(fd, from: fileSize, to: roomEnd, file: segmentFile)
                    fileSize = roomEnd
                } catch {
                    // Short of space (a full disk, a file-size limit): the records go in what room
                    // was made, and past it as the file grows, as long as they fit.
                    fileSize = (try? directory.fileSize(fd, file: segmentFile)) ?? fileSize
                }
            }
            try directory.writeAll(fd, bytes[start..<end], at: offset + start, file: segmentFile)
            if policy != .never { try directory.syncData(fd, file: segmentFile) }
            fileSize = max(fileSize, needed)
            start = end
        }
        return offset + bytes.count
    }

    /// Removes a failed append's bytes. After a failed fsync the kernel may have dropped pages it
    /// could not write, so the file is cut back to its last synced size and synced again before
    /// anything more is written. Returns why that failed, if it did.
    private func cutBack() -> EventLogError? {
        do {
            try directory.truncate(fd, to: size, file: segmentFile)
            try directory.sync(fd, file: segmentFile)
            fileSize = size
            needsCutBack = false
            return nil
        } catch {
            needsCutBack = true
            return EventLogError(error.kind, "the journal cannot be put back after a failed write: \(error.message)")
        }
    }

    /// Opens a new segment whose first record will be `version`; the current one stays as it is if
    /// the new one cannot be made whole, and is cut back to its records if it can.
    private func startSegment(at version: UInt64) throws(EventLogError) {
        let file = directory.segmentPath(firstVersion: version)
        unlink(file)  // an empty segment left by an earlier failed attempt at this version
        let newFD = try directory.openForWriting(file, create: true)
        let header = JournalFormat.header(.segment, version: version)
        do {
            try directory.writeAll(newFD, header[...], at: 0, file: file)
            try directory.sync(newFD, file: file)
            try directory.fsyncDirectory(directory.journalPath)
        } catch {
            Foundation.close(newFD)
            unlink(file)
            throw error
        }
        if fd >= 0 {
            trimRoom()
            Foundation.close(fd)
        }
        (fd, segmentFirst, segmentFile, size, fileSize) = (newFD, version, file, header.count, header.count)
    }

    /// Cuts the segment back to its records, so that a closed segment holds nothing after them.
    /// Best effort: recovery reads zeros after the last record as room, not damage.
    private func trimRoom() {
        guard fileSize > size else { return }
        if (try? directory.truncate(fd, to: size, file: segmentFile)) != nil, (try? directory.sync(fd, file: segmentFile)) != nil {
            fileSize = size
        }
    }

    func close() {
        if fd >= 0 {
            trimRoom()
            try? directory.sync(fd, file: segmentFile)
            Foundation.close(fd)
            fd = -1
        }
    }
}
