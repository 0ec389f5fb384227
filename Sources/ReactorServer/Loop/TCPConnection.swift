import CUV

/// What a TCP connection reports, on the loop thread; each report does nothing unless overridden.
///
/// A class rather than a protocol: the connection calls its delegate for every read, and a class
/// reference can be called unretained (see `TCPConnection.didRead`), where an existential would be
/// retained and released around each call.
public class TCPConnectionDelegate {
    public init() {}

    /// Bytes arrived. They are valid only during the call (the loop reuses one read buffer).
    public func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {}
    /// The peer closed its side: it will send nothing more, but may still read. The delegate
    /// decides when to close.
    public func connectionDidEnd(_ connection: TCPConnection) {}
    /// Every byte written so far has reached the kernel.
    public func connectionDidDrain(_ connection: TCPConnection) {}
    /// The connection is closed (by `close()`, or by the connection failing); nothing follows.
    public func connectionDidClose(_ connection: TCPConnection) {}
}

/// One accepted TCP connection: reads into the loop's shared buffer, writes through the loop's batch
/// at the end of each turn, and keeps a copy only of what the kernel could not take. On a TLS
/// listener's connections (`startTLS`), what the delegate reads and writes is the plaintext: bytes
/// are decrypted as they are read and encrypted as they leave the batch, one TLS record per batch.
public final class TCPConnection {
    let handle: UnsafeMutablePointer<uv_tcp_t>
    let loop: EventLoop
    /// Held strongly until the connection closes, which breaks the cycle. (A weak reference would give
    /// every delegate a side table, and send each retain and release of it down the slow path.)
    /// @exclusivity(unchecked): set and read on the loop thread, never while a call through it is
    /// being set up; checked, every read of each callback paid for it.
    @exclusivity(unchecked) public var delegate: TCPConnectionDelegate? {
        willSet {
            // Reads call the delegate unretained; one replaced during its own read (handing the
            // connection over to another protocol) must outlive that call.
            if state.isDeliveringRead, state.replacedDuringRead == nil { state.replacedDuringRead = delegate }
        }
    }

    /// What the connection keeps track of as it works.
    private struct State {
        var isReading = false
        var isClosed = false
        /// Closing after its writes: the write side is shut down, reads are dropped.
        var isLingering = false
        var lingerMilliseconds: UInt64 = 0
        var lingerTimer: LoopHandle<uv_timer_t>?
        /// Bytes the kernel has not taken yet, queued in libuv (not counting those in the loop's batch).
        var queuedBytes = 0
        /// Loop time (ms) the peer was last seen reading, or bytes were first queued, and the bytes
        /// on their way then (`writeStalledMilliseconds`).
        var writeProgressAt: UInt64 = 0
        var queueSizeAtProgress = 0
        /// Bytes held for this connection in the loop's `WriteBatch`.
        var batchedBytes = 0
        var isDeliveringRead = false
        var replacedDuringRead: TCPConnectionDelegate?
        /// The TLS session, on a TLS listener's connections.
        var tls: TLSSession?
        /// What a TLS connection answers, in plaintext, to a first byte that cannot start TLS.
        var plainHTTPAnswer: [UInt8] = []
        /// Plaintext decrypted while reading was stopped: one socket read can carry several TLS
        /// records, and the rest of them wait here until reading starts again (at most a read's worth).
        var heldPlaintext: [UInt8] = []
        /// The peer's close_notify came behind `heldPlaintext`, or while reading was stopped: its
        /// end is told after them, once reading starts again.
        var peerEndedAfterHeld = false
        var heldDelivery: LoopTimer?
    }
    /// @exclusivity(unchecked): read and written on the loop thread only, and no callback runs while
    /// one of its fields is being modified; a dynamic check on each access would cost more than the
    /// work it guards.
    @exclusivity(unchecked) private var state = State()

