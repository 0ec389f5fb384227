import DequeModule
import Foundation

/// reactord's event log: a journal of segment files and snapshots in a data directory, written on
/// libuv's threadpool so the loop never waits for the disk.
///
/// One append is in flight at a time; appends asked for meanwhile wait their turn (the server gathers
/// events into one append per loop iteration, so this is where group commit happens). The most
/// recent records stay in memory as well, so `/history` near the head reads no file.
public final class FileEventLog: EventLog {
    public struct Options: Sendable {
        public var fsync: FsyncPolicy = .batch
        /// A segment is closed and a new one begun once it would grow past this.
        public var segmentBytes = 16 << 20
        /// Records kept in memory for reads near the head.
        public var recentRecords = 4096
        /// The most idempotency answers of each client a snapshot carries, the newest: as many as
        /// a server remembers by default (`ServerConfiguration.idempotencyCapacity`; a host that changes
        /// one changes both).
        public var answersKept = 10_000

        public init(fsync: FsyncPolicy = .batch, segmentBytes: Int = 16 << 20, recentRecords: Int = 4096, answersKept: Int = 10_000) {
            self.fsync = fsync
            self.segmentBytes = segmentBytes
            self.recentRecords = recentRecords
            self.answersKept = answersKept
        }
    }

    public let directory: DataDirectory
    private let loop: EventLoop
    private let options: Options
    private let writer: JournalWriter
    private var lockFD: Int32

    public private(set) var lastVersion: UInt64
    public private(set) var oldestVersion: UInt64
    public internal(set) var history = HistoryName.random()
    /// The first version of each segment on disk, in order.
    private var segments: [UInt64]
    private var recent: RecentRecords
    /// The changes of the last events replayed at start-up, up to `lastVersion`, for the server's
    /// resume window; handed over once (`takeReplayedChanges`).
    var replayedChanges: [(version: UInt64, changes: [JSONPatchOperation])] = []

    /// The idempotency answers of the events appended (and, at start-up, recovered), until they
    /// expire: the next snapshot carries those of the events it folds in. Each client's own, oldest
    /// first, its newest `answersKept` at most, as the server's cache keeps them: one client's keys
    /// never push out another's, after a restart either.
    private var answersByClient: [Substring: Deque<JournaledAnswer>] = [:]

    /// Every answer kept and still within its window, oldest first.
    var answers: [JournaledAnswer] {
        let now = JournaledAnswer.now()
        return answersByClient.values.flatMap { $0.filter { $0.expiresAt > now } }.sorted { $0.version < $1.version }
    }

    public private(set) var statistics = EventLogStatistics()
    private var appending = false
    private var waitingAppends: Deque<(records: [LogRecord], completion: (Result<Void, EventLogError>) -> Void)> = []
    private var jobsInFlight = 0
    /// Reads of segment files on the thread pool (`read(after:limit:)`), at most `maxDiskReadsInFlight`.
    private var diskReadsInFlight = 0
    static let maxDiskReadsInFlight = 2
    private var closing: (() -> Void)?
    private var closed = false

    /// Opens a verified directory: `report` is what `JournalRecovery.read` found in it, and `lockFD`
    /// the lock taken before reading it.
    init(directory: DataDirectory, lockFD: Int32, report: JournalRecovery.Report, loop: EventLoop, options: Options) throws(EventLogError) {
        self.directory = directory
        self.lockFD = lockFD
        self.loop = loop
        self.options = options
        recent = RecentRecords(maxCount: options.recentRecords)
        lastVersion = report.lastVersion
        oldestVersion = report.snapshotVersion
        writer = try JournalWriter(directory: directory, segmentLimit: options.segmentBytes, lastSegment: report.lastSegment, nextVersion: report.lastVersion + 1)
        segments = report.segments
        keep(report.answers)
        // A segment the writer started: there was none to continue (a new directory, or a last
        // segment recovery removed for a header cut short).
        if report.lastSegment == nil && writer.hasSegment && segments.last != report.lastVersion + 1 { segments.append(report.lastVersion + 1) }
        // What a crash between writing a snapshot and removing what it replaced leaves behind.
        for first in report.obsoleteSegments {
            unlink(directory.segmentPath(firstVersion: first))
        }
        for version in (try? directory.snapshotVersions()) ?? [] where version < report.snapshotVersion {
            unlink(directory.snapshotPath(version: version))
        }
        let snapshotFile = directory.snapshotPath(version: report.snapshotVersion)
        let attributes = try? FileManager.default.attributesOfItem(atPath: snapshotFile)
        statistics.snapshotVersion = report.snapshotVersion
        // The state's JSON, as for the snapshots written from now on: the file less its headers.
        statistics.snapshotBytes = max(0, ((attributes?[.size] as? Int) ?? 0) - JournalFormat.headerSize - JournalFormat.recordHeaderSize)
        statistics.snapshotTime = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970
    }

