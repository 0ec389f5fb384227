import CUV
import Dispatch
import Foundation
import Reactor
import Synchronization

/// A libuv loop run by one thread, and the executor of the core it hosts.
///
/// The loop thread owns every handle on it; other threads reach it only through `enqueue`, which
/// appends to an inbox and wakes the loop with `uv_async_send`, the one libuv call that is safe from
/// any thread. Work started on the loop thread runs there directly: no hop, no lock.
///
/// @unchecked Sendable: the uv handles are touched only on the loop thread; `owner` never changes
/// after `init`, and the inbox is locked.
public final class EventLoop: CoreExecutor, @unchecked Sendable {
    let loop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup = LoopHandle<uv_async_t>()
    private let inbox = Locked<[@Sendable () -> Void]>([])
    private let owner: pthread_t
    /// Every connection on the loop reads into this one buffer: reads are handled synchronously, so
    /// no connection needs a read buffer of its own.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// What connections write during a turn, sent just before the loop waits again.
    let writeBatch: WriteBatch
    /// Lines logged to standard error on this loop, written at the end of each turn.
    let standardErrorLog: LogOutput
    /// Where TLS connections decrypt what they read, and where their ciphertext passes on its way to
    /// the socket: one of each for the loop, as with `readBuffer`.
    let tlsPlaintextBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    let tlsCiphertextBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    /// Creates a loop owned by the calling thread, which must be the one that calls `run()`.
    public init() throws(UVError) {
        // A write to a peer that reset its connection must fail with EPIPE, not kill the process:
        // libuv leaves SIGPIPE to the application, and one client closing at the wrong moment would
        // otherwise take the server down.
        signal(SIGPIPE, SIG_IGN)
        // Likewise a journal write past the file-size limit (RLIMIT_FSIZE) must fail with EFBIG,
        // which the journal reports as a disk error, rather than end the process.
        signal(SIGXFSZ, SIG_IGN)
        owner = pthread_self()
        loop = .allocate(capacity: 1)
        try UVError.check(uv_loop_init(loop), "uv_loop_init")
        // The loop's first prepare handle, so the last to run in each turn (see WriteBatch).
        writeBatch = WriteBatch(loop: loop)
        standardErrorLog = LogOutput(descriptor: STDERR_FILENO, batch: writeBatch)
        try UVError.check(uv_async_init(loop, wakeup.pointer) { handle in
            LoopHandle.owner(of: handle, as: EventLoop.self).runInbox()
        }, "uv_async_init")
        wakeup.attach(to: self)
    }

    /// Starts a thread that creates a loop and runs it until `stop()`; returns once the loop exists.
    public static func startThread(name: String = "reactor.loop") throws -> EventLoop {
        let created = Locked<Result<EventLoop, UVError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread {
            let result = Result { () throws(UVError) in try EventLoop() }
            created.withLock { $0 = result }
            ready.signal()
            if case .success(let loop) = result { loop.run() }
        }
        thread.name = name
        thread.start()
        ready.wait()
        return try created.withLock { $0! }.get()
    }

    deinit {
        // A loop whose thread ended has closed its handles in `run()`; uv_loop_close frees the rest.
        uv_loop_close(loop)
        loop.deallocate()
        wakeup.deallocate()  // closed by `run`, which closes every handle left
        readBuffer.deallocate()
        tlsPlaintextBuffer.deallocate()
        tlsCiphertextBuffer.deallocate()
        writeBatch.deallocate()
    }

    public var isCurrent: Bool {
        pthread_equal(owner, pthread_self()) != 0
    }

    /// The loop's time in milliseconds, as of the start of this turn of the loop (for deadlines;
    /// `MonotonicClock` measures durations).
    var now: UInt64 { uv_now(loop) }

    public func enqueue(_ job: @escaping @Sendable () -> Void) {
        inbox.withLock { $0.append(job) }
        uv_async_send(wakeup.pointer)
    }

    /// Runs the loop on the owner thread until `stop()`, then closes every handle still open.
    public func run() {
        precondition(isCurrent, "an EventLoop runs on the thread that created it")
        uv_run(loop, UV_RUN_DEFAULT)
        runInbox()
        writeBatch.flush()
        standardErrorLog.write()
        uv_walk(loop, { handle, _ in
            if uv_is_closing(handle) == 0 { uv_close(handle, nil) }
        }, nil)
        uv_run(loop, UV_RUN_DEFAULT)
        standardErrorLog.write()
        writeBatch.discard()
    }

    /// Makes `run()` return after the current iteration. Safe from any thread.
    public func stop() {
        enqueue { [self] in uv_stop(loop) }
    }

    private func runInbox() {
        let jobs = inbox.withLock { jobs in
            defer { jobs.removeAll(keepingCapacity: true) }
            return jobs
        }
        for job in jobs { job() }
    }
}

/// A libuv call that failed, with libuv's name and message for the code.
public struct UVError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let operation: String

    public var description: String {
        "\(operation): \(String(cString: uv_err_name(code))) (\(String(cString: uv_strerror(code))))"
    }

    static func check(_ code: Int32, _ operation: String) throws(UVError) {
        if code < 0 { throw UVError(code: code, operation: operation) }
    }
}
