import CUV
import DequeModule
import Foundation
import Logging

/// The event log of a cluster: one Redis stream that every server of the cluster appends to and
/// reads from (see `ClusterKeys` for the keys, `ClusterScripts` for how they change).
///
/// Two connections, both on the loop thread: one for commands (appends, reads, snapshots, the
/// heartbeat), pipelined; one that does nothing but wait on `XREAD BLOCK` for what the others
/// append. A connection that closes, or that Redis leaves unanswered past the timeout, is opened
/// again after a pause; meanwhile appends fail at once as `.unavailable`. On every connection,
/// before the tail reads anything, the server checks that Redis still holds the history it applied:
/// the epoch it started with, and the newest entry it knows, as it knew it. A Redis that lost (or
/// replaced) that history, whether empty, restored from an older backup or a replica that lacked
/// the last appends, with other nodes appending since: from then on every append fails as
/// `.diverged`, and nothing it holds is handed over.
public final class RedisStreamLog: SharedEventLog {
    public struct Options: Sendable {
        public var host: String
        public var port: Int32
        public var cluster: String
        public var node: String
        /// How long Redis may take to answer before it counts as unreachable.
        public var timeoutMilliseconds: UInt64
        /// Replicas that must confirm an append (Redis's `WAIT`) before it is acknowledged; 0 for none.
        public var waitReplicas: Int
        /// The credentials every connection sends first (`AUTH`): a password alone for Redis's
        /// default user (`requirepass`), or an ACL user's name and password; nil for none.
        public var credentials: RedisCredentials?

        /// How long Redis may take to answer by default, in seconds.
        public static let defaultTimeoutSeconds = 2.0

        public init(host: String, port: Int32, cluster: String, node: String,
                    timeoutMilliseconds: UInt64 = UInt64(defaultTimeoutSeconds * 1_000), waitReplicas: Int = 0,
                    credentials: RedisCredentials? = nil) {
            self.host = host
            self.port = port
            self.cluster = cluster
            self.node = node
            self.timeoutMilliseconds = timeoutMilliseconds
            self.waitReplicas = waitReplicas
            self.credentials = credentials
        }
    }

    /// The newest version this server knows the stream holds.
    public private(set) var lastVersion: UInt64
    /// The version of the newest snapshot in Redis: the stream holds the entries after it.
    public private(set) var oldestVersion: UInt64
    public private(set) var statistics = EventLogStatistics()
    public private(set) var headWhenConnected: UInt64 = 0
    public var onRecords: (([LogRecord]) -> Void)?
    public var appliedVersion: (() -> UInt64)?

    public let options: Options
    /// The node's name as every append and heartbeat sends it, and as its entries hold it.
    private let nodeBytes: [UInt8]
    public let keys: ClusterKeys
    public let epoch: String
    /// The cluster's epoch: every node's versions are the cluster's.
    public var history: String { epoch }
    /// "connected", "connecting", or why the connection is down ("disconnected: ...",
    /// "unauthenticated: ...").
    public private(set) var connectionState = "connecting"
    /// Set once Redis turned out to hold another history than this server's (a changed epoch).
    public private(set) var lostHistory: String?
    /// The other nodes that said they were alive, and when (ms since 1970).
    public private(set) var peers: [String: UInt64] = [:]
    /// When this node last beat, by Redis's clock (ms), as the heartbeat's answer said; 0 when the
    /// last beat went unanswered (it may have run: its time is not known).
    private var lastBeat: UInt64 = 0
    /// One heartbeat at a time: a second sent before the first's answer would take the first's
    /// write for another node's.
    private var beating = false
    /// Set while another node beats under this node's name (two started with one `--node-name`):
    /// nothing goes wrong in the log, whose entries are told apart by version, but `/cluster` and
    /// the logs would mix the two up.
    private var nameClash: String?
    /// Why Redis refuses this node's writes (out of memory, a read-only replica, an ACL), while it
    /// does: the node is not ready, though connected. Cleared by the next append or heartbeat Redis takes.
    private var writesRefused: String?
    /// The newest entry this node knows the stream holds: its own last append, or the last entry
    /// its tail brought. Checked again on every connection (`checkHistory`).
    private var knownEntry: StreamEntryFormat.Identity?
    /// Whether the history was checked since the connections last opened.
    private var historyChecked = false
    /// How many times a connection to Redis was opened again after it closed.
    public private(set) var reconnects: UInt64 = 0
    /// Appends answered `.behind`: another node got there first, or holds the next append.
    public private(set) var conflicts: UInt64 = 0
    /// This node's appends in a row that another node got ahead of: past a few, it claims the next
    /// append (see `ClusterScripts.append`).
    private var refusedInARow = 0

