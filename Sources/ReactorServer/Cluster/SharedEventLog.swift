/// A log several servers append to, as one: besides appending what this server applied, it hands
/// over, in order, what the others appended (`SharedEventLog.onRecords`), which this server then
/// applies as it is, with no say. An append made on a history that moved on meanwhile fails with
/// `.behind`, having written nothing; `onRecords` brings what the others appended up to its head.
public protocol SharedEventLog: EventLog {
    /// Receives records appended to the log, in order of version (some may be this server's own,
    /// or ones it has already: the receiver skips what it has). Set once, before the first append.
    var onRecords: (([LogRecord]) -> Void)? { get set }
    /// The version this server has applied, asked when the log reads on: it need not hand over
    /// anything up to it.
    var appliedVersion: (() -> UInt64)? { get set }
    /// Whether the log can be appended to now (connected, and holding this server's history).
    var isReachable: Bool { get }
    /// The log's head when this server last connected to it (0 before it did): until it has applied
    /// that much, it is catching up, and not ready.
    var headWhenConnected: UInt64 { get }
    /// How this server stands with the others, for `GET /cluster` and metrics.
    var status: SharedLogStatus { get }

    /// Appends as `append(_:completion:)` does and, in the same step, records `answers` (the keys of
    /// the requests whose events these are): both go in, or neither.
    func append(_ records: [LogRecord], answering answers: [IdempotencyAnswer], completion: @escaping (Result<Void, EventLogError>) -> Void)

    /// Claims an idempotency key for all the servers sharing the log, for `milliseconds` at least,
    /// with `claim` (`SharedIdempotencyEntry.newClaim`): `completion` gets nil when this server has
    /// it (and then appends its answer with its events, or `settle`s it), or the entry another
    /// request made first. The claim reaches the log before any append sent after this call, so the
    /// request's events may be applied without waiting for the answer: an append carrying them
    /// while the key is not theirs is fenced off (`EventLogError.Kind.fenced`).
    func claimIdempotencyKey(_ key: String, claim: SharedIdempotencyEntry, milliseconds: UInt64,
                             completion: @escaping (Result<SharedIdempotencyEntry?, EventLogError>) -> Void)
    /// Records the answer to a key claimed with `claim`, or gives the key up (nil: a retry may try
    /// again); nothing, if the key no longer holds that claim.
    func settleIdempotencyKey(_ key: String, claim: SharedIdempotencyEntry, entry: SharedIdempotencyEntry?, milliseconds: UInt64)
}

/// What a server sharing a log knows of it.
public struct SharedLogStatus: Sendable {
    public var node: String
    /// The newest version the server knows the log holds.
    public var head: UInt64
    /// "connected", "connecting", or why the connection is down.
    public var connection: String
    /// The other servers seen alive recently, and when (ms since 1970).
    public var peers: [String: UInt64]
    /// Why the server refuses to append, when the log holds another history than its own.
    public var lostHistory: String?
    /// Set while another server goes by this one's name.
    public var nameClash: String?
    public var conflicts: UInt64
    public var reconnects: UInt64

    public init(node: String, head: UInt64, connection: String, peers: [String: UInt64], lostHistory: String?, nameClash: String? = nil,
                conflicts: UInt64, reconnects: UInt64) {
        self.node = node
        self.head = head
        self.connection = connection
        self.peers = peers
        self.lostHistory = lostHistory
        self.nameClash = nameClash
        self.conflicts = conflicts
        self.reconnects = reconnects
    }
}
