/// Where a server keeps the events it applied, in order, so that no acknowledged event is lost.
///
/// The server's core and transports see only this interface: a journal of files on one machine
/// (`FileEventLog`) today; a log shared by several servers (a Redis stream, say) can take its place.
/// Every method is called on the loop thread and calls its completion there.
public protocol EventLog: AnyObject {
    /// The version of the last record appended durably.
    var lastVersion: UInt64 { get }

    /// The oldest version whose state the log can still rebuild: its oldest snapshot's.
    var oldestVersion: UInt64 { get }

    /// The name of the history the log holds (`HistoryName`): the same for as long as its versions
    /// keep their meaning.
    var history: String { get }

    /// Appends records whose versions follow `lastVersion` without a gap; `completion` runs once they
    /// are as durable as the log promises (on disk, with fsync), or with why they are not, in which
    /// case none of them is in the log.
    func append(_ records: [LogRecord], completion: @escaping (Result<Void, EventLogError>) -> Void)

    /// Up to `limit` records with versions greater than `version`, in order.
    func read(after version: UInt64, limit: Int, completion: @escaping (Result<[LogRecord], EventLogError>) -> Void)

    /// Saves the state at `version` (a durable version), encoded by `encode` away from the loop thread;
    /// the log may then drop the records up to `version`.
    func saveSnapshot(at version: UInt64, encode: @escaping @Sendable () throws -> [UInt8], completion: @escaping (Result<Void, EventLogError>) -> Void)

    /// The newest snapshot at or before `version`, if the log still has one.
    func loadSnapshot(atOrBefore version: UInt64, completion: @escaping (Result<LogRecord?, EventLogError>) -> Void)

    /// Finishes what is in flight and releases the log's files; `completion` runs after.
    func close(completion: @escaping () -> Void)

    /// How the log has been doing, for metrics.
    var statistics: EventLogStatistics { get }
}

/// What an event log reports for metrics.
public struct EventLogStatistics: Sendable {
    /// Seconds each append took to become durable (write and fsync, off the loop).
    public var appendSeconds = Histogram.latency
    public var appendFailures: UInt64 = 0
    public var bytesAppended: UInt64 = 0
    /// The newest snapshot: its version, size, and when it was written (seconds since 1970).
    public var snapshotVersion: UInt64 = 0
    public var snapshotBytes = 0
    public var snapshotTime: Double?

    public init() {}
}

/// Why an event log could not do what it was asked.
public struct EventLogError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The operating system refused (ENOSPC, EIO, EROFS...): `code` is the errno.
        case io(code: Int32)
        /// The bytes on disk are not what was written.
        case damaged
        /// The log is closed or failed earlier and cannot be trusted until restarted.
        case unavailable
        /// A shared log did not answer an append (the connection closed first): the records may be
        /// in it or not. If they are, they come back as the others' records would.
        case indeterminate
        /// What was asked for is no longer kept.
        case gone
        /// Sound, but holding a state deeper than `JSON.maximumDepth` (written before that limit
        /// was enforced), which `reactord repair` folds back within it.
        case beyondLimits
        /// A shared log: another server appended first, up to `head`; nothing was written. The
        /// appender catches up and tries again.
        case behind(head: UInt64)
        /// A shared log whose history is not the one this server knows (Redis restarted without
        /// its data, say): it must not append, nor show that history as its own.
        case diverged
        /// A shared log: idempotency keys the records answer (`keys`, as the answers named them)
        /// do not hold their requests' claims (refused, the key being another request's, or run
        /// out while the append was on its way); nothing was written.
        case fenced(keys: [String])
        /// Anything else (a state that would not encode).
        case other
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// A shared log's `.behind`, whatever the head.
    public var isBehind: Bool {
        if case .behind = kind { return true }
        return false
    }
}

/// When the journal calls fsync before it acknowledges events.
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// Each request is written and fsynced on its own before its acknowledgement: an event, or the
    /// events of a request of several together.
    case always
    /// Group commit: the events applied in one loop iteration are written and fsynced together
    /// (the next group gathers while an fsync runs), then acknowledged.
    case batch
    /// Written to the operating system before acknowledgement, never fsynced: survives a crash of
    /// reactord, not of the machine.
    case never
}