    /// Bytes the kernel has not taken yet, queued in libuv (not counting those in the loop's batch).
    public var queuedBytes: Int { state.queuedBytes }
    /// How long (ms, to loop time `now`) bytes have waited with the peer reading none of them: 0
    /// when none wait. Progress is seen when asked, as the bytes on their way shrink: libuv's queue
    /// and what the kernel holds unacknowledged. (libuv reports a write only once the kernel took all
    /// of it, and the kernel takes nothing while its buffer, seconds of a slow reader's worth, is
    /// more than a third full: neither alone tells a slow reader from one that reads nothing.)
    public func writeStalledMilliseconds(now: UInt64) -> UInt64 {
        guard state.queuedBytes > 0 else { return 0 }
        let onTheirWay = uv_stream_get_write_queue_size(handle.stream) + Int(max(0, cuv_tcp_unacknowledged_bytes(handle)))
        if onTheirWay < state.queueSizeAtProgress { state.writeProgressAt = now }
        state.queueSizeAtProgress = onTheirWay
        return now &- state.writeProgressAt
    }
    public var isClosed: Bool { state.isClosed }
    /// The TLS session, on a TLS listener's connections.
    var tls: TLSSession? { state.tls }
    /// Bytes held for this connection in the loop's `WriteBatch`, which keeps the count.
    var batchedBytes: Int {
        get { state.batchedBytes }
        set { state.batchedBytes = newValue }
    }

    static func makeHandle(loop: EventLoop) -> UnsafeMutablePointer<uv_tcp_t> {
        let handle = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        uv_tcp_init(loop.loop, handle)
        return handle
    }

