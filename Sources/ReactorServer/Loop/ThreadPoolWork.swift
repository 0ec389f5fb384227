import CUV

extension EventLoop {
    /// Runs `work` on libuv's threadpool, then `completion` with its result on the loop thread.
    /// For what would block the loop: file writes, fsync, reading a journal back.
    func runInThreadPool<Output: Sendable>(_ work: @escaping @Sendable () -> Output, then completion: @escaping (Output) -> Void) {
        precondition(isCurrent, "threadpool work is queued from the loop thread")
        let output = ThreadPoolOutput<Output>()
        let job = ThreadPoolJob(run: { output.value = work() }, finish: { completion(output.value!) })
        let request = LoopRequest<uv_work_t>.make(holding: job)
        let status = uv_queue_work(loop, request, { request in
            LoopRequest.owner(of: request, as: ThreadPoolJob.self).run()
        }, { request, _ in
            LoopRequest.finish(request, as: ThreadPoolJob.self).finish()
        })
        precondition(status == 0, "uv_queue_work fails only for a missing callback")
    }
}

/// One threadpool job: what runs on a worker, and what runs back on the loop after it.
/// @unchecked Sendable: `run` is called on one worker thread, then `finish` on the loop thread, in
/// that order, which libuv's queue guarantees (and makes what `run` wrote visible to `finish`).
private final class ThreadPoolJob: @unchecked Sendable {
    let run: () -> Void
    let finish: () -> Void

    init(run: @escaping () -> Void, finish: @escaping () -> Void) {
        self.run = run
        self.finish = finish
    }
}

/// Where a worker leaves its result for the loop.
/// @unchecked Sendable: written once by the worker before the loop reads it (see ThreadPoolJob).
private final class ThreadPoolOutput<Value>: @unchecked Sendable {
    var value: Value?
}