    deinit {
        writer.close()
        if lockFD >= 0 { Foundation.close(lockFD) }
    }

    func takeReplayedChanges() -> [(version: UInt64, changes: [JSONPatchOperation])] {
        defer { replayedChanges = [] }
        return replayedChanges
    }

    // MARK: Appending

    public func append(_ records: [LogRecord], completion: @escaping (Result<Void, EventLogError>) -> Void) {
        guard !closed else { return completion(.failure(EventLogError(.unavailable, "the journal is closed"))) }
        waitingAppends.append((records, completion))
        startNextAppend()
    }

    private func startNextAppend() {
        guard !appending, let next = waitingAppends.popFirst() else { return }
        appending = true
        jobsInFlight += 1
        let (writer, policy, records) = (writer, options.fsync, next.records)
        loop.runInThreadPool({ () -> (Result<[UInt64], EventLogError>, seconds: Double) in
            let start = DispatchTime.now().uptimeNanoseconds
            let result = writer.append(records, policy: policy)
            return (result, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }) { [self] result, seconds in
            jobsInFlight -= 1
            appending = false
            switch result {
            case .success(let started):
                statistics.appendSeconds.observe(seconds)
                statistics.bytesAppended += UInt64(records.reduce(0) { $0 + JournalFormat.encodedSize($1) })
                segments.append(contentsOf: started)
                if let last = records.last { lastVersion = last.version }
                remember(records)
                keepAnswers(of: records)
                next.completion(.success(()))
            case .failure(let error):
                statistics.appendFailures += 1
                next.completion(.failure(error))
            }
            startNextAppend()
            finishClosingIfIdle()
        }
    }

    private func keepAnswers(of records: [LogRecord]) {
        for record in records where !record.answers.isEmpty { keep(record.answers) }
    }

    /// Adds `new` (oldest first) to their clients' answers, and forgets, for those clients, the
    /// answers whose window has passed (they expire about in order) and the oldest past `answersKept`.
    private func keep(_ new: [JournaledAnswer]) {
        let now = JournaledAnswer.now()
        var touched = Set<Substring>()
        for answer in new {
            answersByClient[answer.client, default: []].append(answer)
            touched.insert(answer.client)
        }
        for client in touched {
            answersByClient[client]?.removeAll(expiredAt: now, keeping: options.answersKept)
            if answersByClient[client]?.isEmpty == true { answersByClient[client] = nil }
        }
    }

    private func remember(_ records: [LogRecord]) {
        for record in records { recent.append(record) }
    }

    // MARK: Reading

    /// The oldest version a read can start after: the first record still on disk, less one.
    public var oldestReadableVersion: UInt64 {
        (segments.first ?? lastVersion + 1) - 1
    }

    public func read(after version: UInt64, limit: Int, completion: @escaping (Result<[LogRecord], EventLogError>) -> Void) {
        guard version < lastVersion, limit > 0 else { return completion(.success([])) }
        guard version >= oldestReadableVersion else {
            return completion(.failure(EventLogError(.gone, "the journal starts after version \(oldestReadableVersion); earlier events are no longer kept")))
        }
        if let records = recent.after(version, limit: limit) { return completion(.success(records)) }
        // Reads of the disk share libuv's thread pool with the appends' writes and syncs: a few at
        // a time, the others told to try again, so that readers of old history never hold up
        // acknowledging new events.
        guard diskReadsInFlight < Self.maxDiskReadsInFlight else {
            return completion(.failure(EventLogError(.unavailable, "\(Self.maxDiskReadsInFlight) reads of the journal are under way already")))
        }
        // The segments that may hold versions after `version`, up to the last durable one.
        let start = segments.lastIndex { $0 <= version + 1 } ?? 0
        let (directory, last) = (directory, lastVersion)
        let files = segments[start...].map { directory.segmentPath(firstVersion: $0) }
        jobsInFlight += 1
        diskReadsInFlight += 1
        loop.runInThreadPool({ Self.readRecords(files, after: version, through: last, limit: limit, directory: directory) }) { [self] result in
            jobsInFlight -= 1
            diskReadsInFlight -= 1
            completion(result)
            finishClosingIfIdle()
        }
    }

    private static func readRecords(_ files: [String], after version: UInt64, through last: UInt64, limit: Int, directory: DataDirectory) -> Result<[LogRecord], EventLogError> {
        var records: [LogRecord] = []
        for file in files {
            let bytes: [UInt8]
            do {
                bytes = try directory.readFile(file)
            } catch let error where error.kind == .io(code: ENOENT) {
                return .failure(EventLogError(.gone, "the events after version \(version) were removed while being read (a snapshot trimmed the journal)"))
            } catch {
                return .failure(error)
            }
            var scanner = JournalScanner(bytes: bytes)
            while case .record(let record, _) = scanner.next() {
                if record.version > last { return .success(records) }
                if record.version > version {
                    records.append(record)
                    if records.count == limit { return .success(records) }
                }
            }
        }
        return .success(records)
    }

    // MARK: Snapshots

    public func saveSnapshot(at version: UInt64, encode: @escaping @Sendable () throws -> [UInt8], completion: @escaping (Result<Void, EventLogError>) -> Void) {
        guard !closed else { return completion(.failure(EventLogError(.unavailable, "the journal is closed"))) }
        // Segments whose records all precede the snapshot go once it is safely written, except the
        // one being appended to.
        var obsolete: [UInt64] = []
        for (index, first) in segments.enumerated().dropLast() where segments[index + 1] <= version + 1 {
            obsolete.append(first)
        }
        let olderSnapshots = (try? directory.snapshotVersions().filter { $0 < version }) ?? []
        let kept = answers.filter { $0.version <= version }
        let (directory, redundant) = (directory, obsolete)
        jobsInFlight += 1
        loop.runInThreadPool({ () -> Result<Int, EventLogError> in
            let state: [UInt8]
            do {
                state = try encode()
            } catch {
                return .failure(EventLogError(.other, "the state at version \(version) could not be encoded: \(error)"))
            }
            return Result { () throws(EventLogError) -> Int in
                try Self.writeSnapshot(LogRecord(version: version, payload: state, answers: kept), in: directory, removingSegments: redundant, snapshots: olderSnapshots)
                return state.count
            }
        }) { [self] result in
            jobsInFlight -= 1
            if case .success(let bytes) = result {
                segments.removeAll { obsolete.contains($0) }
                oldestVersion = max(oldestVersion, version)
                statistics.snapshotVersion = version
                statistics.snapshotBytes = bytes
                statistics.snapshotTime = Date().timeIntervalSince1970
            }
            completion(result.map { _ in })
            finishClosingIfIdle()
        }
    }

    /// Writes a snapshot atomically, then removes what it makes redundant: the segments whose
    /// records all precede it and the older snapshots.
    static func writeSnapshot(_ snapshot: LogRecord, in directory: DataDirectory, removingSegments obsolete: [UInt64], snapshots older: [UInt64]) throws(EventLogError) {
        try JournalFormat.checkWritable(snapshot)
        var bytes = JournalFormat.header(.snapshot, version: snapshot.version)
        JournalFormat.append(snapshot, to: &bytes)
        try directory.writeAtomically(bytes, to: directory.snapshotPath(version: snapshot.version))
        for first in obsolete { unlink(directory.segmentPath(firstVersion: first)) }
        for version in older { unlink(directory.snapshotPath(version: version)) }
        try directory.fsyncDirectory(directory.journalPath)
        try directory.fsyncDirectory(directory.snapshotsPath)
    }

    public func loadSnapshot(atOrBefore version: UInt64, completion: @escaping (Result<LogRecord?, EventLogError>) -> Void) {
        guard version >= oldestVersion else { return completion(.success(nil)) }
        let recovery = JournalRecovery(directory: directory)
        let snapshotVersion = oldestVersion
        jobsInFlight += 1
        loop.runInThreadPool({ () -> Result<LogRecord?, EventLogError> in
            do {
                return .success(try recovery.readSnapshot(version: snapshotVersion))
            } catch let error as EventLogError where error.kind == .io(code: ENOENT) {
                return .success(nil)
            } catch let error as EventLogError {
                return .failure(error)
            } catch {
                return .failure(EventLogError(.other, "\(error)"))
            }
        }) { [self] result in
            jobsInFlight -= 1
            completion(result)
            finishClosingIfIdle()
        }
    }

    // MARK: Closing

    public func close(completion: @escaping () -> Void) {
        closing = completion
        closed = true
        finishClosingIfIdle()
    }

    private func finishClosingIfIdle() {
        guard let closing, jobsInFlight == 0, waitingAppends.isEmpty else { return }
        self.closing = nil
        writer.close()
        if lockFD >= 0 {
            Foundation.close(lockFD)
            lockFD = -1
        }
        closing()
    }
}

private extension Deque<JournaledAnswer> {
    /// Drops from the front the answers expired at `now`, and the oldest past `limit`.
    mutating func removeAll(expiredAt now: UInt64, keeping limit: Int) {
        while let first, first.expiresAt <= now || count > limit { removeFirst() }
    }
}