    /// The newest records the tail brought, in order without a gap: reads within them (a page of
    /// `/history`, a catch-up) are answered here, without Redis, and still while it is unreachable.
    private var recent = RecentRecords(maxCount: recentRecords)
    static var recentRecords: Int { 4_096 }

    private let loop: EventLoop
    private let logger: Logger
    private var commands: RedisConnection?
    private var tail: RedisConnection?
    private var tailCursor: UInt64
    private var reconnectTimer: LoopTimer?
    private var heartbeat: LoopTimer?
    private var closed = false
    /// Whether an append is on its way, and the idempotency keys' claims held back meanwhile, to go
    /// out with the next append (see `claimIdempotencyKey`).
    private var appending = false
    private var heldClaims: [(command: [UInt8], reply: (RedisReply) -> Void)] = []
    private static let appendSHA = sha1Hex(ClusterScripts.append)
    private static let snapshotSHA = sha1Hex(ClusterScripts.saveSnapshot)
    private static let settleSHA = sha1Hex(ClusterScripts.settleIdempotencyKey)
    private static let heartbeatSHA = sha1Hex(ClusterScripts.heartbeat)

    /// A log over a cluster found (or created) by `ClusterBootstrap`, whose state this server has
    /// up to `version`, and whose stream held up to `head` when it joined.
    public init(loop: EventLoop, options: Options, epoch: String, version: UInt64, head: UInt64? = nil, snapshotVersion: UInt64, logger: Logger) {
        self.loop = loop
        self.options = options
        nodeBytes = Array(options.node.utf8)
        self.keys = ClusterKeys(cluster: options.cluster)
        self.epoch = epoch
        self.logger = logger
        lastVersion = max(version, head ?? version)
        oldestVersion = snapshotVersion
        tailCursor = version
    }

    /// Opens the connections; from the loop thread, once `onRecords` is set.
    public func start() {
        precondition(loop.isCurrent)
        connect()
        let heartbeat = LoopTimer(loop: loop) { [unowned self] in beat() }
        heartbeat.start(after: 0, repeat: 1_000)
        self.heartbeat = heartbeat
    }

    /// Both connections open, Redis answered on each (a frozen Redis still accepts connections), and
    /// the history it holds checked.
    public var isConnected: Bool {
        commandsAnswered && tailAnswered && historyChecked && commands?.isConnected == true && tail?.isConnected == true
    }
    private var commandsAnswered = false
    /// Why Redis last refused this node's credentials, logged once until it connects.
    private var refusal: String?
    private var tailAnswered = false

    public var isReachable: Bool { isConnected && lostHistory == nil && writesRefused == nil }

    public var status: SharedLogStatus {
        SharedLogStatus(node: options.node, head: lastVersion, connection: writesRefused.map { "refusing this node's writes: \($0)" } ?? connectionState,
                        peers: peers, lostHistory: lostHistory, nameClash: nameClash, conflicts: conflicts, reconnects: reconnects)
    }

    // MARK: Connections

    /// Opens both connections, to the address the host name resolves to now (resolved again at each
    /// reconnection: a failover may move the name), looked up off the loop thread (`HostAddress`).
    private func connect() {
        guard !closed else { return }
        connectionState = "connecting"
        commandsAnswered = false
        tailAnswered = false
        if let address = HostAddress.numeric(options.host) { return connect(to: address) }
        let host = options.host
        loop.runInThreadPool({ HostAddress.resolve(host) }) { [weak self] resolved in
            guard let self, !closed else { return }
            switch resolved {
            case .success(let address): connect(to: address)
            case .failure(let failure): lost("cannot resolve \(host): \(failure.reason)", pauseMilliseconds: 1_000)
            }
        }
    }

    private func connect(to address: String) {
        let commands = RedisConnection(loop: loop, host: address, port: options.port, timeoutMilliseconds: options.timeoutMilliseconds,
                                       onConnected: { [unowned self] in
                                           authenticate(self.commands)
                                           self.commands?.send(RedisCommand.encode(["PING"])) { [unowned self] reply in
                                               guard reply.string == "PONG" else { return refused(reply) }
                                               commandsAnswered = true
                                               connected()
                                           }
                                       },
                                       onClosed: { [unowned self] reason in lost(reason) })
        let tail = RedisConnection(loop: loop, host: address, port: options.port, timeoutMilliseconds: options.timeoutMilliseconds,
                                   onConnected: { [unowned self] in
                                       authenticate(self.tail)
                                       self.tail?.send(RedisCommand.encode(["PING"])) { [unowned self] reply in
                                           guard reply.string == "PONG" else { return refused(reply) }
                                           tailAnswered = true
                                           connected()
                                       }
                                   },
                                   onClosed: { [unowned self] reason in lost(reason) })
        self.commands = commands
        self.tail = tail
        if let reason = commands.closeReason ?? tail.closeReason { lost(reason) }
    }