    init(loop: EventLoop, handle: UnsafeMutablePointer<uv_tcp_t>) {
        self.loop = loop
        self.handle = handle
        // The handle keeps its connection alive until libuv has closed it.
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Starts delivering reads to the delegate.
    public func startReading() {
        guard !state.isReading, !state.isClosed else { return }
        state.isReading = true
        if !state.heldPlaintext.isEmpty || state.peerEndedAfterHeld {
            // In a turn of their own: the caller may be in the middle of handling what came before.
            let timer = state.heldDelivery ?? LoopTimer(loop: loop) { [unowned self] in deliverHeld() }
            state.heldDelivery = timer
            timer.start(after: 0)
            if state.peerEndedAfterHeld { return }
        }
        uv_read_start(handle.stream, { handle, _, buffer in
            let readBuffer = TCPConnection.borrowing(handle!.pointee.data) { $0.loop.readBuffer }
            buffer!.pointee = uv_buf_init(readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(readBuffer.count))
        }, { stream, count, buffer in
            TCPConnection.borrowing(stream!.pointee.data) { $0.didRead(count, buffer!.pointee) }
        })
    }

    /// Speaks TLS from the first byte on: `plainHTTPAnswer` goes out, in plaintext, to a client
    /// whose first byte cannot start a TLS handshake (plain HTTP sent to a TLS port), and the
    /// connection closes.
    func startTLS(_ session: TLSSession, plainHTTPAnswer: [UInt8]) {
        state.tls = session
        state.plainHTTPAnswer = plainHTTPAnswer
    }

    /// What a read callback brought: `count` bytes in `buffer`, the end of the stream, or an error.
    private func didRead(_ count: Int, _ buffer: uv_buf_t) {
        if state.isLingering {
            // Only waiting for the peer to finish: what it still sends is dropped.
            if count < 0 { close() }
        } else if count > 0 {
            let bytes = UnsafeRawBufferPointer(start: buffer.base, count: count)
            if let tls = state.tls { return didReadEncrypted(bytes, tls) }
            deliver(bytes)
        } else if count == Int(UV_EOF.rawValue) {
            stopReading()
            delegate?.connectionDidEnd(self)
        } else if count < 0 {
            close()
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) {
        // Unretained: the connection holds its delegate, and keeps one replaced meanwhile until
        // the call returns (see `delegate`).
        guard let receiver = delegate.map(Unmanaged.passUnretained) else { return }
        state.isDeliveringRead = true
        receiver.withBorrowed { $0.connection(self, didRead: bytes) }
        state.isDeliveringRead = false
        if state.replacedDuringRead != nil { state.replacedDuringRead = nil }
    }

    private func didReadEncrypted(_ ciphertext: UnsafeRawBufferPointer, _ tls: TLSSession) {
        // Every TLS connection opens with a handshake record (content type 22); a letter means
        // plain HTTP, which gets its answer in plaintext rather than a TLS alert it cannot read.
        if !state.plainHTTPAnswer.isEmpty {
            let answer = state.plainHTTPAnswer
            state.plainHTTPAnswer = []  // only the connection's first byte tells
            if ciphertext.first != 22 {
                state.tls = nil
                write(answer)
                return closeAfterWriting()
            }
        }
        let outcome = tls.receive(ciphertext, scratch: loop.tlsPlaintextBuffer) { plaintext in
            guard !state.isClosed else { return }
            if state.isReading && state.heldPlaintext.isEmpty {
                deliver(plaintext)
            } else {
                // The receiver stopped reading part way through this read's records.
                state.heldPlaintext.append(contentsOf: plaintext)
            }
        }
        sendTLSOutput()
        switch outcome {
        case .open:
            break
        case .closed:
            // Told now only if the receiver is reading: one that stopped (its answers wait unsent)
            // is told once it reads again, as a plain connection's end would be.
            let wasReading = state.isReading
            stopReading()
            if wasReading && state.heldPlaintext.isEmpty { delegate?.connectionDidEnd(self) } else { state.peerEndedAfterHeld = true }
        case .failed:
            close()
        }
    }

    /// What was decrypted while reading was stopped, now that it has started again, and then the
    /// peer's end if it came behind it.
    private func deliverHeld() {
        guard state.isReading, !state.isClosed, !state.isLingering else { return }
        if !state.heldPlaintext.isEmpty {
            let held = state.heldPlaintext
            state.heldPlaintext = []
            held.withUnsafeBytes { deliver($0) }
        }
        // Unless the receiver stopped again (it keeps what it did not take of `held` itself).
        guard state.peerEndedAfterHeld, state.isReading, !state.isClosed else { return }
        state.peerEndedAfterHeld = false
        stopReading()
        delegate?.connectionDidEnd(self)
    }

    /// Hands the ciphertext the TLS session made (handshake messages, records, close_notify) to the socket.
    private func sendTLSOutput() {
        guard let tls = state.tls, tls.hasOutput else { return }
        tls.takeOutput(scratch: loop.tlsCiphertextBuffer) { writeRaw($0) }
    }

    /// Stops delivering reads (backpressure: the kernel buffers, then the peer waits).
    public func stopReading() {
        guard state.isReading, !state.isClosed else { return }
        state.isReading = false
        uv_read_stop(handle.stream)
    }

    /// Writes `bytes` after everything written before. They reach the socket at the end of the loop's
    /// turn, with what other connections wrote meanwhile (see `WriteBatch`), or sooner: when this
    /// connection closes, or when the batch is full.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        // After `closeAfterWriting` the write side is shut down: a later write could only fail.
        guard !state.isClosed, !state.isLingering, !bytes.isEmpty else { return }
        loop.writeBatch.add(bytes, for: self)
    }

    /// `write` for bytes made in place: `fill` writes at most `maximum` of them straight into the
    /// loop's batch and returns how many. False, with nothing written, when that many could never
    /// fit in the batch: make them elsewhere and `write` them.
    @inline(__always)
    func write(atMost maximum: Int, _ fill: (UnsafeMutableRawPointer) -> Int) -> Bool {
        // Dropped, as `write` drops them (see there).
        guard !state.isClosed, !state.isLingering else { return true }
        return loop.writeBatch.add(atMost: maximum, for: self, fill)
    }

    /// Flushes the loop's batch if it holds bytes of this connection; false when one of its writes
    /// failed there, which closed the connection already.
    @discardableResult
    func sendBatchedBytes() -> Bool {
        if state.batchedBytes > 0 { loop.writeBatch.flush() }
        return !state.isClosed
    }

    /// Hands `bytes` to the socket now (encrypted first, over TLS): without copying them when the
    /// kernel takes them at once.
    func writeNow(_ bytes: UnsafeRawBufferPointer) {
        guard !state.isClosed, !state.isLingering else { return }
        if let tls = state.tls {
            // Before the handshake is done nothing can be sent (a timeout's answer, say): dropped.
            guard tls.send(bytes) else { return }
            return sendTLSOutput()
        }
        writeRaw(bytes)
    }

    private func writeRaw(_ bytes: UnsafeRawBufferPointer) {
        guard !state.isClosed, !state.isLingering else { return }
        var offset = 0
        if state.queuedBytes == 0 {
            var buffer = uv_buf_init(UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: CChar.self)), UInt32(bytes.count))
            let written = uv_try_write(handle.stream, &buffer, 1)
            if written == Int32(bytes.count) { return }
            if written > 0 { offset = Int(written) } else if written != Int32(UV_EAGAIN.rawValue) {
                close()
                return
            }
        }
        let request = WriteRequest(copying: UnsafeRawBufferPointer(rebasing: bytes[offset...]), connection: self)
        if state.queuedBytes == 0 {
            state.writeProgressAt = loop.now
            state.queueSizeAtProgress = 0
        }
        state.queuedBytes += request.count
        request.start(on: handle.stream)
    }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Closes the connection; queued writes are dropped (what the kernel refused so far), though
    /// bytes still in the loop's batch are offered to the socket first, as if written at once.
    /// Safe to call more than once.
    public func close() {
        guard !state.isClosed, sendBatchedBytes() else { return }
        if let tls = state.tls, tls.outcome == .closed {
            // The peer said goodbye (close_notify) and has had its answers: ours goes after them.
            tls.shutdown()
            sendTLSOutput()
            // A write that failed (the peer reset) has closed the connection already.
            guard !state.isClosed else { return }
        }
        state.isClosed = true
        // Stopped, not released: this may run inside its callback; it goes with the connection.
        state.heldDelivery?.stop()
        if let lingerTimer = state.lingerTimer {
            lingerTimer.close()
            state.lingerTimer = nil
        }
        uv_close(handle.handle) { closed in
            let connection = Unmanaged<TCPConnection>.fromOpaque(closed!.pointee.data)
            closed!.deallocate()
            let tcp = connection.takeUnretainedValue()
            tcp.delegate?.connectionDidClose(tcp)
            tcp.delegate = nil
            connection.release()
        }
    }

    /// Closes after every queued byte has been written (a response followed by `Connection: close`).
    ///
    /// A lingering close: the write side is shut down once the writes are done, and what the peer
    /// still sends is read and dropped until it closes too (or `lingerSeconds` pass). Closing with
    /// unread input would make the kernel reset the connection, and the peer could lose the response.
    public func closeAfterWriting(lingerSeconds: UInt64 = 2) {
        // The shutdown waits for libuv's queued writes, not for the batch: the batch goes first.
        guard !state.isClosed, !state.isLingering, sendBatchedBytes() else { return }
        if let tls = state.tls {
            tls.shutdown()
            sendTLSOutput()
        }
        state.isLingering = true
        state.lingerMilliseconds = lingerSeconds * 1000
        let request = LoopRequest<uv_shutdown_t>.make(holding: self)
        let status = uv_shutdown(request, handle.stream) { request, status in
            let connection = LoopRequest.finish(request, as: TCPConnection.self)
            if status < 0 { connection.close() } else { connection.linger() }
        }
        if status < 0 {
            LoopRequest.abandon(request)
            close()
        }
    }

    private func linger() {
        guard !state.isClosed else { return }
        let timer = LoopHandle<uv_timer_t>()
        uv_timer_init(loop.loop, timer.pointer)
        // Unretained: the connection closes the timer when it closes, before it can go.
        timer.attach(to: self)
        state.lingerTimer = timer
        uv_timer_start(timer.pointer, { timer in LoopHandle.owner(of: timer, as: TCPConnection.self).close() }, state.lingerMilliseconds, 0)
        startReading()
    }

    fileprivate func didWrite(_ count: Int, status: Int32) {
        state.queuedBytes -= count
        state.writeProgressAt = loop.now
        if status < 0 {
            close()
            return
        }
        if state.queuedBytes == 0 {
            delegate?.connectionDidDrain(self)
        }
    }

    /// `body` with the connection a handle's `data` points to, without retaining it: the handle holds
    /// it until libuv has closed the handle, which is never during one of its callbacks.
    @inline(__always)
    static func borrowing<Result>(_ pointer: UnsafeMutableRawPointer?, _ body: (TCPConnection) -> Result) -> Result {
        Unmanaged<TCPConnection>.fromOpaque(pointer!).withBorrowed(body)
    }
}

/// A uv_write in flight, with the copy of the bytes the kernel did not take at once.
private final class WriteRequest {
    let storage: UnsafeMutableRawBufferPointer
    let connection: TCPConnection
    var count: Int { storage.count }

    init(copying bytes: UnsafeRawBufferPointer, connection: TCPConnection) {
        storage = .allocate(byteCount: bytes.count, alignment: 1)
        storage.copyMemory(from: bytes)
        self.connection = connection
    }

    deinit {
        storage.deallocate()
    }

    func start(on stream: UnsafeMutablePointer<uv_stream_t>) {
        let request = LoopRequest<uv_write_t>.make(holding: self)
        var buffer = uv_buf_init(storage.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(storage.count))
        let status = uv_write(request, stream, &buffer, 1) { request, status in
            let write = LoopRequest.finish(request, as: WriteRequest.self)
            write.connection.didWrite(write.count, status: status)
        }
        if status < 0 {
            LoopRequest.abandon(request)
            connection.didWrite(count, status: status)
        }
    }
}
