import CUV
import DequeModule

/// One connection to Redis on the loop thread, through hiredis's async API: commands are pipelined,
/// and each reply comes back, in order, to the closure given with its command, on the loop thread.
///
/// hiredis is driven by event hooks of our own rather than its libuv adapter. Its socket is watched
/// for reading all along, and the commands of a turn are written together at the end of the turn
/// (`WriteBatch.writeAtEndOfTurn`, with the connections' answers), as Redis writes its own replies.
/// The adapter instead waits for the socket to say it is writable before each write, and restarts
/// its poll handle for every hook hiredis calls: several `epoll_ctl` and a turn of the loop per
/// command. Writability is watched only while connecting and while a write is left half done.
///
/// hiredis has no timeouts of its own: a command that gets no reply within its deadline (a dead or
/// partitioned server), or a connection that does not open within the timeout, closes the
/// connection, and every command waiting on it gets `.unanswered`. A closed connection stays
/// closed; its owner opens a new one.
final class RedisConnection: EndOfTurnWriter {
    /// Why a connection closed, or nil while it is open.
    private(set) var closeReason: String?
    private(set) var isConnected = false
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// The reference hiredis holds for its callbacks, while the context lives.
    private var retainedByContext: Unmanaged<RedisConnection>?
    private let loop: EventLoop
    private let timeoutMilliseconds: UInt64
    private let onConnected: () -> Void
    private let onClosed: (String) -> Void
    /// The deadline of each command still waiting for its reply, oldest first (replies come in order).
    private var deadlines: Deque<UInt64> = []
    private var connectDeadline: UInt64
    private var watchdog: LoopTimer?
    /// The poll handle on hiredis's socket, and what it watches.
    private let poll = LoopHandle<uv_poll_t>()
    private var polled: Int32 = 0
    private var wantsRead = false
    private var wantsWritable = false
    private var pollClosed = false
    /// Waiting in the write batch for the end of the turn.
    private var writeQueued = false
    /// Inside that write: what hiredis could not write now waits for the socket to take more.
    private var writingAtEndOfTurn = false

    /// Opens a connection to `host:port`. `onConnected` runs once it is open; `onClosed` once it has
    /// closed for good, for whatever reason (after every waiting command got its error reply). A
    /// connection that cannot even start has `closeReason` set on return, and calls neither.
    init(loop: EventLoop, host: String, port: Int32, timeoutMilliseconds: UInt64,
         onConnected: @escaping () -> Void, onClosed: @escaping (String) -> Void) {
        self.loop = loop
        self.timeoutMilliseconds = timeoutMilliseconds
        self.onConnected = onConnected
        self.onClosed = onClosed
        connectDeadline = uv_now(loop.loop) + timeoutMilliseconds
        let context = redisAsyncConnect(host, port)
        guard let context, context.pointee.err == 0, uv_poll_init(loop.loop, poll.pointer, context.pointee.c.fd) == 0 else {
            closeReason = Self.error(of: context)
            if let context { redisAsyncFree(context) }
            poll.deallocate()
            return
        }
        self.context = context
        poll.attach(to: self)
        attachHooks(to: context)
        // Held by hiredis (its `data`) until the connection is closed: released in `closed`.
        let retained = Unmanaged.passRetained(self)
        retainedByContext = retained
        context.pointee.data = retained.toOpaque()
        redisAsyncSetConnectCallback(context) { context, status in
            let connection = RedisConnection.from(context)
            if status == REDIS_OK {
                connection.opened()
            } else {
                // hiredis frees a context that failed to connect without its disconnect callback.
                connection.closed(RedisConnection.error(of: context))
            }
        }
        redisAsyncSetDisconnectCallback(context) { context, status in
            RedisConnection.from(context).closed(status == REDIS_OK ? "closed" : RedisConnection.error(of: context))
        }
        let watchdog = LoopTimer(loop: loop) { [unowned self] in checkDeadlines() }
        let period = max(timeoutMilliseconds / 4, 10)
        watchdog.start(after: period, repeat: period)
        self.watchdog = watchdog
    }