    /// Sends the credentials first, pipelined before the `PING` that tells the connection is usable:
    /// refused, the `PING` is refused too, and the node stays unready, saying why.
    private func authenticate(_ connection: RedisConnection?) {
        guard let credentials = options.credentials, let connection else { return }
        connection.send(credentials.authCommand) { [weak self] reply in
            guard let self, reply.string != "OK", case .error(let message) = reply else { return }
            let reason = "unauthenticated: Redis refused the credentials in --redis: \(message)"
            if refusal != reason { logger.error("cannot use Redis", metadata: ["reason": "\(message)"]) }
            refusal = reason
            connectionState = reason
        }
    }

    /// Redis answered a connection's first `PING` with an error: it is loading its data after a
    /// restart (`LOADING`), or refuses the credentials. Both connections are opened again after a
    /// pause, until it serves; the reason stays what `GET /cluster` and `/readyz` say meanwhile.
    private func refused(_ reply: RedisReply) {
        guard case .error(let message) = reply else { return }  // unanswered: the close comes back to `lost`
        lost(connectionState.hasPrefix("unauthenticated") ? connectionState : "Redis answered PING with: \(message)",
             pauseMilliseconds: 1_000)
    }

    /// Both connections answered: once the history Redis holds is checked, the node is connected,
    /// and its tail reads on.
    private func connected() {
        guard commandsAnswered, tailAnswered, !historyChecked, let commands else { return }
        loadScripts(on: commands)
        checkHistory { [unowned self] in
            historyChecked = true
            refusal = nil
            connectionState = "connected"
            logger.notice("connected to Redis", metadata: ["redis": "\(options.host):\(options.port)", "cluster": "\(options.cluster)"])
            beat()
            readTail()
        }
    }

    /// Loads every script this node runs, before anything else is sent on the connection, so that
    /// an `EVALSHA` finds its script rather than cost a round trip more (`send(script:)`'s fallback,
    /// kept for a Redis whose scripts were flushed while the node was connected).
    private func loadScripts(on connection: RedisConnection) {
        for script in [ClusterScripts.append, ClusterScripts.settleIdempotencyKey,
                       ClusterScripts.saveSnapshot, ClusterScripts.heartbeat] {
            connection.send(RedisCommand.encode(["SCRIPT", "LOAD", script])) { _ in }
        }
    }

    /// Checks that Redis holds the history this node applied, then calls `proceed` (also when it
    /// does not: the node then refuses writes and its tail reads nothing). The epoch must be this
    /// node's, the head no lower than what it applied, and the newest entry it knows still there as
    /// it knew it: a Redis that came back with less (a failover, an older backup) to which other
    /// nodes appended since has the same epoch and a head as high, and another entry at that
    /// version. An entry trimmed since, behind a snapshot, cannot be checked, and is taken as held.
    private func checkHistory(then proceed: @escaping () -> Void) {
        guard let commands else { return }
        let applied = appliedVersion?() ?? 0
        commands.send(RedisCommand.encode(["HMGET", keys.meta, "epoch", "version"])) { [unowned self] reply in
            guard let fields = reply.elements, fields.count == 2 else { return }  // refused or unanswered: the close comes back to `lost`
            let current = fields[0].string
            if current != epoch { historyLost(found: current); return proceed() }
            let head = fields[1].integer ?? 0
            if head < Int64(clamping: applied) { streamWentBack(to: UInt64(max(0, head)), applied: applied); return proceed() }
            headWhenConnected = UInt64(head)
            lastVersion = max(lastVersion, headWhenConnected)
            guard let known = knownEntry else { return proceed() }
            let id = ClusterKeys.entryID(known.version)
            commands.send(RedisCommand.encode(["XRANGE", keys.log, id, id])) { [unowned self] reply in
                guard let entries = reply.elements else { return }
                if let entry = entries.first {
                    if StreamEntryFormat.Identity(entry: entry) != known { historyReplaced(at: known) }
                    return proceed()
                }
                commands.send(RedisCommand.encode(["XRANGE", keys.log, "-", "+", "COUNT", "1"])) { [unowned self] reply in
                    guard let entries = reply.elements else { return }
                    let oldest = entries.first.flatMap(StreamEntryFormat.Identity.init(entry:))?.version
                    if oldest.map({ $0 <= known.version }) ?? true { historyReplaced(at: known) }
                    proceed()
                }
            }
        }
    }

