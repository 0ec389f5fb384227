import Glibc

/// Log lines the loop thread writes to standard error, held in one fixed buffer and written with
/// one `write` at the end of the loop's turn (`EndOfTurnWriter`), or sooner when the buffer has no
/// room: for the lines of every request and every event, which written one by one would cost a
/// system call each.
///
/// A line held here reaches the file at most one turn of the loop after it was logged, so it may
/// follow a line another part of the process wrote meanwhile straight through its logger. Most of
/// those are the loop thread's own, written between turns; one from another thread, into a pipe,
/// could land between two parts of a write larger than the pipe's atomic size (4 KiB).
final class LogOutput: EndOfTurnWriter {
    private let descriptor: Int32
    private unowned let batch: WriteBatch
    private let storage: UnsafeMutableRawBufferPointer
    private var used = 0
    /// Whether the batch will call `writeAtEndOfTurn` in this turn.
    private var isQueued = false

    init(descriptor: Int32, batch: WriteBatch, capacity: Int = 32 * 1024) {
        self.descriptor = descriptor
        self.batch = batch
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        storage.deallocate()
    }

    /// Holds the bytes `fill` writes, at most `maximum` of them (whole lines), for the end of the
    /// turn; `fill` returns how many it wrote. More than the whole buffer goes out at once.
    @inline(__always)
    func append(atMost maximum: Int, _ fill: (UnsafeMutableRawPointer) -> Int) {
        if maximum > storage.count - used {
            write()
            if maximum > storage.count {
                let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: maximum, alignment: 16)
                defer { scratch.deallocate() }
                write(UnsafeRawBufferPointer(start: scratch.baseAddress!, count: fill(scratch.baseAddress!)))
                return
            }
        }
        used += fill(storage.baseAddress! + used)
        if !isQueued {
            isQueued = true
            batch.writeAtEndOfTurn(self)
        }
    }

    func writeAtEndOfTurn() {
        isQueued = false
        write()
    }

    /// Writes what is held.
    func write() {
        guard used > 0 else { return }
        write(UnsafeRawBufferPointer(start: storage.baseAddress!, count: used))
        used = 0
    }

    /// A descriptor that fails (closed, or a full disk) loses the lines rather than holding the
    /// loop: logging never stops the server.
    private func write(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
