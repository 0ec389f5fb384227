import DequeModule
import Foundation
import Logging

/// What a data directory is used for, offline and at start-up: opening it for a server (recovering
/// the state it holds), and reactord's `check`, `compact`, `export` and `import`.
public enum DataDirectoryOperations {
    /// Opens `directory` for a server, creating it with `initialState` as its version 0 when it holds
    /// nothing yet, and recovers the state it holds: the newest snapshot and the journal after it,
    /// with a torn final record cut off (and logged). Refuses damage anywhere else.
    public static func open<StateType: HostedState>(
        _ directory: DataDirectory,
        initialState: StateType,
        loop: EventLoop,
        options: FileEventLog.Options,
        logger: Logger
    ) throws(EventLogError) -> (log: FileEventLog, state: StateType, version: UInt64) {
        try directory.create()
        let lock = try directory.lock()
        do throws(EventLogError) {
            let (snapshots, segments) = (try directory.snapshotVersions(), try directory.segmentVersions())
            let isNew = snapshots.isEmpty && segments.isEmpty
            if isNew {
                try writeInitialSnapshot(initialState, in: directory)
                logger.notice("created a data directory", metadata: ["directory": "\(directory.path)"])
            }
            // A snapshot being written when the process died: never renamed into place, so unused.
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.snapshotsPath)) ?? [] where name.hasSuffix(".tmp") {
                unlink(directory.snapshotsPath + "/" + name)
            }
            var state = initialState
            // The changes of the last events replayed, for the resume window (a state that keeps no
            // account of its changes leaves it empty). Only those of the last segment and the events
            // just before it can be among the last `recentRecords`: the others are not kept at all.
            var replayed: Deque<(version: UInt64, changes: [JSONPatchOperation])> = []
            let keptFrom = (segments.last ?? 0) - min(segments.last ?? 0, UInt64(options.recentRecords) + 1)
            let report = try read(directory, repair: true, restore: { state = try StateType(snapshot: $0) }, replay: { record in
                try state.replay(record)
                guard record.version >= keptFrom else { return }
                if let changes = state.lastChanges {
                    replayed.append((record.version, changes))
                    if replayed.count > options.recentRecords { replayed.removeFirst() }
                } else {
                    replayed.removeAll()
                }
            })
            for warning in report.warnings {
                logger.warning("the journal's last record was cut short or is damaged, and is cut off: a write a crash tore, never acknowledged; or damage, and then the event it held is lost", metadata: ["where": "\(warning)"])
            }
            if let unfinished = report.unfinishedRequest {
                logger.warning("the journal ends with the first events of a request whose last event never reached the disk, and they are cut off: the request was not acknowledged, and is kept all or none", metadata: ["where": "\(unfinished)"])
            }
            let log = try FileEventLog(directory: directory, lockFD: lock, report: report, loop: loop, options: options)
            log.replayedChanges = Array(replayed)
            log.history = directory.history(startingOver: isNew) { error in
                logger.warning("the name of the data directory's history cannot be kept: subscribers resuming after the next start get snapshots", metadata: ["error": "\(error.message)"])
            }
            logger.notice("recovered", metadata: [
                "directory": "\(directory.path)", "snapshot": "\(report.snapshotVersion)",
                "replayed": "\(report.records)", "version": "\(report.lastVersion)",
            ])
            return (log, state, report.lastVersion)
        } catch {
            close(lock)
            throw error
        }
    }

    /// Verifies `directory` without changing it; a torn tail is reported in the warnings.
    public static func check<StateType: HostedState>(_ directory: DataDirectory, as type: StateType.Type) throws(EventLogError) -> JournalRecovery.Report {
        try requireExisting(directory)
        let lock = try directory.lock(readOnly: true)
        defer { close(lock) }
        var state: StateType?
        return try read(directory, repair: false, restore: { state = try StateType(snapshot: $0) }, replay: { try state!.replay($0) })
    }

    /// Writes a snapshot of the newest state and removes the journal segments and snapshots it makes
    /// redundant. Returns the snapshot's version.
    public static func compact<StateType: HostedState>(_ directory: DataDirectory, as type: StateType.Type) throws(EventLogError) -> UInt64 {
        try requireExisting(directory)
        let lock = try directory.lock()
        defer { close(lock) }
        var state: StateType?
        let report = try read(directory, repair: true, restore: { state = try StateType(snapshot: $0) }, replay: { try state!.replay($0) })
        let bytes: [UInt8]
        do { bytes = try state!.jsonValue().jsonBytes } catch {
            throw EventLogError(.other, "the state at version \(report.lastVersion) does not encode: \(error)")
        }
        // Every segment goes: the next event starts a new one. The idempotency answers they held,
        // still within their window, go into the snapshot, as a running server's snapshot takes them.
        let segments = try directory.segmentVersions()
        let now = JournaledAnswer.now()
        let answers = report.answers.filter { $0.expiresAt > now }
        try FileEventLog.writeSnapshot(LogRecord(version: report.lastVersion, payload: bytes, answers: answers), in: directory,
                                       removingSegments: segments, snapshots: try directory.snapshotVersions().filter { $0 < report.lastVersion })
        return report.lastVersion
    }

    /// Writes the directory as JSON lines (`ExportLine`): its snapshot first, then every event after
    /// it, each with the idempotency answers it carries that are still within their window.
    public static func export(_ directory: DataDirectory, to write: ([UInt8]) -> Void) throws(EventLogError) -> JournalRecovery.Report {
        try requireExisting(directory)
        let lock = try directory.lock(readOnly: true)
        defer { close(lock) }
        let now = JournaledAnswer.now()
        func line(_ record: LogRecord, _ member: ExportLine.Member) {
            write(ExportLine.bytes(of: record, as: member, answersExpiringAfter: now) + [UInt8(ascii: "\n")])
        }
        return try read(directory, repair: false, restore: { line($0, .state) }, replay: { line($0, .event) })
    }

    /// Fills an empty directory from an export: the same state at the same versions, with the
    /// idempotency answers still within their window. Every event is replayed first, so a bad export
    /// changes nothing. Returns the last version.
    public static func importLines<StateType: HostedState>(_ lines: some Sequence<[UInt8]>, into directory: DataDirectory, as type: StateType.Type) throws(EventLogError) -> UInt64 {
        // The export is read and checked in full before the directory is touched: a bad one leaves
        // no trace there (not even the directory, or its lock).
        try refuseUnlessEmpty(directory)
        var snapshot: LogRecord?
        var state: StateType?
        var records: [LogRecord] = []
        let now = JournaledAnswer.now()
        for (index, bytes) in lines.enumerated() where !bytes.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) {
            let lineNumber = index + 1
            let json: JSON
            do { json = try JSONParser.carrier.parse(bytes) } catch {
                throw EventLogError(.other, "line \(lineNumber): not JSON: \(error)")
            }
            guard case .integer(let signed)? = json["version"], signed >= 0 else {
                throw EventLogError(.other, "line \(lineNumber): no \"version\" (a non-negative integer)")
            }
            let version = UInt64(signed)
            // The answers still within their window; a retry past it is a new request anyway.
            func answers(versions: ClosedRange<UInt64>) throws(EventLogError) -> [JournaledAnswer] {
                guard let value = json["answers"] else { return [] }
                do throws(EventLogError) {
                    return try ExportLine.answers(value, versions: versions).filter { $0.expiresAt > now }
                } catch {
                    throw EventLogError(.other, "line \(lineNumber): \(error.message)")
                }
            }
            if snapshot == nil {
                guard let value = json["state"] else {
                    throw EventLogError(.other, "line \(lineNumber): an export starts with {\"version\":N,\"state\":...}")
                }
                let record = LogRecord(version: version, payload: value.jsonBytes, answers: try answers(versions: 0...version))
                do throws(EventLogError) { try JournalFormat.checkWritable(record) } catch {
                    throw EventLogError(.other, "line \(lineNumber): \(error.message)")
                }
                state = try StateType(snapshot: record)
                snapshot = record
                continue
            }
            guard let event = json["event"] else {
                throw EventLogError(.other, "line \(lineNumber): expected {\"version\":N,\"event\":...}")
            }
            let expected = (records.last?.version ?? snapshot!.version) + 1
            guard version == expected else {
                throw EventLogError(.other, "line \(lineNumber): version \(version) where \(expected) was expected")
            }
            // The event's bytes as the export wrote them, when the line is in its form: the journal
            // then holds the events as they were recorded (as clients sent them, often), and
            // `/history` reads the same after a restore as before.
            // Not with a line break inside (a CR the line split left): records become lines of
            // `/history` and of the next export.
            let payload = ExportLine.payload(in: bytes, version: version, answers: json["answers"], member: .event)
                .flatMap { !$0.contains(13) && !$0.contains(10) && (try? JSONParser.carrier.parse($0)) == event ? $0 : nil }
            let record = LogRecord(version: version, payload: payload ?? event.jsonBytes, answers: try answers(versions: version...version))
            do throws(EventLogError) { try JournalFormat.checkWritable(record) } catch {
                throw EventLogError(.other, "line \(lineNumber): \(error.message)")
            }
            do { try state!.replay(record) } catch {
                throw EventLogError(.other, "line \(lineNumber): \(error.message)")
            }
            records.append(record)
        }
        guard let snapshot else { throw EventLogError(.other, "the export is empty") }
        try directory.create()
        let lock = try directory.lock()
        defer { close(lock) }
        // Again under the lock: a server or another import may have used the directory meanwhile.
        try refuseUnlessEmpty(directory)
        do throws(EventLogError) {
            // The journal first and the snapshot last: a directory without a snapshot is not one
            // reactord would start on, so a write that fails halfway leaves nothing that looks whole.
            // The marker says so to whoever finds it after a crash: another import clears what it
            // left, and the server and `check` name it.
            try directory.writeAtomically([], to: directory.importMarkerPath)
            let writer = try JournalWriter(directory: directory, segmentLimit: 16 << 20, lastSegment: nil, nextVersion: snapshot.version + 1)
            var start = 0
            while start < records.count {
                let end = min(records.count, start + 4096)
                if case .failure(let error) = writer.append(Array(records[start..<end]), policy: .batch) { throw error }
                start = end
            }
            writer.close()
            var bytes = JournalFormat.header(.snapshot, version: snapshot.version)
            JournalFormat.append(snapshot, to: &bytes)
            try directory.writeAtomically(bytes, to: directory.snapshotPath(version: snapshot.version))
            // Its versions may be numbered as another history's were: subscribers start over.
            var historyFailure: EventLogError?
            _ = directory.history(startingOver: true) { historyFailure = $0 }
            if let historyFailure { throw historyFailure }
            unlink(directory.importMarkerPath)
            try directory.fsyncDirectory(directory.path)
        } catch {
            // Leave the directory as empty as it was.
            clearUnfinishedImport(in: directory)
            throw error
        }
        return records.last?.version ?? snapshot.version
    }

    // MARK: Helpers

    /// Refuses a directory that holds snapshots or journal segments; one not there yet is empty,
    /// and so is one that holds only what an import that did not finish wrote (cleared here).
    private static func refuseUnlessEmpty(_ directory: DataDirectory) throws(EventLogError) {
        let exists = { FileManager.default.fileExists(atPath: $0) }
        if exists(directory.importMarkerPath) { clearUnfinishedImport(in: directory) }
        let snapshots = exists(directory.snapshotsPath) ? try directory.snapshotVersions() : []
        let segments = exists(directory.journalPath) ? try directory.segmentVersions() : []
        guard snapshots.isEmpty && segments.isEmpty else {
            throw EventLogError(.other, "\(directory.path) already holds a journal: import needs an empty data directory")
        }
    }

    /// Removes what an import wrote, the marker last.
    private static func clearUnfinishedImport(in directory: DataDirectory) {
        for version in (try? directory.segmentVersions()) ?? [] { unlink(directory.segmentPath(firstVersion: version)) }
        for version in (try? directory.snapshotVersions()) ?? [] { unlink(directory.snapshotPath(version: version)) }
        try? directory.fsyncDirectory(directory.journalPath)
        try? directory.fsyncDirectory(directory.snapshotsPath)
        unlink(directory.importMarkerPath)
        try? directory.fsyncDirectory(directory.path)
    }

    static func writeInitialSnapshot<StateType: HostedState>(_ state: StateType, in directory: DataDirectory) throws(EventLogError) {
        let payload: [UInt8]
        do { payload = try state.jsonValue().jsonBytes } catch {
            throw EventLogError(.other, "the initial state does not encode: \(error)")
        }
        try JournalFormat.checkWritable(LogRecord(version: 0, payload: payload))
        var bytes = JournalFormat.header(.snapshot, version: 0)
        JournalFormat.append(LogRecord(version: 0, payload: payload), to: &bytes)
        try directory.writeAtomically(bytes, to: directory.snapshotPath(version: 0))
    }

    static func read(_ directory: DataDirectory, repair: Bool, restore: (LogRecord) throws -> Void, replay: (LogRecord) throws -> Void) throws(EventLogError) -> JournalRecovery.Report {
        do {
            return try JournalRecovery(directory: directory).read(repair: repair, restore: restore, replay: replay)
        } catch let error as EventLogError {
            throw error
        } catch {
            throw EventLogError(.other, "\(error)")
        }
    }

    static func requireExisting(_ directory: DataDirectory) throws(EventLogError) {
        guard directory.isInitialized else {
            throw EventLogError(.other, "\(directory.path) is not a reactord data directory (no journal/ or snapshots/ in it)")
        }
    }
}