    /// One of the connections closed: both are opened again after a pause.
    private func lost(_ reason: String, pauseMilliseconds: UInt64 = 250) {
        guard reconnectTimer == nil else { return }
        if connectionState == "connected" && !closed {
            logger.error("lost the connection to Redis", metadata: ["reason": "\(reason)"])
        }
        connectionState = reason.hasPrefix("unauthenticated") ? reason : "disconnected: \(reason)"
        // Who is alive is Redis's to say: cut off from it, this node knows of no one.
        peers.removeAll()
        commandsAnswered = false
        tailAnswered = false
        historyChecked = false
        if !closed {
            // Set before the other connection is closed: its own close comes back here.
            let timer = LoopTimer(loop: loop) { [unowned self] in
                reconnectTimer = nil
                reconnects += 1
                connect()
            }
            timer.start(after: pauseMilliseconds)
            reconnectTimer = timer
        }
        commands?.close()
        tail?.close()
    }

    // MARK: The tail

    /// Waits for what follows the newer of what was handed over and what this server applied.
    private func readTail() {
        guard let tail, tail.isConnected, lostHistory == nil else { return }
        let cursor = max(tailCursor, appliedVersion?() ?? 0)
        let command = RedisCommand.encode(["XREAD", "COUNT", "1024", "BLOCK", "1000", "STREAMS", keys.log, ClusterKeys.entryID(cursor)])
        tail.send(command, extraMilliseconds: 1_000) { [weak self] reply in
            guard let self else { return }
            switch reply {
            case .unanswered: return  // the connection is closing; it is opened again
            case .error(let message): return lost("Redis refused the tail's read: \(message)")
            default: break
            }
            if let entries = reply.elements?.first?.elements?.last?.elements {
                do throws(EventLogError) {
                    let records = try StreamEntryFormat.records(of: entries)
                    if let last = records.last {
                        if let entry = entries.last.flatMap(StreamEntryFormat.Identity.init(entry:)) { know(entry) }
                        if lostHistory == nil { remember(records) }
                        tailCursor = max(tailCursor, last.version)
                        lastVersion = max(lastVersion, last.version)
                        if lostHistory == nil { onRecords?(records) }
                    }
                } catch {
                    return unreadable(error)
                }
            }
            readTail()
        }
    }

    private func know(_ entry: StreamEntryFormat.Identity) {
        if entry.version >= knownEntry?.version ?? 0 { knownEntry = entry }
    }

    private func remember(_ records: [LogRecord]) {
        for record in records {
            if let last = recent.last {
                if record.version <= last.version { continue }
                if record.version != last.version + 1 { recent.removeAll() }
            }
            recent.append(record)
        }
    }

    /// The records after `version` from `recent`, if it holds the first of them.
    private func recentRecords(after version: UInt64, limit: Int) -> [LogRecord]? {
        recent.after(version, limit: limit)
    }

    /// The stream holds what this node cannot read (written by something else than reactord): it
    /// stops following, and refuses writes, rather than show its subscribers another history.
    private func unreadable(_ error: EventLogError) {
        guard lostHistory == nil else { return }
        lostHistory = "\(error.message). This node refuses writes and keeps serving the state it has; see docs/cluster.md."
        logger.critical("the cluster's stream in Redis cannot be read", metadata: ["detail": "\(lostHistory!)"])
    }

    // MARK: The heartbeat

