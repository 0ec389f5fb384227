import Foundation
import Logging

/// How a node joins its cluster at start-up, before it serves: the cluster is created in Redis
/// with the node's initial state if there is none yet; otherwise the node reads the newest
/// snapshot kept there and applies every event of the stream after it. No local data is needed.
public enum ClusterBootstrap {
    public struct Joined<StateType: HostedState> {
        public let state: StateType
        public let version: UInt64
        /// The stream's head as the node read it: above `version` by the events left to its tail.
        public let head: UInt64
        public let epoch: String
        public let snapshotVersion: UInt64
    }

    /// The last `leaving` events after the snapshot are not applied here: the node's tail brings
    /// them as soon as it runs, through the subscription hub, so that its resume window (pass its size)
    /// holds them from the start and a subscriber that reconnects to a restarted node resumes.
    public static func join<StateType: HostedState>(_ options: RedisStreamLog.Options, initialState: StateType, leaving: Int = 0,
                                                    logger: Logger) throws(EventLogError) -> Joined<StateType> {
        let redis = try unavailable { () throws(RedisConnectionError) in try RedisBlockingConnection(host: options.host, port: options.port, timeoutMilliseconds: options.timeoutMilliseconds) }
        if let credentials = options.credentials {
            let answer = try send(redis, credentials.authCommand)
            guard answer.string == "OK" else {
                throw EventLogError(.unavailable, "Redis refused the credentials in --redis: \(answer.errorMessage ?? "\(answer)")")
            }
        }
        let keys = ClusterKeys(cluster: options.cluster)
        let initial: [UInt8]
        do { initial = try initialState.jsonValue().jsonBytes } catch {
            throw EventLogError(.other, "the initial state does not encode: \(error)")
        }
        let created = try send(redis, RedisCommand.encode([
            Array("EVAL".utf8), Array(ClusterScripts.create.utf8), Array("2".utf8), Array(keys.meta.utf8), Array(keys.snapshot.utf8),
            Array(UUID().uuidString.lowercased().utf8), initial,
        ]))
        guard let epoch = created.string else {
            throw EventLogError(.unavailable, "Redis refused to create or find the cluster: \(created.errorMessage ?? "\(created)")")
        }
        // A snapshot written (and the stream trimmed) while this node reads is met by reading again.
        for _ in 0..<5 {
            let snapshot = try send(redis, RedisCommand.encode(["HGETALL", keys.snapshot]))
            guard let fields = snapshot.fields, let payload = fields["state"],
                  let version = fields["version"].flatMap({ UInt64(String(decoding: $0, as: UTF8.self)) }) else {
                throw EventLogError(.damaged, "the cluster \(options.cluster) in Redis has no readable snapshot: \(snapshot.errorMessage ?? "\(snapshot)")")
            }
            var state = try StateType(snapshot: LogRecord(version: version, payload: payload))
            var read = version
            var left: [LogRecord] = []
            var complete = true
            while true {
                // From the entry that holds the next version (see `StreamEntryFormat`).
                let range = try send(redis, RedisCommand.encode(["XRANGE", keys.log, ClusterKeys.entryID(read + 1), "+", "COUNT", "1000"]))
                guard let entries = range.elements else {
                    throw EventLogError(.unavailable, "Redis refused to read the cluster's stream: \(range.errorMessage ?? "\(range)")")
                }
                let records = try StreamEntryFormat.records(of: entries, after: read)
                if let first = records.first, first.version != read + 1 {
                    complete = false
                    break
                }
                left += records
                read = records.last?.version ?? read
                if left.count > leaving {
                    for record in left.prefix(left.count - leaving) { try state.replay(record) }
                    left.removeFirst(left.count - leaving)
                }
                if entries.count < 1000 { break }
            }
            guard complete else { continue }
            let applied = read - UInt64(left.count)
            logger.notice("joined the cluster", metadata: [
                "cluster": "\(options.cluster)", "node": "\(options.node)", "epoch": "\(epoch)",
                "snapshot": "\(version)", "version": "\(applied)", "head": "\(read)",
            ])
            return Joined(state: state, version: applied, head: read, epoch: epoch, snapshotVersion: version)
        }
        throw EventLogError(.unavailable, "the cluster's snapshot kept changing while this node read it; try again")
    }

    /// What start-up asks Redis, its failures being the log's: unavailable.
    private static func send(_ redis: RedisBlockingConnection, _ command: [UInt8]) throws(EventLogError) -> RedisReply {
        try unavailable { () throws(RedisConnectionError) in try redis.send(command) }
    }

    private static func unavailable<T>(_ body: () throws(RedisConnectionError) -> T) throws(EventLogError) -> T {
        do {
            return try body()
        } catch {
            throw EventLogError(.unavailable, error.description)
        }
    }
}