    /// Sends `command` (`RedisCommand.encode`); `reply` gets Redis's answer, or an `.error` reply if
    /// the connection closes first. A command may wait `extraMilliseconds` beyond the timeout (a
    /// blocking read's own block time).
    func send(_ command: [UInt8], extraMilliseconds: UInt64 = 0, _ reply: @escaping (RedisReply) -> Void) {
        guard let context, closeReason == nil else {
            return reply(.error("not connected to Redis: \(closeReason ?? "closing")"))
        }
        let handler = Unmanaged.passRetained(ReplyHandler(reply)).toOpaque()
        let status = command.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                redisAsyncFormattedCommand(context, { context, reply, handler in
                    if let context { RedisConnection.from(context).replied() }
                    Unmanaged<ReplyHandler>.fromOpaque(handler!).takeRetainedValue().answer(reply)
                }, handler, chars.baseAddress, chars.count)
            }
        }
        guard status == REDIS_OK else {
            Unmanaged<ReplyHandler>.fromOpaque(handler).release()
            return reply(.error("cannot send to Redis: \(Self.error(of: context))"))
        }
        deadlines.append(uv_now(loop.loop) + timeoutMilliseconds + extraMilliseconds)
    }

    /// Closes the connection; waiting commands get `.unanswered`, then `onClosed` runs.
    func close() {
        guard let context else { return }
        closeReason = closeReason ?? "closed by reactord"
        let wasConnected = isConnected
        redisAsyncFree(context)
        // Freed before it connected, hiredis calls neither of its callbacks.
        if !wasConnected, self.context != nil { closed(closeReason!) }
    }

    // MARK: hiredis's event hooks

    /// Points hiredis's hooks at this connection (unretained: the context retains it, see
    /// `retainedByContext`, and calls the hooks no more once freed).
    private func attachHooks(to context: UnsafeMutablePointer<redisAsyncContext>) {
        context.pointee.ev.data = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.ev.addRead = { RedisConnection.hooked($0).watch(read: true) }
        context.pointee.ev.delRead = { RedisConnection.hooked($0).watch(read: false) }
        context.pointee.ev.addWrite = { RedisConnection.hooked($0).hasOutput() }
        context.pointee.ev.delWrite = { RedisConnection.hooked($0).watch(writable: false) }
        context.pointee.ev.cleanup = { RedisConnection.hooked($0).stopPolling() }
    }

    private static func hooked(_ data: UnsafeMutableRawPointer?) -> RedisConnection {
        Unmanaged<RedisConnection>.fromOpaque(data!).takeUnretainedValue()
    }

    /// hiredis holds bytes to write. Connected, they wait for the end of the turn; connecting (its
    /// connection is done when the socket turns writable) or with a write left half done, for the
    /// socket to take more.
    private func hasOutput() {
        if !isConnected || writingAtEndOfTurn { return watch(writable: true) }
        guard !writeQueued, !wantsWritable else { return }
        writeQueued = true
        loop.writeBatch.writeAtEndOfTurn(self)
    }

    func writeAtEndOfTurn() {
        writeQueued = false
        guard let context else { return }
        writingAtEndOfTurn = true
        redisAsyncHandleWrite(context)
        writingAtEndOfTurn = false
    }

    private func watch(read: Bool? = nil, writable: Bool? = nil) {
        if let read { wantsRead = read }
        if let writable { wantsWritable = writable }
        let events = (wantsRead ? Int32(UV_READABLE.rawValue) : 0) | (wantsWritable ? Int32(UV_WRITABLE.rawValue) : 0)
        guard events != polled, !pollClosed else { return }
        polled = events
        if events == 0 {
            uv_poll_stop(poll.pointer)
            return
        }
        uv_poll_start(poll.pointer, events) { handle, status, events in
            guard status == 0 else { return }
            let connection = LoopHandle.owner(of: handle, as: RedisConnection.self)
            if events & Int32(UV_READABLE.rawValue) != 0, let context = connection.context { redisAsyncHandleRead(context) }
            if events & Int32(UV_WRITABLE.rawValue) != 0, let context = connection.context { redisAsyncHandleWrite(context) }
        }
    }

    /// hiredis frees the context (and then closes its socket): the poll handle goes first.
    private func stopPolling() {
        pollClosed = true
        poll.close()
    }

    private func opened() {
        isConnected = true
        onConnected()
    }

    /// The connection is gone: its context freed (or being freed) by hiredis.
    private func closed(_ reason: String) {
        guard context != nil else { return }
        context = nil
        isConnected = false
        closeReason = closeReason ?? reason
        watchdog = nil
        deadlines.removeAll()
        onClosed(closeReason!)
        retainedByContext?.release()
        retainedByContext = nil
    }

    private func checkDeadlines() {
        let now = uv_now(loop.loop)
        if !isConnected, now > connectDeadline {
            return abort("Redis did not accept the connection within \(timeoutMilliseconds) ms")
        }
        if let first = deadlines.first, now > first {
            abort("Redis did not answer within \(timeoutMilliseconds) ms")
        }
    }

    private func abort(_ reason: String) {
        closeReason = closeReason ?? reason
        close()
    }

    fileprivate func replied() {
        if !deadlines.isEmpty { deadlines.removeFirst() }
    }

    private static func from(_ context: UnsafePointer<redisAsyncContext>?) -> RedisConnection {
        Unmanaged<RedisConnection>.fromOpaque(context!.pointee.data).takeUnretainedValue()
    }

    private static func error(of context: UnsafePointer<redisAsyncContext>?) -> String {
        guard let context else { return "cannot allocate a Redis connection" }
        return withUnsafeBytes(of: context.pointee.c.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// The closure waiting for one reply, carried through hiredis's `privdata`.
    private final class ReplyHandler {
        let body: (RedisReply) -> Void
        init(_ body: @escaping (RedisReply) -> Void) { self.body = body }

        func answer(_ reply: UnsafeMutableRawPointer?) {
            guard let reply else { return body(.unanswered("the connection to Redis closed before it answered")) }
            body(RedisReply(reply.assumingMemoryBound(to: redisReply.self)))
        }
    }
}

extension RedisReply {
    /// The reply hiredis parsed (freed by hiredis once the callback returns).
    init(_ reply: UnsafeMutablePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING:
            self = .bulk(value.len == 0 ? [] : Array(UnsafeRawBufferPointer(start: value.str, count: value.len)))
        case REDIS_REPLY_STATUS:
            self = .status(String(decoding: UnsafeRawBufferPointer(start: value.str, count: value.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: UnsafeRawBufferPointer(start: value.str, count: value.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(value.integer))
        case REDIS_REPLY_ARRAY:
            self = .array((0..<value.elements).map { RedisReply(value.element[$0]!) })
        default:
            self = .null
        }
    }
}
