import CUV

/// The bytes connections write during one turn of the loop, handed to the kernel together just
/// before the loop waits for I/O again.
///
/// Every write to a socket whose reader sleeps wakes that reader; on loopback the wake-up, and on a
/// virtual machine the interrupt behind it, costs more than the write itself. Answers written one by
/// one as requests are handled spread over the whole turn, so a client that keeps up is asleep again
/// before each next one and is woken for every answer. Written back to back once the turn's reads
/// are handled, they should find it awake more often: measured, about 1 µs less system time per
/// POST /events (docs/performance.md; the wake-ups are the likely reason, not counted). And a
/// pipelining client's answers leave in one write. (Redis writes its replies the same way, just
/// before it sleeps.)
///
/// One buffer per loop, filled in order: a connection's bytes leave in the order it wrote them, and
/// before anything it writes after a flush. It never grows: a write that does not fit flushes what
/// is held first, and one larger than the buffer goes straight out.
final class WriteBatch {
    // @exclusivity(unchecked) on `pending` and `isFlushing`: touched on the loop thread only, never
    // while being modified (a flush writes to the kernel and calls no delegate).
    /// Each entry holds its connection until it is written, so that it is alive then whatever
    /// happened meanwhile; a connection closed meanwhile drops its bytes (`writeNow`). (A connection
    /// flushes the batch before it closes anyway, so that what it wrote goes out first.)
    @exclusivity(unchecked) private var pending: PendingWrites<TCPConnection>
    /// A connection that fails mid-flush closes, and a close flushes: not again from inside this one.
    @exclusivity(unchecked) private var isFlushing = false
    /// Writers that keep their output themselves (a Redis connection: hiredis holds its commands),
    /// written after the connections' bytes at the end of the turn; two lists, swapped, so that
    /// neither is modified while it is walked.
    private var lateWriters: [any EndOfTurnWriter] = []
    private var writing: [any EndOfTurnWriter] = []
    /// Its own handle rather than a `PrepareWatcher`: a watcher closes its handle when released,
    /// which for the loop's own batch would come after the loop itself is freed.
    private let handle = LoopHandle<uv_prepare_t>()

    /// Started before any other prepare handle of the loop, so it runs after them all (libuv runs
    /// the most recently started first): what they write goes out in the same turn.
    init(loop: UnsafeMutablePointer<uv_loop_t>, capacity: Int = 64 * 1024, maxEntries: Int = 1024) {
        pending = PendingWrites(capacity: capacity, maxEntries: maxEntries)
        uv_prepare_init(loop, handle.pointer)
        handle.attach(to: self)
        uv_prepare_start(handle.pointer) { handle in
            LoopHandle.owner(of: handle, as: WriteBatch.self).endTurn()
        }
        // Pending bytes always belong to an open connection, which keeps the loop alive itself.
        handle.unref()
    }

    /// Lets go of what is held, unwritten: once the loop has closed every handle, nothing can be
    /// written, and the entries' references would keep their connections (and, through them, the
    /// loop) alive.
    func discard() {
        pending.discard()
    }

    /// Frees the buffers; the handle is the loop's to close (`EventLoop.run` closes every handle).
    func deallocate() {
        pending.deallocate()
        handle.deallocate()
    }

    /// Holds `bytes` for `connection` until the end of the turn.
    func add(_ bytes: UnsafeRawBufferPointer, for connection: TCPConnection) {
        let held = add(atMost: bytes.count, for: connection) { destination in
            destination.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            return bytes.count
        }
        if !held {
            // Larger than the whole batch: after what is held, straight out.
            flush()
            connection.writeNow(bytes)
        }
    }

    /// Holds for `connection` the bytes `fill` writes, at most `maximum` of them, straight into the
    /// batch; `fill` returns how many it wrote. False, with nothing written, when `maximum` is more
    /// than the whole batch.
    @inline(__always)
    func add(atMost maximum: Int, for connection: TCPConnection, _ fill: (UnsafeMutableRawPointer) -> Int) -> Bool {
        guard pending.canEverHold(maximum) else { return false }
        if !pending.hasRoom(for: maximum) {
            flush()
            // The flush may have failed this connection's earlier bytes and closed it: an entry
            // now would outlive it.
            if connection.isClosed { return true }
        }
        connection.batchedBytes += pending.append(atMost: maximum, for: connection, fill)
        return true
    }

    /// Writes each writer's own output at the end of this turn, after the connections' bytes.
    func writeAtEndOfTurn(_ writer: any EndOfTurnWriter) {
        lateWriters.append(writer)
    }

    private func endTurn() {
        flush()
        // A writer's write may queue another (a failed connection's owner sends again elsewhere).
        while !lateWriters.isEmpty {
            swap(&lateWriters, &writing)
            for writer in writing { writer.writeAtEndOfTurn() }
            writing.removeAll(keepingCapacity: true)
        }
    }

    /// Hands every held byte to its connection's socket, in the order written.
    func flush() {
        guard !isFlushing, !pending.isEmpty else { return }
        isFlushing = true
        pending.drain { connection, bytes in
            connection.batchedBytes -= bytes.count
            connection.writeNow(bytes)
        }
        isFlushing = false
    }
}

/// Something that writes what it holds when the loop's turn ends (`WriteBatch.writeAtEndOfTurn`).
protocol EndOfTurnWriter: AnyObject {
    func writeAtEndOfTurn()
}
