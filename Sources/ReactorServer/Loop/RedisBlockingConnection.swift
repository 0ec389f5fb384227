import CUV
import Foundation

/// A connection to Redis that waits for each reply: for start-up, before the loop runs (a node
/// joining its cluster reads the snapshot and the stream after it), and for tools.
final class RedisBlockingConnection {
    private let context: UnsafeMutablePointer<redisContext>

    init(host: String, port: Int32, timeoutMilliseconds: UInt64) throws(RedisConnectionError) {
        let timeout = timeval(tv_sec: Int(timeoutMilliseconds / 1_000), tv_usec: Int(timeoutMilliseconds % 1_000) * 1_000)
        guard let context = redisConnectWithTimeout(host, port, timeout) else {
            throw RedisConnectionError("cannot allocate a connection to Redis")
        }
        guard context.pointee.err == 0 else {
            let reason = Self.error(of: context)
            redisFree(context)
            throw RedisConnectionError("cannot connect to Redis at \(host):\(port): \(reason)")
        }
        redisSetTimeout(context, timeout)
        self.context = context
    }

    deinit {
        redisFree(context)
    }

    /// Sends `command` (`RedisCommand.encode`) and waits for its reply; an `.error` reply is
    /// returned as it is, a lost connection thrown.
    func send(_ command: [UInt8]) throws(RedisConnectionError) -> RedisReply {
        let appended = command.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { redisAppendFormattedCommand(context, $0.baseAddress, $0.count) }
        }
        var reply: UnsafeMutableRawPointer?
        guard appended == REDIS_OK, redisGetReply(context, &reply) == REDIS_OK, let reply else {
            throw RedisConnectionError("Redis did not answer: \(Self.error(of: context))")
        }
        defer { freeReplyObject(reply) }
        return RedisReply(reply.assumingMemoryBound(to: redisReply.self))
    }

    private static func error(of context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

/// Why a blocking connection to Redis failed (it could not connect, or lost the connection).
struct RedisConnectionError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
