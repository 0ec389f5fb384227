/// Where a cluster keeps its shared log in Redis, and the Lua scripts that change it: each change
/// is one script, so that it happens whole or not at all, and only on the history the caller knows.
///
/// For the cluster key `shop`:
/// - `reactor:{shop}:log`, a stream: one entry per append, its ID `<version>-0` (the version of its
///   last event), its fields `n` (the node that appended it) and `g` (the records of its events, as a
///   journal holds them; see `StreamEntryFormat`);
/// - `reactor:{shop}:meta`, a hash: `version` (the stream's head), `epoch` (an id drawn when the
///   cluster was created: a Redis that lost its data has none, or another), `snapshot` (the version
///   of the newest snapshot; the stream holds the entries after the one before it), and while a
///   node holds a claim on the next append, `claim` (its name) and `claimedAt` (ms);
/// - `reactor:{shop}:snapshot`, a hash: `version` and `state` (the state's JSON);
/// - `reactor:{shop}:nodes`, a hash: each node's name and when it last said it was alive (ms, by
///   Redis's clock), for an hour after it last did.
/// The braces make every key of a cluster hash to one Redis Cluster slot.
public struct ClusterKeys: Sendable {
    public let log: String
    public let meta: String
    public let snapshot: String
    public let nodes: String
    private let prefix: String

    public init(cluster: String) {
        let prefix = "reactor:{\(cluster)}:"
        log = prefix + "log"
        meta = prefix + "meta"
        snapshot = prefix + "snapshot"
        nodes = prefix + "nodes"
        self.prefix = prefix
    }

    /// Where an idempotency key is kept (`SharedIdempotencyEntry`); `key` is hashed by the caller.
    public func idempotency(_ key: String) -> String { prefix + "idem:" + key }

    /// The stream ID of `version`'s entry.
    public static func entryID(_ version: UInt64) -> String { "\(version)-0" }

    /// The version an entry ID carries; nil for an ID this cluster never writes.
    public static func version(ofEntryID id: String) -> UInt64? {
        guard id.hasSuffix("-0") else { return nil }
        return UInt64(id.dropLast(2))
    }
}

public enum ClusterScripts {
    /// Compare-and-append. KEYS: meta, log, then any idempotency keys the records answer. ARGV: the
    /// version the caller's records follow, the epoch it knows, its node name, the number of
    /// records, the records (`StreamEntryFormat.group`), how many of its appends in a row were
    /// refused or told to wait, then for each idempotency key its answer, lifetime in ms, and the
    /// claim its request holds it by. Appends them as one entry, with the version of the last one,
    /// only if the stream's head is the expected version, the epoch is the caller's and every key
    /// still holds its request's claim; the keys' answers are set with it.
    /// Answers `{"ok", head}`, `{"behind", head}` (nothing written: the caller's tail brings what
    /// the others appended, and it tries again on top), `{"wait", head}` (nothing written: another
    /// node holds the next append; the caller's tail brings it), `{"fenced", key, ...}` (nothing
    /// written: those keys do not hold their requests' claims: the claim was refused, the key being
    /// another request's already, or it ran out, and another request may have applied the same
    /// events since), or `{"epoch", epoch}` (the history the caller knows is not this Redis's).
    ///
    /// The claim keeps appends fair: the node whose append succeeds has its next group ready first,
    /// while the others must apply its events and theirs again, so under load it would win again and
    /// again. A node refused `claimAfterRefusals` times in a row claims the next append (`claim`,
    /// `claimedAt` in meta): for `claimMilliseconds`, or until it appends, the others are told to wait.
    public static let append = """
        local meta = redis.call('HMGET', KEYS[1], 'epoch', 'version', 'claim', 'claimedAt')
        if meta[1] ~= ARGV[2] then return {'epoch', meta[1] or ''} end
        local head = tonumber(meta[2])
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local claimed = meta[3] and now - tonumber(meta[4]) < \(claimMilliseconds)
        if head ~= tonumber(ARGV[1]) then
          if tonumber(ARGV[6]) >= \(claimAfterRefusals) and not claimed then
            redis.call('HSET', KEYS[1], 'claim', ARGV[3], 'claimedAt', now)
          end
          return {'behind', tostring(head)}
        end
        if claimed and meta[3] ~= ARGV[3] then return {'wait', tostring(head)} end
        local fenced = {'fenced'}
        for i = 3, #KEYS do
          if redis.call('GET', KEYS[i]) ~= ARGV[3 * i] then fenced[#fenced + 1] = KEYS[i] end
        end
        if #fenced > 1 then return fenced end
        head = head + tonumber(ARGV[4])
        redis.call('XADD', KEYS[2], string.format('%d-0', head), 'n', ARGV[3], 'g', ARGV[5])
        redis.call('HSET', KEYS[1], 'version', head)
        if meta[3] then redis.call('HDEL', KEYS[1], 'claim', 'claimedAt') end
        for i = 3, #KEYS do redis.call('SET', KEYS[i], ARGV[3 * i - 2], 'PX', ARGV[3 * i - 1]) end
        return {'ok', tostring(head)}
        """

