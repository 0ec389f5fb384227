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
public final class LogOutput: EndOfTurnWriter {
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

    /// Bytes of lines lost since the output last took them all (`write`).
    private(set) var droppedBytes = 0
    /// Told how many bytes were lost, once the output takes lines again after losing some.
    var onDropsEnded: ((Int) -> Void)?

    /// A descriptor that fails (closed, a full disk, or a pipe nobody reads, made non-blocking by
    /// `makeNonBlockingIfItCanStall`) loses the lines rather than holding the loop: logging never
    /// stops the server.
    private func write(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                droppedBytes += bytes.count - offset
                return
            }
        }
        if droppedBytes > 0 {
            let dropped = droppedBytes
            droppedBytes = 0
            onDropsEnded?(dropped)
        }
    }

    /// Makes standard error non-blocking when it is a pipe or a socket (a supervisor's, journald's):
    /// their reader can stop reading, and a blocking write would then stop the thread that logs,
    /// the loop's included. A terminal or a file is left as it is: a terminal's description is
    /// often standard input's too, which must stay blocking for the shell.
    public static func makeNonBlockingIfItCanStall() {
        let descriptor = STDERR_FILENO
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFIFO || kind == S_IFSOCK else { return }
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
    }
}
