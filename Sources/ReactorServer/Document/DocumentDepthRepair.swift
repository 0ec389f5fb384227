import Foundation

/// `reactord repair`: brings a data directory written before the depth limit was enforced back
/// within it, losing nothing.
///
/// Such a directory holds a snapshot, or journal events, that nest the document deeper than
/// `JSON.maximumDepth`; a server refuses to start on it rather than serve a state it could not
/// store again. The repair reads it without the limit, then keeps every value: a container that
/// would sit below the deepest allowed level is replaced by a string holding its JSON text, which
/// an operator can read back and restore by hand. The result is written as a snapshot of the last
/// version, like `reactord compact`, so every version stays what it was.
public enum DocumentDepthRepair {
    public struct Report: Sendable {
        /// The version the repaired snapshot was written at.
        public var version: UInt64
        /// Where a container was replaced by its JSON text; empty when nothing nested too deep
        /// (and then nothing was written).
        public var folded: [JSONPointer]
    }

    /// Repairs `directory`, which no server may be using.
    public static func repair(_ directory: DataDirectory) throws(EventLogError) -> Report {
        // Reading, applying, serializing and releasing a document thousands of levels deep recurses
        // once per level: it runs on a thread whose stack has room for that.
        let result = onLargeStack { () -> Result<Report, EventLogError> in
            Result { () throws(EventLogError) -> Report in try repairOnThisThread(directory) }
        }
        return try result.get()
    }

    private static func repairOnThisThread(_ directory: DataDirectory) throws(EventLogError) -> Report {
        try DataDirectoryOperations.requireExisting(directory)
        let lock = try directory.lock()
        defer { close(lock) }
        var document = JSONDocument()
        // Deeper than any reactord wrote (it crashed past some 14,000 levels), and within the stack.
        let unbounded = JSONParser(maxDepth: 1_000_000)
        let report = try DataDirectoryOperations.read(directory, repair: true, restore: { snapshot in
            document = JSONDocument(root: try unbounded.parse(snapshot.payload))
        }, replay: { record in
            let event = try JSONDocument.event(in: record)
            if let event = event as? DocumentEvent {
                // As it was applied the first time: without the depth check.
                _ = try document.applyRecordingChanges(event)
            } else {
                try document.apply(event)
            }
        })
        var folded: [JSONPointer] = []
        var path: [String] = []
        let root = fold(document.root, level: 0, path: &path, folded: &folded)
        guard !folded.isEmpty else { return Report(version: report.lastVersion, folded: []) }
        // The idempotency answers of the segments it removes go with it, as `compact`'s do.
        let now = JournaledAnswer.now()
        let snapshot = LogRecord(version: report.lastVersion, payload: root.jsonBytes, answers: report.answers.filter { $0.expiresAt > now })
        try FileEventLog.writeSnapshot(snapshot, in: directory, removingSegments: try directory.segmentVersions(),
                                       snapshots: try directory.snapshotVersions().filter { $0 < report.lastVersion })
        return Report(version: report.lastVersion, folded: folded)
    }

    /// `value`, reached through `level` containers, with every container that would nest deeper
    /// than `JSON.maximumDepth` replaced by its JSON text.
    static func fold(_ value: JSON, level: Int, path: inout [String], folded: inout [JSONPointer]) -> JSON {
        switch value {
        case .array, .object:
            guard level < JSON.maximumDepth else {
                folded.append(JSONPointer(tokens: path))
                return .string(value.jsonString)
            }
            guard value.nestingDepth(upTo: JSON.maximumDepth - level) > JSON.maximumDepth - level else { return value }
        default:
            return value
        }
        switch value {
        case .array(var elements):
            for index in elements.indices {
                path.append(String(index))
                elements[index] = fold(elements[index], level: level + 1, path: &path, folded: &folded)
                path.removeLast()
            }
            return .array(elements)
        case .object(var members):
            for index in members.values.indices {
                path.append(members.keys[index])
                members.values[index] = fold(members.values[index], level: level + 1, path: &path, folded: &folded)
                path.removeLast()
            }
            return .object(members)
        default:
            return value
        }
    }

    /// Runs `body` on a thread with a 1 GiB stack (address space; only what is touched is used).
    private static func onLargeStack<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        thread.stackSize = 1 << 30
        thread.start()
        done.wait()
        return result.withLock { $0! }
    }
}
