import CUV

/// Calls back after a delay, once or repeatedly, on the loop thread. Does not keep the loop alive
/// by itself; stopped when released.
final class LoopTimer {
    private let handle = LoopHandle<uv_timer_t>()
    private let callback: () -> Void

    init(loop: EventLoop, callback: @escaping () -> Void) {
        self.callback = callback
        uv_timer_init(loop.loop, handle.pointer)
        handle.attach(to: self)
        handle.unref()
    }

    /// Calls back after `milliseconds`, and then every `repeatMilliseconds` if that is not 0.
    /// Starting a started timer restarts it.
    func start(after milliseconds: UInt64, repeat repeatMilliseconds: UInt64 = 0) {
        uv_timer_start(handle.pointer, { handle in
            LoopHandle.owner(of: handle, as: LoopTimer.self).callback()
        }, milliseconds, repeatMilliseconds)
    }

    func stop() {
        uv_timer_stop(handle.pointer)
    }

    deinit {
        handle.close()
    }
}