    /// Says this node is alive (`ClusterScripts.heartbeat`), and reads the cluster's meta: its epoch
    /// (a changed one means Redis lost the history), its head and its newest snapshot, and who else
    /// is alive. Whether Redis takes the script tells whether it takes this node's writes.
    private func beat() {
        guard let commands, isConnected, !beating else { return }
        beating = true
        // What this node had applied when it asked: all of it came from Redis before the question,
        // so a head below it means Redis lost events. (What the tail brings meanwhile does not count.)
        let appliedWhenAsked = appliedVersion?() ?? 0
        let arguments: [[UInt8]] = [Array("EVALSHA".utf8), Array(Self.heartbeatSHA.utf8), Array("2".utf8), Array(keys.meta.utf8), Array(keys.nodes.utf8),
                                    nodeBytes, Array(String(ClusterScripts.forgetNodesAfterMilliseconds).utf8), Array(String(lastBeat).utf8)]
        send(script: ClusterScripts.heartbeat, arguments: arguments, on: commands) { [weak self] reply in
            guard let self else { return }
            beating = false
            if case .unanswered = reply { lastBeat = 0 }
            if case .error(let message) = reply { return refusesWrites(message) }
            guard let parts = reply.elements, parts.count == 4, let meta = parts[0].fields, let nodes = parts[1].fields,
                  let now = parts[2].integer else { return }
            writesRefused = nil
            lastBeat = UInt64(max(now, 0))
            if let twin = parts[3].integer {
                if nameClash == nil {
                    logger.error("another node runs under this node's name: give each node a --node-name of its own", metadata: ["node": "\(options.node)"])
                }
                nameClash = "another node beat under the name \(options.node) at \(twin) ms (Redis's clock) since this one last did: give each node a --node-name of its own"
            } else {
                nameClash = nil
            }
            let current = meta["epoch"].map { String(decoding: $0, as: UTF8.self) }
            if current != epoch { return historyLost(found: current) }
            if let head = meta["version"].flatMap({ UInt64(String(decoding: $0, as: UTF8.self)) }) {
                if head < appliedWhenAsked { return streamWentBack(to: head, applied: appliedWhenAsked) }
                lastVersion = max(lastVersion, head)
            }
            if let snapshot = meta["snapshot"].flatMap({ UInt64(String(decoding: $0, as: UTF8.self)) }) { oldestVersion = snapshot }
            var peers: [String: UInt64] = [:]
            for (node, seen) in nodes where node != options.node {
                if let seen = UInt64(String(decoding: seen, as: UTF8.self)), UInt64(now) < seen + 10_000 { peers[node] = seen }
            }
            self.peers = peers
        }
    }

    /// Redis answered a write of this node's with an error: it is out of memory, a read-only
    /// replica, or an ACL forbids the command. Every append would fail alike, so the node says it
    /// is not ready until Redis takes one again.
    private func refusesWrites(_ message: String) {
        if writesRefused == nil { logger.error("Redis refuses this node's writes", metadata: ["reason": "\(message)"]) }
        writesRefused = message
    }

    /// The same epoch and a head as high, but not the entry this node knows at its version: Redis
    /// lost acknowledged events (a failover, an older backup) and other nodes appended since.
    private func historyReplaced(at known: StreamEntryFormat.Identity) {
        guard lostHistory == nil else { return }
        lostHistory = "the shared log in Redis no longer holds the entry of version \(known.version) that this node applied: Redis lost events it had acknowledged (a failover to a replica that lacked them, or an older backup) and other nodes appended others since: a history this node does not share. This node refuses writes and keeps serving the state it has; see docs/cluster.md."
        logger.critical("the cluster's stream in Redis holds another history", metadata: ["detail": "\(lostHistory!)"])
    }

    /// The same epoch, but a head below what this node applied: Redis lost acknowledged events (a
    /// failover to a replica that had not received them, a restore from an older backup).
    private func streamWentBack(to head: UInt64, applied: UInt64) {
        guard lostHistory == nil else { return }
        lostHistory = "the shared log's head in Redis is version \(head), below version \(applied) that this node applied: Redis lost events it had acknowledged (a failover to a replica that lacked them, or an older backup). This node refuses writes and keeps serving the state it has; see docs/cluster.md."
        logger.critical("the cluster's stream in Redis went back", metadata: ["detail": "\(lostHistory!)"])
    }

    private func historyLost(found: String?) {
        guard lostHistory == nil else { return }
        let what = found.map { "an epoch of \($0)" } ?? "no cluster at all"
        lostHistory = "Redis holds \(what) where this node knows epoch \(epoch): it lost the history this node applied (restarted without its data?) or holds another cluster's. This node refuses writes and keeps serving the state it has; restart the nodes once Redis holds the right data, or start a new cluster deliberately."
        logger.critical("the cluster's history in Redis is not this node's", metadata: ["detail": "\(lostHistory!)"])
    }

    // MARK: EventLog

    public func append(_ records: [LogRecord], completion: @escaping (Result<Void, EventLogError>) -> Void) {
        append(records, answering: [], completion: completion)
    }

