import Glibc

/// Log lines the loop thread writes to standard error, held and written with one `write` at the end
/// of the loop's turn (`EndOfTurnWriter`), or sooner when they fill the buffer: for the lines of
/// every request and every event, which written one by one would cost a system call each.
///
/// A line held here reaches the file at most one turn of the loop after it was logged, so it may
/// follow a line another part of the process wrote meanwhile straight through its logger.
final class LogOutput: EndOfTurnWriter {
    private let descriptor: Int32
    private unowned let batch: WriteBatch
    private var held: [UInt8] = []
    /// Whether the batch will call `writeAtEndOfTurn` in this turn.
    private var isQueued = false
    /// Written as soon as this much is held.
    private let capacity: Int

    init(descriptor: Int32, batch: WriteBatch, capacity: Int = 32 * 1024) {
        self.descriptor = descriptor
        self.batch = batch
        self.capacity = capacity
    }

    /// Holds what `fill` appends (whole lines, each ending in a newline) for the end of the turn.
    @inline(__always)
    func append(_ fill: (inout [UInt8]) -> Void) {
        fill(&held)
        if held.count >= capacity {
            write()
        } else if !isQueued {
            isQueued = true
            batch.writeAtEndOfTurn(self)
        }
    }

    func writeAtEndOfTurn() {
        isQueued = false
        write()
    }

    /// Writes what is held. A descriptor that fails (closed, or a full disk) loses those lines
    /// rather than holding the loop: logging never stops the server.
    func write() {
        guard !held.isEmpty else { return }
        held.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
        }
        held.removeAll(keepingCapacity: true)
    }
}
