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
    /// The rest of a line a write cut short (the output took part of it), written before anything
    /// else: lines are lost whole, never merged with the next.
    private var unfinishedLine: [UInt8] = []

    /// A descriptor that fails (closed, a full disk, or a pipe nobody reads, made non-blocking by
    /// `makeNonBlockingIfItCanStall`) loses the lines rather than holding the loop: logging never
    /// stops the server.
    private func write(_ bytes: UnsafeRawBufferPointer) {
        if !unfinishedLine.isEmpty {
            let written = unfinishedLine.withUnsafeBytes { writeSome($0) }
            unfinishedLine.removeFirst(written)
            guard unfinishedLine.isEmpty else {
                droppedBytes += bytes.count
                return
            }
        }
        let written = writeSome(bytes)
        guard written == bytes.count else {
            // Cut inside a line: the rest of it waits; the lines after it are lost.
            let newline = UInt8(ascii: "\n")
            var end = written
            if written > 0 && bytes[written - 1] != newline {
                end = bytes[written...].firstIndex(of: newline).map { $0 + 1 } ?? bytes.count
                unfinishedLine = Array(bytes[written..<end])
            }
            droppedBytes += bytes.count - end
            return
        }
        if droppedBytes > 0 {
            let dropped = droppedBytes
            droppedBytes = 0
            onDropsEnded?(dropped)
        }
    }

    /// Writes what the descriptor takes of `bytes`; how many it took.
    private func writeSome(_ bytes: UnsafeRawBufferPointer) -> Int {
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
        return offset
    }

    /// Gives standard error, when it is a pipe (a supervisor's, a log shipper's), a non-blocking
    /// description of its own: its reader can stop reading, and a blocking write would then stop
    /// the thread that logs, the loop's included. Its own, reopened through `/proc`, so that the
    /// pipe's other writers (the shell, other processes, standard output after `2>&1`) keep theirs
    /// as it was, during this process and after. A socket (journald's) cannot be reopened and is
    /// left as it is, as are a terminal and a file.
    public static func makeNonBlockingIfItCanStall() {
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return }
        let own = open("/proc/self/fd/\(STDERR_FILENO)", O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard own >= 0 else { return }
        _ = dup2(own, STDERR_FILENO)
        close(own)
    }
}