    public func append(_ records: [LogRecord], answering answers: [IdempotencyAnswer], completion: @escaping (Result<Void, EventLogError>) -> Void) {
        if let lostHistory { return completion(.failure(EventLogError(.diverged, lostHistory))) }
        guard isConnected, let commands, let first = records.first else {
            statistics.appendFailures += 1
            return completion(.failure(EventLogError(.unavailable, "Redis is not reachable (\(connectionState))")))
        }
        let started = DispatchTime.now().uptimeNanoseconds
        sendHeldClaims()
        appending = true
        let completion = { [weak self] (result: Result<Void, EventLogError>) in
            self?.appending = false
            completion(result)
            // Claims no append took along (their requests' events did not need one): on their own.
            self?.sendHeldClaims()
        }
        let group = StreamEntryFormat.group(records)
        var arguments: [[UInt8]] = [Array("EVALSHA".utf8), Array(Self.appendSHA.utf8), Array(String(2 + answers.count).utf8),
                                    Array(keys.meta.utf8), Array(keys.log.utf8)]
        arguments += answers.map { Array(keys.idempotency($0.key).utf8) }
        arguments += [Array(String(first.version - 1).utf8), Array(epoch.utf8), nodeBytes,
                      Array(String(records.count).utf8), group, Array(String(refusedInARow).utf8)]
        for answer in answers { arguments += [answer.entry.bytes, Array(String(answer.milliseconds).utf8), answer.claim.bytes] }
        send(script: ClusterScripts.append, arguments: arguments, on: commands) { [weak self] reply in
            guard let self else { return }
            let parts = reply.elements ?? []
            let answer = parts.prefix(2).compactMap(\.string)
            switch (answer.first, answer.count == 2 ? answer[1] : nil) {
            case ("ok", let head?):
                refusedInARow = 0
                writesRefused = nil
                lastVersion = UInt64(head) ?? lastVersion
                know(StreamEntryFormat.Identity(version: lastVersion, node: nodeBytes, records: group))
                statistics.bytesAppended += UInt64(records.reduce(0) { $0 + $1.payload.count })
                confirmByReplicas(commands) { [weak self] confirmed in
                    guard let self else { return }
                    statistics.appendSeconds.observe(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                    completion(confirmed)
                }
            case ("behind", let head?):
                let head = UInt64(head) ?? 0
                if head < first.version - 1 {
                    streamWentBack(to: head, applied: first.version - 1)
                    return completion(.failure(EventLogError(.diverged, lostHistory ?? "the shared log went back")))
                }
                conflicts += 1
                refusedInARow += 1
                lastVersion = max(lastVersion, head)
                completion(.failure(EventLogError(.behind(head: head), "another node appended up to version \(head) first")))
            case ("wait", let head?):
                // Another node claimed the next append: what it appends is the next thing to apply.
                let head = UInt64(head) ?? 0
                conflicts += 1
                refusedInARow += 1
                completion(.failure(EventLogError(.behind(head: head + 1), "another node holds the append after version \(head)")))
            case ("fenced", _):
                let named = Dictionary(answers.map { (keys.idempotency($0.key), $0.key) }, uniquingKeysWith: { first, _ in first })
                let fenced = parts.dropFirst().compactMap { $0.string.flatMap { named[$0] } }
                completion(.failure(EventLogError(.fenced(keys: fenced), "idempotency keys these events answer are not their requests' own (the claim was refused, or ran out); nothing was written")))
            case ("epoch", let found):
                historyLost(found: found.flatMap { $0.isEmpty ? nil : $0 })
                completion(.failure(EventLogError(.diverged, lostHistory ?? "the cluster's epoch changed")))
            default:
                statistics.appendFailures += 1
                if case .unanswered(let reason) = reply {
                    return completion(.failure(EventLogError(.indeterminate, "Redis did not answer the append (\(reason)), so it may hold it or not")))
                }
                if let message = reply.errorMessage { refusesWrites(message) }
                completion(.failure(EventLogError(.unavailable, "Redis refused the append: \(reply.errorMessage ?? "\(reply)")")))
            }
        }
    }

    /// With `waitReplicas`, waits (Redis's `WAIT`) until that many replicas have what was appended.
    /// Fewer within the timeout fails the append, though the primary holds it: replication in
    /// Redis is asynchronous, and `WAIT` tells, it does not undo (see docs/cluster.md).
    private func confirmByReplicas(_ commands: RedisConnection, _ completion: @escaping (Result<Void, EventLogError>) -> Void) {
        let wanted = options.waitReplicas
        guard wanted > 0 else { return completion(.success(())) }
        let command = RedisCommand.encode(["WAIT", String(wanted), String(options.timeoutMilliseconds)])
        commands.send(command, extraMilliseconds: options.timeoutMilliseconds) { [weak self] reply in
            guard let self else { return }
            guard let confirmed = reply.integer, confirmed >= Int64(wanted) else {
                statistics.appendFailures += 1
                let count = reply.integer.map(String.init) ?? "no"
                return completion(.failure(EventLogError(.unavailable, "only \(count) of the \(wanted) replicas asked for (--redis-wait-replicas) confirmed the append within \(options.timeoutMilliseconds) ms; the primary holds it")))
            }
            completion(.success(()))
        }
    }

    /// `EVALSHA`, and `EVAL` with the script's text when Redis does not have it (it restarted).
    private func send(script: String, arguments: [[UInt8]], on connection: RedisConnection, _ reply: @escaping (RedisReply) -> Void) {
        connection.send(RedisCommand.encode(arguments)) { answer in
            guard answer.errorMessage?.hasPrefix("NOSCRIPT") == true else { return reply(answer) }
            var withText = arguments
            withText[0] = Array("EVAL".utf8)
            withText[1] = Array(script.utf8)
            connection.send(RedisCommand.encode(withText), reply)
        }
    }

    public func read(after version: UInt64, limit: Int, completion: @escaping (Result<[LogRecord], EventLogError>) -> Void) {
        // Before the newest snapshot Redis says what is kept (the next snapshot trims there), so
        // that every node answers alike whatever it holds in memory: memory serves it only while
        // Redis is away, or holds another history than this node's.
        if version >= oldestVersion || !isConnected || lostHistory != nil, let records = recentRecords(after: version, limit: limit) {
            return completion(.success(records))
        }
        if let lostHistory { return completion(.failure(EventLogError(.diverged, lostHistory))) }
        guard isConnected, let commands else {
            return completion(.failure(EventLogError(.unavailable, "Redis is not reachable (\(connectionState))")))
        }
        // From the entry that holds version + 1: the one whose last version is that or the next.
        let command = RedisCommand.encode(["XRANGE", keys.log, ClusterKeys.entryID(version + 1), "+", "COUNT", String(max(limit, 1))])
        commands.send(command) { [weak self] reply in
            guard let self else { return }
            // Found out while the read was on its way: what Redis answered may be another history.
            if let lostHistory { return completion(.failure(EventLogError(.diverged, lostHistory))) }
            guard let entries = reply.elements else {
                return completion(.failure(EventLogError(.unavailable, "Redis refused a read: \(reply.errorMessage ?? "\(reply)")")))
            }
            let records: [LogRecord]
            do throws(EventLogError) { records = try StreamEntryFormat.records(of: entries, after: version, limit: max(limit, 1)) } catch {
                return completion(.failure(error))
            }
            if let first = records.first, first.version != version + 1 {
                return completion(.failure(EventLogError(.gone, "Redis no longer keeps the events right after version \(version); its newest snapshot is of version \(max(oldestVersion, first.version - 1))")))
            }
            if records.isEmpty && version < oldestVersion {
                return completion(.failure(EventLogError(.gone, "Redis no longer keeps the events right after version \(version); its newest snapshot is of version \(oldestVersion)")))
            }
            completion(.success(records))
        }
    }

    public func saveSnapshot(at version: UInt64, encode: @escaping @Sendable () throws -> [UInt8], completion: @escaping (Result<Void, EventLogError>) -> Void) {
        loop.runInThreadPool({ Result { try encode() } }) { [weak self] encoded in
            guard let self else { return }
            guard case .success(let state) = encoded else {
                return completion(.failure(EventLogError(.other, "the state at version \(version) does not encode")))
            }
            guard isConnected, let commands else {
                return completion(.failure(EventLogError(.unavailable, "Redis is not reachable (\(connectionState))")))
            }
            let arguments: [[UInt8]] = [Array("EVALSHA".utf8), Array(Self.snapshotSHA.utf8), Array("3".utf8),
                                        Array(keys.meta.utf8), Array(keys.snapshot.utf8), Array(keys.log.utf8),
                                        Array(epoch.utf8), Array(String(version).utf8), state]
            send(script: ClusterScripts.saveSnapshot, arguments: arguments, on: commands) { [weak self] reply in
                guard let self else { return }
                guard let saved = reply.integer else {
                    return completion(.failure(EventLogError(.unavailable, "Redis refused a snapshot: \(reply.errorMessage ?? "\(reply)")")))
                }
                if saved == 1 {
                    oldestVersion = max(oldestVersion, version)
                    statistics.snapshotVersion = version
                    statistics.snapshotBytes = state.count
                    statistics.snapshotTime = Date().timeIntervalSince1970
                }
                completion(.success(()))
            }
        }
    }

    public func loadSnapshot(atOrBefore version: UInt64, completion: @escaping (Result<LogRecord?, EventLogError>) -> Void) {
        if let lostHistory { return completion(.failure(EventLogError(.diverged, lostHistory))) }
        guard isConnected, let commands else {
            return completion(.failure(EventLogError(.unavailable, "Redis is not reachable (\(connectionState))")))
        }
        commands.send(RedisCommand.encode(["HGETALL", keys.snapshot])) { [weak self] reply in
            if let lostHistory = self?.lostHistory { return completion(.failure(EventLogError(.diverged, lostHistory))) }
            guard let fields = reply.fields, let state = fields["state"],
                  let saved = fields["version"].flatMap({ UInt64(String(decoding: $0, as: UTF8.self)) }) else {
                return completion(.failure(EventLogError(.unavailable, "Redis holds no snapshot: \(reply.errorMessage ?? "\(reply)")")))
            }
            completion(.success(saved <= version ? LogRecord(version: saved, payload: state) : nil))
        }
    }

    // MARK: Idempotency keys

    public func claimIdempotencyKey(_ key: String, claim: SharedIdempotencyEntry, milliseconds: UInt64,
                                    completion: @escaping (Result<SharedIdempotencyEntry?, EventLogError>) -> Void) {
        if let lostHistory { return completion(.failure(EventLogError(.diverged, lostHistory))) }
        guard let commands, isConnected else {
            return completion(.failure(EventLogError(.unavailable, "Redis is not reachable (\(connectionState))")))
        }
        // The claim outlives any append of this request's that can still land: this node gives up
        // on one after the timeout (and the bytes of one sent late are on their way a while yet).
        // Expired sooner, a retry on another node would apply the request while its first append
        // may still go in after it.
        let lifetime = max(milliseconds, 2 * options.timeoutMilliseconds + 1_000)
        // One command, no script (Redis 7): sets the claim unless the key holds an entry, and
        // answers that entry (nil when it set the claim). A script would cost Redis several times
        // as much, once per keyed request.
        let command = RedisCommand.encode([Array("SET".utf8), Array(keys.idempotency(key).utf8), claim.bytes,
                                           Array("NX".utf8), Array("GET".utf8), Array("PX".utf8), Array(String(lifetime).utf8)])
        let reply = { (reply: RedisReply) in
            switch reply {
            case .null:
                completion(.success(nil))
            case .bulk(let bytes):
                guard let entry = SharedIdempotencyEntry(bytes: bytes) else {
                    return completion(.failure(EventLogError(.damaged, "an idempotency key in Redis holds what reactord never writes")))
                }
                completion(.success(entry))
            default:
                completion(.failure(EventLogError(.unavailable, "Redis refused an idempotency key: \(reply.errorMessage ?? "\(reply)")")))
            }
        }
        // While an append is on its way, the claim waits for the next one, which carries the
        // request's events: sent alone, it would reach Redis first and start a turn of its own,
        // whose fsync (`appendfsync always`) the append would then wait behind.
        if appending {
            heldClaims.append((command, reply))
        } else {
            commands.send(command, reply)
        }
    }

    /// Sends the claims held back while an append was on its way, ahead of anything sent after.
    private func sendHeldClaims() {
        guard !heldClaims.isEmpty else { return }
        let claims = heldClaims
        heldClaims.removeAll()
        for claim in claims {
            guard let commands, isConnected else {
                claim.reply(.error("not connected to Redis (\(connectionState))"))
                continue
            }
            commands.send(claim.command, claim.reply)
        }
    }

    public func settleIdempotencyKey(_ key: String, claim: SharedIdempotencyEntry, entry: SharedIdempotencyEntry?, milliseconds: UInt64) {
        guard let commands, isConnected else { return }
        var arguments: [[UInt8]] = [Array("EVALSHA".utf8), Array(Self.settleSHA.utf8), Array("1".utf8), Array(keys.idempotency(key).utf8), claim.bytes]
        if let entry { arguments += [entry.bytes, Array(String(milliseconds).utf8)] }
        send(script: ClusterScripts.settleIdempotencyKey, arguments: arguments, on: commands) { _ in }
    }

    public func close(completion: @escaping () -> Void) {
        closed = true
        heartbeat = nil
        reconnectTimer = nil
        commands?.close()
        tail?.close()
        completion()
    }

    static func sha1Hex(_ text: String) -> String {
        sha1Hex(Array(text.utf8))
    }

    static func sha1Hex(_ input: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        input.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { digest in _ = SHA1(input.baseAddress, input.count, digest.baseAddress) }
        }
        return HexDigits.lowercase(digest)
    }
}