    /// How many appends in a row a node must have lost before it claims the next one. With three
    /// nodes firing flat out two thirds of appends lose, so a fair share often loses two or three in
    /// a row; a node losing more is being passed over.
    public static let claimAfterRefusals = 4

    /// How long a claim on the next append holds if its node does not append (it died, or the state
    /// refused all its events once the others' were applied).
    public static let claimMilliseconds = 50

    /// The heartbeat: says a node is alive, forgets the nodes not heard from for a while, and reads
    /// the cluster's meta. A script, so that a Redis refusing this node's writes (out of memory, a
    /// read-only replica, an ACL without `EVALSHA`) is found within a beat, as an append would find
    /// it. KEYS: meta, nodes. ARGV: the node's name, how long a silent node is remembered (ms), when
    /// this node last beat (Redis's time in ms, as the last answer said; 0 at first).
    /// Answers `{meta's fields, the nodes remembered and when each last beat (ms), Redis's time (ms),
    /// when another node beat under this name since this one last did (nil if none did)}`.
    public static let heartbeat = """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local before = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') or 0
        local twin = false
        if tonumber(ARGV[3]) > 0 and before > tonumber(ARGV[3]) then twin = before end
        redis.call('HSET', KEYS[2], ARGV[1], now)
        local nodes = redis.call('HGETALL', KEYS[2])
        local remembered = {}
        for i = 1, #nodes, 2 do
          local seen = tonumber(nodes[i + 1])
          if seen and now - seen <= tonumber(ARGV[2]) then
            remembered[#remembered + 1] = nodes[i]
            remembered[#remembered + 1] = nodes[i + 1]
          else
            redis.call('HDEL', KEYS[2], nodes[i])
          end
        end
        return {redis.call('HGETALL', KEYS[1]), remembered, now, twin}
        """

    /// How long a node that stopped beating stays in the nodes hash: past it, it is forgotten, so
    /// that nodes named anew at each start (the default name holds the process ID) do not pile up.
    public static let forgetNodesAfterMilliseconds: UInt64 = 3_600_000

    /// Answers a claimed idempotency key, or frees it, only while it still holds the claim: a claim
    /// that ran out may have been taken by a retry since, whose answer this must not replace.
    /// KEYS: the key. ARGV: the claim, then the answer and its lifetime in ms (none: the key is freed).
    /// Answers 1 when settled, 0 when the key no longer held the claim.
    public static let settleIdempotencyKey = """
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        if ARGV[2] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) else redis.call('DEL', KEYS[1]) end
        return 1
        """

    /// Creates the cluster if there is none. KEYS: meta, snapshot. ARGV: a new epoch, the initial
    /// state's JSON. Answers the cluster's epoch (the new one when it created it).
    public static let create = """
        local epoch = redis.call('HGET', KEYS[1], 'epoch')
        if epoch then return epoch end
        redis.call('HSET', KEYS[1], 'version', 0, 'epoch', ARGV[1], 'snapshot', 0)
        redis.call('HSET', KEYS[2], 'version', 0, 'state', ARGV[2])
        return ARGV[1]
        """

    /// Saves a snapshot newer than the one kept, and trims the stream before the snapshot it
    /// replaces: a node a little behind the new one (its tail had not brought the last events yet)
    /// still finds what it missed, rather than having to start again from the snapshot. KEYS: meta,
    /// snapshot, log. ARGV: the epoch, the version, the state's JSON. Answers 1, or 0 when the
    /// epoch is not the caller's or a snapshot as new is kept already.
    public static let saveSnapshot = """
        if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return 0 end
        local version = tonumber(ARGV[2])
        local replaced = tonumber(redis.call('HGET', KEYS[2], 'version') or '-1')
        if version <= replaced then return 0 end
        redis.call('HSET', KEYS[2], 'version', ARGV[2], 'state', ARGV[3])
        redis.call('HSET', KEYS[1], 'snapshot', ARGV[2])
        if replaced >= 0 then redis.call('XTRIM', KEYS[3], 'MINID', string.format('%d-0', replaced + 1)) end
        return 1
        """
}
